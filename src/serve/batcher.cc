#include "serve/batcher.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <memory>
#include <numeric>

namespace sdx::serve {
namespace {

std::string shape_text(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

// Bytes of one row (one index of dim 0) of a dense tensor.
size_t row_bytes(const Value& v) {
  const int64_t rows = v.shape()[0];
  return rows > 0 ? v.nbytes() / static_cast<size_t>(rows) : 0;
}

// A deadline this far off is no deadline (and is never handed to wait_until, where adding it to a clock
// offset could overflow).
bool far(Batcher::Deadline d) { return d >= std::chrono::system_clock::now() + std::chrono::hours(24 * 365); }

}  // namespace

Batcher::Batcher(Runner run, Options options)
    : run_(std::move(run)),
      options_(std::move(options)),
      flush_rows_(options_.preferred_batch_sizes.empty()
                      ? options_.max_batch_size
                      : std::min(options_.max_batch_size, options_.preferred_batch_sizes.back())),
      worker_([this] { work(); }) {}

Batcher::~Batcher() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  work_cv_.notify_all();
  worker_.join();
}

bool Batcher::batchable(const Session::Feeds& feeds) const {
  if (feeds.empty()) return false;
  int64_t rows = -1;
  for (const auto& [name, v] : feeds) {
    if (!v.is_tensor() || v.shape().empty() || (v.data() == nullptr && v.element_count() != 0)) return false;
    if (rows >= 0 && v.shape()[0] != rows) return false;
    rows = v.shape()[0];
  }
  return rows >= 1 && rows <= options_.max_batch_size;
}

int64_t Batcher::run_rows(int64_t rows) const {
  if (!options_.pad_to_preferred) return rows;
  for (int64_t size : options_.preferred_batch_sizes)  // ascending
    if (size >= rows) return size;
  return std::max(rows, options_.max_batch_size);
}

Batcher::Outcome Batcher::submit(const Session::Feeds& feeds, const std::vector<std::string>& output_names,
                                 Deadline deadline) {
  Request r;
  r.feeds = &feeds;
  r.output_names = &output_names;
  r.order.resize(feeds.size());
  std::iota(r.order.begin(), r.order.end(), size_t{0});
  std::sort(r.order.begin(), r.order.end(), [&](size_t a, size_t b) { return feeds[a].first < feeds[b].first; });
  for (size_t i : r.order) {
    const Value& v = feeds[i].second;
    r.key += feeds[i].first + '\0' + std::to_string(static_cast<int>(v.element_type()));
    for (size_t d = 1; d < v.shape().size(); ++d) r.key += ',' + std::to_string(v.shape()[d]);
    r.key += '\0';
  }
  r.key += '\1';
  for (const std::string& n : output_names) r.key += n + '\0';
  r.rows = feeds.front().second.shape()[0];
  r.deadline = deadline;
  r.enqueued = Clock::now();

  std::unique_lock<std::mutex> lock(mutex_);
  if (stop_) {
    r.outcome.status = Status(StatusCode::kFailedPrecondition, "the model's batcher has stopped");
    return std::move(r.outcome);
  }
  pending_.push_back(&r);
  pending_rows_ += r.rows;
  // Wake the worker only when it has something to decide: a first request starts its delay, and enough
  // rows may fill a batch. Every other arrival would wake it to find the batch still short (a context
  // switch per request); it also looks again when its delay runs out or when a batch ends.
  if (pending_.size() == 1 || pending_rows_ >= flush_rows_) work_cv_.notify_one();
  if (!far(deadline)) {
    r.taken_cv.wait_until(lock, deadline, [&] { return r.taken; });
    if (!r.taken) {  // the deadline passed while it waited for a batch: leave the queue without running
      pending_.erase(std::find(pending_.begin(), pending_.end(), &r));
      pending_rows_ -= r.rows;
      work_cv_.notify_one();  // the oldest request may have changed
      r.outcome.expired = true;
      r.outcome.queue_delay = std::chrono::duration<double>(Clock::now() - r.enqueued).count();
      return std::move(r.outcome);
    }
  }
  lock.unlock();
  const std::shared_ptr<Signal> signal = r.signal;
  std::unique_lock<std::mutex> wait(signal->mutex);
  signal->cv.wait(wait, [&] { return signal->done; });
  return std::move(r.outcome);
}

int64_t Batcher::ready_rows() const {
  const Request* front = pending_.front();
  int64_t rows = 0;
  for (const Request* r : pending_)
    if (r->key == front->key && rows + r->rows <= options_.max_batch_size) rows += r->rows;
  return rows;
}

void Batcher::work() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    work_cv_.wait(lock, [&] { return stop_ || !pending_.empty(); });
    if (stop_ && pending_.empty()) return;
    // Wait for the oldest request's kind to fill up, or for the oldest request's delay to run out. A
    // request leaving on its deadline, or a new one, wakes this wait; the front is looked at again each time.
    bool go = false;
    while (!go && !pending_.empty()) {
      const Clock::time_point flush_at = pending_.front()->enqueued + options_.max_queue_delay;
      go = stop_ || ready_rows() >= flush_rows_ || Clock::now() >= flush_at;
      if (!go) work_cv_.wait_until(lock, flush_at);
    }
    if (pending_.empty()) continue;

