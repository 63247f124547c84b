#include "serve/batcher.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

namespace sdx::serve {
namespace {
using namespace std::chrono_literals;

// A float tensor [rows, cols] whose element (r, c) is base + r * cols + c.
Value matrix(int64_t rows, int64_t cols, float base) {
  std::vector<float> data(static_cast<size_t>(rows * cols));
  for (size_t i = 0; i < data.size(); ++i) data[i] = base + static_cast<float>(i);
  const std::vector<int64_t> dims = {rows, cols};
  return Value::copy_of({ElementType::kFloat32, dims.data(), 2, data.data()}).value();
}

std::vector<float> floats(const Value& v) {
  const auto* p = static_cast<const float*>(v.data());
  return std::vector<float>(p, p + v.element_count());
}

// A fake model: y = x * 2 (same shape), and records the rows of each run.
struct Recorder {
  std::mutex mutex;
  std::vector<int64_t> runs;
  Batcher::Runner runner(Status fail = Status::ok()) {
    return [this, fail](const Session::Feeds& feeds, const std::vector<std::string>&) -> Result<std::vector<Value>> {
      {
        std::lock_guard<std::mutex> lock(mutex);
        runs.push_back(feeds[0].second.shape()[0]);
      }
      if (!fail.is_ok()) return fail;
      const Value& x = feeds[0].second;
      std::vector<float> y = floats(x);
      for (float& f : y) f *= 2;
      return std::vector<Value>{
          Value::copy_of({ElementType::kFloat32, x.shape().data(), static_cast<int>(x.shape().size()), y.data()})
              .value()};
    };
  }
};

const Batcher::Deadline kNone = Batcher::Deadline::max();

// Submits each feeds from its own thread at once; returns the outcomes in order.
std::vector<Batcher::Outcome> submit_all(Batcher* b, const std::vector<Session::Feeds>& feeds,
                                         Batcher::Deadline deadline = kNone) {
  std::vector<Batcher::Outcome> out(feeds.size());
  const std::vector<std::string> names = {"y"};
  std::vector<std::thread> threads;
  for (size_t i = 0; i < feeds.size(); ++i)
    threads.emplace_back([&, i] { out[i] = b->submit(feeds[i], names, deadline); });
  for (auto& t : threads) t.join();
  return out;
}

TEST(BatcherTest, ConcatenatesAndSlicesExactly) {
  Recorder rec;
  Batcher b(rec.runner(), {8, {6}, 2s});  // flushes at 6 rows long before the delay
  std::vector<Session::Feeds> feeds;
  for (int i = 0; i < 3; ++i) feeds.push_back({{"x", matrix(i + 1, 3, 100.0f * i)}});  // 1 + 2 + 3 rows
  const auto start = std::chrono::steady_clock::now();
  std::vector<Batcher::Outcome> out = submit_all(&b, feeds);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
  ASSERT_EQ(rec.runs, (std::vector<int64_t>{6}));
  int reporters = 0;
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(out[i].status.is_ok()) << out[i].status.message();
    ASSERT_EQ(out[i].outputs.size(), 1u);
    EXPECT_EQ(out[i].outputs[0].shape(), (std::vector<int64_t>{i + 1, 3}));
    std::vector<float> want = floats(feeds[i][0].second);
    for (float& f : want) f *= 2;
    EXPECT_EQ(floats(out[i].outputs[0]), want);
    EXPECT_EQ(out[i].batch_rows, 6);
    reporters += out[i].reports_batch;
  }
  EXPECT_EQ(reporters, 1);
}

TEST(BatcherTest, IncompatibleRequestsRunInSeparateBatches) {
  Recorder rec;
  Batcher b(rec.runner(), {8, {}, 50ms});
  // Different trailing dims: two kinds, one batch each (the delay flushes both).
  std::vector<Session::Feeds> feeds = {{{"x", matrix(1, 3, 0)}}, {{"x", matrix(1, 4, 10)}}, {{"x", matrix(2, 3, 20)}}};
  std::vector<Batcher::Outcome> out = submit_all(&b, feeds);
  for (const auto& o : out) ASSERT_TRUE(o.status.is_ok()) << o.status.message();
  EXPECT_EQ(out[0].batch_rows + out[2].batch_rows, 6);  // 0 and 2 together (3 rows), 1 alone
  EXPECT_EQ(out[1].batch_rows, 1);
  EXPECT_EQ(floats(out[1].outputs[0]), (std::vector<float>{20, 22, 24, 26}));
  EXPECT_EQ(out[2].outputs[0].shape(), (std::vector<int64_t>{2, 3}));
}

TEST(BatcherTest, Batchable) {
  Recorder rec;
  Batcher b(rec.runner(), {4, {}, 0us});
  EXPECT_TRUE(b.batchable({{"x", matrix(4, 2, 0)}}));
  EXPECT_FALSE(b.batchable({{"x", matrix(5, 2, 0)}}));                          // above max_batch_size
  EXPECT_FALSE(b.batchable({{"x", matrix(0, 2, 0)}}));                          // no rows
  EXPECT_FALSE(b.batchable({{"x", matrix(2, 2, 0)}, {"z", matrix(3, 2, 0)}}));  // leading dims differ
  EXPECT_FALSE(b.batchable({{"s", Value::strings({"a"}, {1}).value()}}));       // strings
  const float one = 1;
  EXPECT_FALSE(b.batchable({{"x", Value::copy_of({ElementType::kFloat32, nullptr, 0, &one}).value()}}));  // scalar
  EXPECT_FALSE(b.batchable({}));
}

TEST(BatcherTest, NeverExceedsMaxBatchSize) {
  Recorder rec;
  Batcher b(rec.runner(), {4, {}, 20ms});
  std::vector<Session::Feeds> feeds;
  for (int i = 0; i < 10; ++i) feeds.push_back({{"x", matrix(1, 2, static_cast<float>(i))}});
  std::vector<Batcher::Outcome> out = submit_all(&b, feeds);
  int64_t total = 0;
  for (int64_t rows : rec.runs) {
    EXPECT_LE(rows, 4);
    total += rows;
  }
  EXPECT_EQ(total, 10);
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(out[i].status.is_ok());
    EXPECT_EQ(floats(out[i].outputs[0]), (std::vector<float>{2.0f * i, 2.0f * i + 2}));
  }
}

