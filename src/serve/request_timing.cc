#include "serve/request_timing.h"

#include <grpcpp/server_context.h>
#include <grpcpp/support/server_interceptor.h>

#include <chrono>
#include <cstdlib>
#include <cstring>

#include "serve/serve_metrics.h"

namespace sdx::serve {
namespace {

using Clock = std::chrono::steady_clock;
using Hook = grpc::experimental::InterceptionHookPoints;

constexpr const char* kModelInfer = "/inference.GRPCInferenceService/ModelInfer";

// What the handler tells the interceptor of the call running on this thread. Written and read on one
// thread only (no publication across threads).
struct CallRecord {
  const grpc::ServerContextBase* context = nullptr;  // the call it belongs to; null: none
  ModelMetrics* metrics = nullptr;
  double run = 0;
  bool ran = false;
};
thread_local CallRecord tls_record;

class TimingInterceptor final : public grpc::experimental::Interceptor {
 public:
  explicit TimingInterceptor(grpc::experimental::ServerRpcInfo* info)
      : context_(info->server_context()), start_(Clock::now()) {}

  // gRPC destroys the interceptor with the call, once the response's batch has completed (an early
  // serialization, above, makes gRPC skip the POST_SEND_MESSAGE hook, so the end of the send is seen here).
  ~TimingInterceptor() override {
    if (!sent_ || !metrics_ || !metrics_->server_time) return;
    const Clock::time_point finished = Clock::now();
    const double total = std::chrono::duration<double>(handed_ - start_).count();
    metrics_->server_time->observe(total);
    if (ran_) metrics_->server_overhead->observe(total - run_);
    metrics_->server_send->observe(std::chrono::duration<double>(finished - handed_).count());
  }
  TimingInterceptor(const TimingInterceptor&) = delete;
  TimingInterceptor& operator=(const TimingInterceptor&) = delete;

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(Hook::POST_RECV_MESSAGE)) {
      tls_record = CallRecord{context_, nullptr, 0, false};  // the handler runs next, on this thread
    }
    if (methods->QueryInterceptionHookPoint(Hook::PRE_SEND_STATUS)) {
      // The handler has returned; this batch is sent from its thread.
      if (tls_record.context == context_) {
        metrics_ = tls_record.metrics;
        run_ = tls_record.run;
        ran_ = tls_record.ran;
      }
      tls_record = CallRecord{};
    }
    if (methods->QueryInterceptionHookPoint(Hook::PRE_SEND_MESSAGE)) {
      // Serialize the response now, inside the measured time (gRPC keeps the bytes and does not serialize
      // again), then hand it to the transport.
      methods->GetSerializedSendMessage();
      handed_ = Clock::now();
      sent_ = true;
    }
    methods->Proceed();
  }

 private:
  const grpc::ServerContextBase* context_;
  const Clock::time_point start_;
  Clock::time_point handed_;
  ModelMetrics* metrics_ = nullptr;
  double run_ = 0;
  bool ran_ = false;
  bool sent_ = false;  // a response message was serialized
};

class TimingFactory final : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  grpc::experimental::Interceptor* CreateServerInterceptor(grpc::experimental::ServerRpcInfo* info) override {
    if (std::strcmp(info->method(), kModelInfer) != 0) return nullptr;
    return new TimingInterceptor(info);  // owned by gRPC's ServerRpcInfo
  }
};

}  // namespace

bool request_timing_enabled() {
  const char* v = std::getenv("SDX_SERVE_NO_REQUEST_TIMING");
  return v == nullptr || v[0] == '\0' || std::strcmp(v, "0") == 0;
}

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> make_request_timing_factory() {
  return std::make_unique<TimingFactory>();
}

void record_call(const grpc::ServerContextBase* context, ModelMetrics* metrics, double run_seconds, bool ran) {
  if (tls_record.context != context) return;  // no interceptor on this call, or not on this thread
  tls_record.metrics = metrics;
  tls_record.run = run_seconds;
  tls_record.ran = ran;
}

}  // namespace sdx::serve