    // Take the oldest request's kind in arrival order, up to max_batch_size rows; a request whose deadline
    // has passed is answered `expired` instead of joining.
    const std::string key = pending_.front()->key;
    const auto now = std::chrono::system_clock::now();
    std::vector<Request*> batch;
    int64_t rows = 0;
    for (auto it = pending_.begin(); it != pending_.end();) {
      Request* r = *it;
      if (r->key == key && r->deadline < now) {
        const std::shared_ptr<Signal> signal = r->signal;  // r may be gone once it is complete
        r->taken = true;
        r->outcome.expired = true;
        r->outcome.queue_delay = std::chrono::duration<double>(Clock::now() - r->enqueued).count();
        r->taken_cv.notify_one();  // under mutex_: its caller cannot leave the deadline wait before we let go
        pending_rows_ -= r->rows;
        it = pending_.erase(it);
        complete(signal);
      } else if (r->key == key && rows + r->rows <= options_.max_batch_size) {
        r->taken = true;
        r->taken_cv.notify_one();  // stop its deadline wait: it is answered with the batch now
        rows += r->rows;
        batch.push_back(r);
        pending_rows_ -= r->rows;
        it = pending_.erase(it);
      } else {
        ++it;
      }
    }
    if (batch.empty()) continue;
    lock.unlock();
    try {
      run_batch(batch);  // writes each request's outcome: they are taken, so only this thread touches them
    } catch (const std::exception& e) {  // memory running out while joining or splitting: fail the batch only
      for (Request* r : batch) {
        r->outcome = Outcome();
        r->outcome.status = Status(StatusCode::kInternal, std::string("batched run: ") + e.what());
      }
    }
    // Outside mutex_: each caller wakes on its own Signal. Copies of the Signals first: a request is freed
    // by its caller as soon as its Signal is done.
    std::vector<std::shared_ptr<Signal>> signals;
    signals.reserve(batch.size());
    for (Request* r : batch) signals.push_back(r->signal);
    for (const std::shared_ptr<Signal>& signal : signals) complete(signal);
    lock.lock();
  }
}

void Batcher::complete(const std::shared_ptr<Signal>& signal) {
  {
    std::lock_guard<std::mutex> lock(signal->mutex);
    signal->done = true;
  }
  signal->cv.notify_one();  // the caller holds its own reference: the Signal outlives this call
}