TEST(BatcherTest, DelayFlushesAnIncompleteBatch) {
  Recorder rec;
  Batcher b(rec.runner(), {16, {}, 30ms});
  const auto start = std::chrono::steady_clock::now();
  std::vector<Batcher::Outcome> out = submit_all(&b, {{{"x", matrix(1, 2, 0)}}});
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(out[0].status.is_ok());
  EXPECT_GE(took, 30ms);
  EXPECT_LT(took, 2s);
  EXPECT_GE(out[0].queue_delay, 0.029);
  EXPECT_EQ(rec.runs, (std::vector<int64_t>{1}));
}

TEST(BatcherTest, AnErrorReachesEveryRequest) {
  Recorder rec;
  Batcher b(rec.runner(Status(StatusCode::kInternal, "the model broke")), {8, {4}, 2s});
  std::vector<Session::Feeds> feeds(4, Session::Feeds{{"x", matrix(1, 2, 0)}});
  std::vector<Batcher::Outcome> out = submit_all(&b, feeds);
  EXPECT_EQ(rec.runs, (std::vector<int64_t>{4}));
  for (const auto& o : out) {
    EXPECT_EQ(o.status.code(), StatusCode::kInternal);
    EXPECT_EQ(o.status.message(), "the model broke");
    EXPECT_TRUE(o.outputs.empty());
  }
}

TEST(BatcherTest, OutputWithoutTheBatchRowsIsAnErrorForAll) {
  Batcher b(
      [](const Session::Feeds&, const std::vector<std::string>&) -> Result<std::vector<Value>> {
        return std::vector<Value>{matrix(1, 1, 0)};  // one row whatever the batch
      },
      {8, {2}, 2s});
  std::vector<Session::Feeds> feeds(2, Session::Feeds{{"x", matrix(1, 2, 0)}});
  std::vector<Batcher::Outcome> out = submit_all(&b, feeds);
  for (const auto& o : out) {
    EXPECT_FALSE(o.status.is_ok());
    EXPECT_NE(o.status.message().find("output 'y'"), std::string::npos) << o.status.message();
  }
}

