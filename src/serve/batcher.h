// Dynamic batching for one loaded model version, as Triton's dynamic batcher does it: concurrent requests
// with compatible inputs wait a little for one another, are concatenated along dimension 0 into one run,
// and each gets back its own rows of every output.
//
//   serve::Batcher batcher([session](const Session::Feeds& f, const std::vector<std::string>& names) {
//                            return session->run(f, names);
//                          },
//                          {/*max_batch_size=*/16, /*preferred=*/{8, 16}, std::chrono::microseconds(500)});
//   if (batcher.batchable(feeds)) {
//     serve::Batcher::Outcome o = batcher.submit(feeds, names, ctx->deadline());   // blocks until answered
//     if (o.expired) ...DEADLINE_EXCEEDED...; else if (!o.status.is_ok()) ...; else use o.outputs
//   }
//
// Compatibility: a request is batchable when every feed is a dense (non-string) tensor of rank >= 1 and all
// feeds share the same leading dimension (its rows), between 1 and max_batch_size. Two requests batch
// together when they give the same input names with the same dtypes and the same non-leading dimensions,
// and ask for the same outputs; others wait for a batch of their own kind. A caller runs a request that is
// not batchable on its own, outside the batcher.
//
// Padding (Options::pad_to_preferred, config.json's "pad_to_preferred_batch_size"): a formed batch of R rows
// runs as P rows, P the smallest preferred size >= R (max_batch_size when none is), the P - R extra rows
// copies of the batch's first row, whose outputs are dropped. The session then sees only the preferred
// sizes and replays a frozen plan per size instead of planning for every R. Like batching itself, it is
// right only for models whose rows are independent (row i of every output depends on row i of the inputs
// alone), which dynamic batching already assumes, as Triton's does.
//
// Scheduling: one worker thread per batcher, which runs one batch at a time. It sleeps until a request
// arrives (an arrival wakes it only when it is the first or the rows waiting may fill a batch), then waits (on a condition variable, no polling) until the oldest request's kind has enough rows
// for the largest preferred size (max_batch_size when there are none) or the oldest request has waited
// max_queue_delay, and runs the oldest request's kind, in arrival order, up to max_batch_size rows. A
// request whose deadline passes before it is taken into a batch leaves the queue and is answered `expired`
// without running; one taken into a batch is answered with the batch. A batch's error (or an output whose
// leading dimension is not the batch's rows) goes to every request in it. A batch of one request that needs no
// padding runs on that request's own feeds, without copies.
//
// Thread-safe: the queue and each request's `taken` are guarded by one mutex. A request's outcome is written
// by the worker before it marks the request's own Signal done under the Signal's mutex, and read by its
// caller after it sees done under it. Each caller waits on its own Signal, so a batch's end wakes its
// callers without them queueing on the batcher's mutex; the worker holds a reference to each Signal
// while it notifies, so a caller that returns (and frees its request) at once frees nothing in use.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "sdx/session.h"
#include "sdx/status.h"
#include "sdx/tensor.h"

namespace sdx::serve {

class Batcher {
 public:
  using Runner = std::function<Result<std::vector<Value>>(const Session::Feeds&, const std::vector<std::string>&)>;
  using Deadline = std::chrono::system_clock::time_point;  // time_point::max(): none

  struct Options {
    int64_t max_batch_size = 1;
    std::vector<int64_t> preferred_batch_sizes;  // ascending; a batch runs early once it reaches the largest
    std::chrono::microseconds max_queue_delay{0};
    bool pad_to_preferred = false;  // run each batch at a preferred size (see above)
  };

  struct Outcome {
    Status status;               // the batch's run (or slicing) status
    std::vector<Value> outputs;  // this request's rows of each requested output
    bool expired = false;        // its deadline passed before it was taken into a batch; it did not run
    bool reports_batch = false;  // the first request of its batch: counts the batch in the metrics
    int64_t batch_rows = 0;      // rows of the batch it ran in (the requests' rows, padding not counted)
    int64_t run_rows = 0;        // rows the session ran: batch_rows plus any padding
    double queue_delay = 0;      // seconds from submit to its batch's start
    double run = 0;              // seconds of the batch's run
  };

  Batcher(Runner run, Options options);
  ~Batcher();  // waits for the batch running; no caller may be inside submit()
  Batcher(const Batcher&) = delete;
  Batcher& operator=(const Batcher&) = delete;

  const Options& options() const { return options_; }

  bool batchable(const Session::Feeds& feeds) const;
  // The rows a batch of `rows` rows runs as: `rows` without padding, else the smallest preferred size that
  // holds them, or max_batch_size.
  int64_t run_rows(int64_t rows) const;
  // Queues a batchable request and blocks until it is answered. `feeds` must stay alive until then.
  Outcome submit(const Session::Feeds& feeds, const std::vector<std::string>& output_names, Deadline deadline);

 private:
  using Clock = std::chrono::steady_clock;
  struct Signal {  // a request's completion
    std::mutex mutex;
    std::condition_variable cv;
    bool done = false;  // guarded by mutex
  };
  static void complete(const std::shared_ptr<Signal>& signal);
  struct Request {
    const Session::Feeds* feeds;
    const std::vector<std::string>* output_names;
    std::vector<size_t> order;  // feeds' indices sorted by input name
    std::string key;            // what must match to batch: names, dtypes, non-leading dims, outputs
    int64_t rows = 0;
    Deadline deadline;
    Clock::time_point enqueued;
    bool taken = false;                // guarded by mutex_
    std::condition_variable taken_cv;  // with mutex_: a caller with a deadline waits for `taken`
    std::shared_ptr<Signal> signal = std::make_shared<Signal>();
    Outcome outcome;
  };

  void work();
  // The rows of the oldest request's kind that the next batch would take (at most max_batch_size).
  int64_t ready_rows() const;
  void run_batch(const std::vector<Request*>& batch);

  const Runner run_;
  const Options options_;
  const int64_t flush_rows_;  // the largest preferred size, or max_batch_size
  std::mutex mutex_;          // guards pending_, pending_rows_, stop_, and each request's taken
  std::condition_variable work_cv_;
  std::deque<Request*> pending_;  // arrival order; the requests live on their callers' stacks
  int64_t pending_rows_ = 0;      // rows of pending_, every kind
  bool stop_ = false;
  std::thread worker_;
};

}  // namespace sdx::serve
