#include "serve/metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <thread>
#include <vector>

#include "serve/serve_metrics.h"

namespace sdx::serve {
namespace {

TEST(Metrics, CounterAndGaugeText) {
  MetricsRegistry r;
  MetricFamily* requests = r.family("sdx_requests_total", "Requests.", MetricType::kCounter);
  requests->child({{"model", "add"}, {"status", "OK"}})->add(3);
  requests->child({{"model", "add"}, {"status", "OK"}})->add(2);  // the same series
  MetricFamily* loaded = r.family("sdx_models_loaded", "Models.", MetricType::kGauge);
  loaded->child({})->set(4);
  loaded->child({})->add(-1);
  EXPECT_EQ(r.render(),
            "# HELP sdx_requests_total Requests.\n"
            "# TYPE sdx_requests_total counter\n"
            "sdx_requests_total{model=\"add\",status=\"OK\"} 5\n"
            "# HELP sdx_models_loaded Models.\n"
            "# TYPE sdx_models_loaded gauge\n"
            "sdx_models_loaded 3\n");
}

TEST(Metrics, HistogramBucketsAreCumulativeWithSumAndCount) {
  MetricsRegistry r;
  Metric* h = r.histogram("lat_seconds", "Latency.", {0.001, 0.01, 0.1})->child({{"model", "m"}});
  h->observe(0.0005);
  h->observe(0.001);  // on a bound: counted in that bucket (le = less or equal)
  h->observe(0.05);
  h->observe(7.0);
  EXPECT_EQ(h->count(), 4u);
  EXPECT_NEAR(h->sum(), 7.0515, 1e-9);
  EXPECT_EQ(r.render(),
            "# HELP lat_seconds Latency.\n"
            "# TYPE lat_seconds histogram\n"
            "lat_seconds_bucket{model=\"m\",le=\"0.001\"} 2\n"
            "lat_seconds_bucket{model=\"m\",le=\"0.01\"} 2\n"
            "lat_seconds_bucket{model=\"m\",le=\"0.1\"} 3\n"
            "lat_seconds_bucket{model=\"m\",le=\"+Inf\"} 4\n"
            "lat_seconds_sum{model=\"m\"} 7.0515\n"
            "lat_seconds_count{model=\"m\"} 4\n");
}

TEST(Metrics, NegativeAndNanObservationsCountAsZero) {
  MetricsRegistry r;
  Metric* h = r.histogram("h", "H.", {1.0})->child({});
  h->observe(-1.0);
  h->observe(NAN);
  EXPECT_EQ(h->count(), 2u);
  EXPECT_EQ(h->sum(), 0.0);
}

TEST(Metrics, LabelValuesAreEscaped) {
  EXPECT_EQ(escape_label_value("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
  MetricsRegistry r;
  r.family("c_total", "C.", MetricType::kCounter)->child({{"model", "x\"y"}})->add(1);
  EXPECT_NE(r.render().find("c_total{model=\"x\\\"y\"} 1\n"), std::string::npos);
}

TEST(Metrics, ValuesFormat) {
  EXPECT_EQ(format_metric_value(INFINITY), "+Inf");
  EXPECT_EQ(format_metric_value(-INFINITY), "-Inf");
  EXPECT_EQ(format_metric_value(NAN), "NaN");
  EXPECT_EQ(format_metric_value(0.25), "0.25");
  EXPECT_EQ(format_metric_value(2.5e-6), "2.5e-06");
}

TEST(Metrics, ConcurrentUpdatesAreAllCounted) {
  MetricsRegistry r;
  Metric* c = r.family("c_total", "C.", MetricType::kCounter)->child({});
  Metric* h = r.histogram("h_seconds", "H.", kLatencyBuckets)->child({});
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) {
        c->add(1);
        h->observe(i * 1e-6);
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(c->value(), 80000);
  EXPECT_EQ(h->count(), 80000u);
}

TEST(ServeMetrics, EveryFamilyIsRenderedWithItsType) {
  ServeMetrics m;
  ModelMetrics* add = m.model("add");
  EXPECT_EQ(m.model("add"), add);  // created once
  add->requests(grpc::StatusCode::OK)->add(2);
  add->requests(grpc::StatusCode::RESOURCE_EXHAUSTED)->add(1);
  EXPECT_EQ(add->requests(grpc::StatusCode::OK), add->requests(grpc::StatusCode::OK));
  add->rejected_queue_full->add(1);
  add->duration->observe(20e-6);
  const std::string text = m.render();
  for (const char* line : {"# TYPE sdx_requests_total counter", "# TYPE sdx_request_duration_seconds histogram",
                           "# TYPE sdx_request_overhead_seconds histogram", "# TYPE sdx_queue_depth gauge",
                           "# TYPE sdx_inflight gauge", "# TYPE sdx_rejected_total counter",
                           "# TYPE sdx_models_loaded gauge", "sdx_requests_total{model=\"add\",status=\"OK\"} 2",
                           "sdx_requests_total{model=\"add\",status=\"RESOURCE_EXHAUSTED\"} 1",
                           "sdx_rejected_total{model=\"add\",reason=\"queue_full\"} 1",
                           "sdx_rejected_total{model=\"add\",reason=\"deadline\"} 0",
                           "sdx_request_duration_seconds_bucket{model=\"add\",le=\"2.5e-05\"} 1",
                           "sdx_request_duration_seconds_count{model=\"add\"} 1"})
    EXPECT_NE(text.find(std::string(line) + "\n"), std::string::npos) << line;
  m.unknown_model()->requests(grpc::StatusCode::NOT_FOUND)->add(1);
  const std::string with_unknown = m.render();
  EXPECT_NE(with_unknown.find("sdx_requests_total{model=\"\",status=\"NOT_FOUND\"} 1\n"), std::string::npos);
  EXPECT_EQ(with_unknown.find("sdx_queue_depth{model=\"\"}"), std::string::npos);  // never queued
  EXPECT_STREQ(grpc_code_name(grpc::StatusCode::DEADLINE_EXCEEDED), "DEADLINE_EXCEEDED");
  EXPECT_STREQ(grpc_code_name(grpc::StatusCode::UNAUTHENTICATED), "UNAUTHENTICATED");
}

}  // namespace
}  // namespace sdx::serve