TEST(BatcherTest, ARequestPastItsDeadlineIsNotRun) {
  Recorder rec;
  Batcher b(rec.runner(), {8, {}, 200ms});
  std::vector<Batcher::Outcome> out =
      submit_all(&b, {{{"x", matrix(1, 2, 0)}}}, std::chrono::system_clock::now() + 20ms);
  EXPECT_TRUE(out[0].expired);
  EXPECT_TRUE(out[0].outputs.empty());
  std::this_thread::sleep_for(250ms);  // past the delay: nothing was left to run
  EXPECT_TRUE(rec.runs.empty());
  out = submit_all(&b, {{{"x", matrix(1, 2, 0)}}}, std::chrono::system_clock::now() - 1s);
  EXPECT_TRUE(out[0].expired);
}

// Many callers at once, some with deadlines that pass while they wait, some already past, some with none:
// each is answered once, either expired or with its own rows, and nothing hangs (callers free their
// requests as soon as they are answered, while the worker may still be completing others).
TEST(BatcherTest, ManyCallersWithMixedDeadlinesAreEachAnsweredOnce) {
  std::atomic<int> runs{0};
  Batcher b(
      [&](const Session::Feeds& feeds, const std::vector<std::string>&) -> Result<std::vector<Value>> {
        runs.fetch_add(1, std::memory_order_relaxed);
        std::this_thread::sleep_for(200us);
        const Value& x = feeds[0].second;
        std::vector<float> y = floats(x);
        for (float& f : y) f *= 2;
        return std::vector<Value>{
            Value::copy_of({ElementType::kFloat32, x.shape().data(), static_cast<int>(x.shape().size()), y.data()})
                .value()};
      },
      {8, {4, 8}, 300us, true});
  constexpr int kThreads = 24, kEach = 40;
  std::atomic<int> answered{0}, expired{0}, wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      const std::vector<std::string> names = {"y"};
      for (int i = 0; i < kEach; ++i) {
        const float base = static_cast<float>(t * 1000 + i);
        Session::Feeds feeds = {{"x", matrix(1, 2, base)}};
        const int kind = (t + i) % 3;
        const Batcher::Deadline deadline = kind == 0   ? kNone
                                           : kind == 1 ? std::chrono::system_clock::now() + 150us
                                                       : std::chrono::system_clock::now() - 1ms;
        Batcher::Outcome o = b.submit(feeds, names, deadline);
        answered.fetch_add(1, std::memory_order_relaxed);
        if (o.expired) {
          expired.fetch_add(1, std::memory_order_relaxed);
          if (kind == 0 || !o.outputs.empty()) wrong.fetch_add(1, std::memory_order_relaxed);
        } else if (!o.status.is_ok() || o.outputs.size() != 1 ||
                   floats(o.outputs[0]) != std::vector<float>{2 * base, 2 * base + 2}) {
          wrong.fetch_add(1, std::memory_order_relaxed);
        }
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(answered.load(), kThreads * kEach);
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_GE(expired.load(), kThreads * kEach / 3);  // at least the ones already past their deadline
  EXPECT_GT(runs.load(), 0);
}

TEST(BatcherTest, RunRowsPadsToTheSmallestPreferredSizeThatHolds) {
  Recorder rec;
  Batcher padded(rec.runner(), {16, {2, 4, 8}, 0us, true});
  EXPECT_EQ(padded.run_rows(1), 2);
  EXPECT_EQ(padded.run_rows(2), 2);
  EXPECT_EQ(padded.run_rows(3), 4);
  EXPECT_EQ(padded.run_rows(8), 8);
  EXPECT_EQ(padded.run_rows(9), 16);  // above every preferred size: max_batch_size
  Batcher plain(rec.runner(), {16, {2, 4, 8}, 0us, false});
  EXPECT_EQ(plain.run_rows(3), 3);
  Batcher no_preferred(rec.runner(), {16, {}, 0us, true});
  EXPECT_EQ(no_preferred.run_rows(3), 16);
}

TEST(BatcherTest, PaddedBatchRunsAtAPreferredSizeAndEachGetsOnlyItsRows) {
  std::mutex mutex;
  std::vector<std::vector<float>> inputs;  // what the model saw, run by run
  Batcher b(
      [&](const Session::Feeds& feeds, const std::vector<std::string>&) -> Result<std::vector<Value>> {
        const Value& x = feeds[0].second;
        std::vector<float> y = floats(x);
        {
          std::lock_guard<std::mutex> lock(mutex);
          inputs.push_back(y);
        }
        for (size_t i = 0; i < y.size(); ++i) y[i] = y[i] * 2 + static_cast<float>(i / 2);  // row-dependent
        return std::vector<Value>{
            Value::copy_of({ElementType::kFloat32, x.shape().data(), static_cast<int>(x.shape().size()), y.data()})
                .value()};
      },
      {8, {4, 8}, 300ms, true});
  std::vector<Session::Feeds> feeds;
  for (int i = 0; i < 3; ++i) feeds.push_back({{"x", matrix(1, 2, 10.0f * (i + 1))}});
  std::vector<Batcher::Outcome> out = submit_all(&b, feeds);  // 3 rows: the delay flushes them, padded to 4
  ASSERT_EQ(inputs.size(), 1u);
  ASSERT_EQ(inputs[0].size(), 8u);  // 4 rows of 2
  // The padding row is a copy of the batch's first row.
  EXPECT_EQ(inputs[0][6], inputs[0][0]);
  EXPECT_EQ(inputs[0][7], inputs[0][1]);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(out[i].status.is_ok()) << out[i].status.message();
    EXPECT_EQ(out[i].batch_rows, 3);
    EXPECT_EQ(out[i].run_rows, 4);
    ASSERT_EQ(out[i].outputs[0].shape(), (std::vector<int64_t>{1, 2}));
    // Its own row of the batch: find where it sat, and check it got that row's outputs.
    const float first = 10.0f * (i + 1);
    int row = -1;
    for (int r = 0; r < 3; ++r)
      if (inputs[0][2 * r] == first) row = r;
    ASSERT_GE(row, 0);
    EXPECT_EQ(floats(out[i].outputs[0]), (std::vector<float>{first * 2 + row, (first + 1) * 2 + row}));
  }
}

