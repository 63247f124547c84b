// The whole server-side time of each KServe ModelInfer call, measured by a gRPC server interceptor: from
// when gRPC sets the call up on its worker thread (the interceptor is created there, before the request
// message is parsed) to when the response is serialized (the interceptor serializes it itself, at
// PRE_SEND_MESSAGE) and handed to the transport, so gRPC's call setup, protobuf parsing and
// serialization, admission, queueing and the handler are all inside. What stays outside: HTTP/2 framing
// and socket reads before gRPC hands the call to a worker thread, the wait for a free worker, and the
// transport's write of the response (framing, the socket write, waking the handler thread), which is
// exported apart. Per model (serve_metrics.h): sdx_server_request_seconds; sdx_server_overhead_seconds,
// the same minus the session's run; sdx_server_send_seconds, handed to the transport until gRPC finished
// the call (the response written, the call torn down).
//
//   // main.cc, building the server:
//   if (serve::request_timing_enabled()) {
//     std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> creators;
//     creators.push_back(serve::make_request_timing_factory());
//     builder.experimental().SetInterceptorCreators(std::move(creators));
//   }
//   // the ModelInfer handler, once it knows its model and run time:
//   serve::record_call(context, metrics, run_seconds, ran);
//
// The handler hands its model and run time to the interceptor through a thread-local record, keyed by the
// call's ServerContext: gRPC's synchronous server runs the POST_RECV hooks, the handler and the response's
// PRE_SEND hooks on one thread. A record whose context is not the caller's is left alone (a call served on
// another thread is then timed but not attributed to a model, and is not observed). Only successful calls
// (a response message sent) are observed. SDX_SERVE_NO_REQUEST_TIMING=1 leaves the interceptor out.
#pragma once

#include <memory>

namespace grpc {
class ServerContextBase;
namespace experimental {
class ServerInterceptorFactoryInterface;
}  // namespace experimental
}  // namespace grpc

namespace sdx::serve {

class ModelMetrics;

// False when SDX_SERVE_NO_REQUEST_TIMING is set to anything but "" or "0".
bool request_timing_enabled();

// Times ModelInfer calls (other methods get no interceptor).
std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> make_request_timing_factory();

// Called by the ModelInfer handler on its own thread: the call's model series and the session's run time
// (ran: the session ran; otherwise only sdx_server_request_seconds is observed). A no-op without the
// interceptor.
void record_call(const grpc::ServerContextBase* context, ModelMetrics* metrics, double run_seconds, bool ran);

}  // namespace sdx::serve