void Batcher::run_batch(const std::vector<Request*>& batch) {
  const Clock::time_point start = Clock::now();
  int64_t total = 0;
  for (const Request* r : batch) total += r->rows;
  const int64_t padded = run_rows(total);  // >= total
  auto finish = [&](const Status& st, double run) {
    for (size_t i = 0; i < batch.size(); ++i) {
      Outcome& o = batch[i]->outcome;
      o.reports_batch = i == 0;
      o.batch_rows = total;
      o.run_rows = padded;
      o.queue_delay = std::chrono::duration<double>(start - batch[i]->enqueued).count();
      o.run = run;
      if (!st.is_ok()) {
        o.status = st;
        o.outputs.clear();
      }
    }
  };

  if (batch.size() == 1 && padded == total) {  // alone and unpadded: its own feeds, its outputs as they are
    Result<std::vector<Value>> out = run_(*batch[0]->feeds, *batch[0]->output_names);
    const double run = std::chrono::duration<double>(Clock::now() - start).count();
    if (out.is_ok()) batch[0]->outcome.outputs = std::move(out).value();
    finish(out.is_ok() ? Status::ok() : out.status(), run);
    return;
  }

  // Concatenate each input along dim 0, in the first request's feed order (the others hold the same names,
  // dtypes and trailing dims: their key matched), then pad with copies of the first row up to `padded`.
  const Request& first = *batch[0];
  Session::Feeds feeds;
  std::vector<std::unique_ptr<unsigned char[]>> buffers;
  for (size_t f = 0; f < first.feeds->size(); ++f) {
    const Value& proto = (*first.feeds)[f].second;
    const std::string& name = (*first.feeds)[f].first;
    const size_t rb = row_bytes(proto);
    buffers.push_back(std::make_unique<unsigned char[]>(std::max<size_t>(1, rb * static_cast<size_t>(padded))));
    unsigned char* dst = buffers.back().get();
    for (const Request* r : batch) {
      const Value* v = nullptr;
      for (const auto& [n, value] : *r->feeds)
        if (n == name) v = &value;
      const size_t bytes = rb * static_cast<size_t>(r->rows);
      if (bytes) std::memcpy(dst, v->data(), bytes);
      dst += bytes;
    }
    for (int64_t p = total; p < padded && rb; ++p, dst += rb) std::memcpy(dst, buffers.back().get(), rb);
    std::vector<int64_t> dims = proto.shape();
    dims[0] = padded;
    Result<Value> joined = Value::borrow(
        {proto.element_type(), dims.data(), static_cast<int>(dims.size()), rb ? buffers.back().get() : nullptr});
    if (!joined.is_ok()) return finish(joined.status().with_context("batching input '" + name + "'"), 0);
    feeds.emplace_back(name, std::move(joined).value());  // borrows buffers.back(), alive until the run ends
  }
  Result<std::vector<Value>> out = run_(feeds, *first.output_names);
  const double run = std::chrono::duration<double>(Clock::now() - start).count();
  if (!out.is_ok()) return finish(out.status(), run);

  // Each request's rows of every output.
  const std::vector<Value>& values = out.value();
  for (size_t k = 0; k < values.size(); ++k) {
    const Value& v = values[k];
    const std::string name = k < first.output_names->size() ? (*first.output_names)[k] : std::to_string(k);
    if (!v.is_tensor() || v.shape().empty() || v.shape()[0] != padded || (v.data() == nullptr && v.nbytes() != 0))
      return finish(Status(StatusCode::kFailedPrecondition,
                           "batched run of " + std::to_string(padded) + " rows: output '" + name + "' has shape " +
                               (v.is_tensor() ? shape_text(v.shape()) : std::string("(not a tensor)")) +
                               ", not a dense tensor with " + std::to_string(padded) +
                               " rows; the model's outputs cannot be split by request"),
                    run);
    const size_t rb = row_bytes(v);
    const auto* base = static_cast<const unsigned char*>(v.data());
    int64_t offset = 0;
    for (Request* r : batch) {
      std::vector<int64_t> dims = v.shape();
      dims[0] = r->rows;
      Result<Value> slice = Value::copy_of(
          {v.element_type(), dims.data(), static_cast<int>(dims.size()), rb ? base + rb * offset : nullptr});
      if (!slice.is_ok()) return finish(slice.status().with_context("splitting output '" + name + "'"), run);
      r->outcome.outputs.push_back(std::move(slice).value());
      offset += r->rows;
    }
  }
  finish(Status::ok(), run);
}

}  // namespace sdx::serve