TEST(BatcherTest, ALoneRequestIsPaddedTooAndBigOnesGoToMaxBatchSize) {
  Recorder rec;
  Batcher b(rec.runner(), {8, {4}, 20ms, true});
  std::vector<Batcher::Outcome> out = submit_all(&b, {{{"x", matrix(1, 3, 5)}}});
  ASSERT_TRUE(out[0].status.is_ok()) << out[0].status.message();
  EXPECT_EQ(floats(out[0].outputs[0]), (std::vector<float>{10, 12, 14}));
  out = submit_all(&b, {{{"x", matrix(5, 1, 0)}}});  // 5 rows: above the preferred 4, so 8
  ASSERT_TRUE(out[0].status.is_ok()) << out[0].status.message();
  EXPECT_EQ(floats(out[0].outputs[0]), (std::vector<float>{0, 2, 4, 6, 8}));
  EXPECT_EQ(rec.runs, (std::vector<int64_t>{4, 8}));
}

TEST(BatcherTest, PaddedOutputWithoutThePaddedRowsIsAnError) {
  Batcher b(
      [](const Session::Feeds& feeds, const std::vector<std::string>&) -> Result<std::vector<Value>> {
        return std::vector<Value>{matrix(feeds[0].second.shape()[0] - 1, 1, 0)};  // one row short
      },
      {8, {4}, 10ms, true});
  std::vector<Batcher::Outcome> out = submit_all(&b, {{{"x", matrix(3, 2, 0)}}});
  EXPECT_FALSE(out[0].status.is_ok());
  EXPECT_NE(out[0].status.message().find("batched run of 4 rows: output 'y' has shape [3, 1]"), std::string::npos)
      << out[0].status.message();
}

}  // namespace
}  // namespace sdx::serve
