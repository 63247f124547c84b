// How many idle threads gRPC's synchronous server keeps (ServerBuilder::SyncServerOption::MAX_POLLERS).
//
//   grpc::ServerBuilder builder;
//   serve::keep_handler_threads(&builder, opts.max_queue);
//
// gRPC's default keeps at most 2 idle polling threads: a handler thread that finishes while more are idle
// exits, and the next call that finds none idle creates one. When handlers block (waiting for a run slot,
// or in the dynamic batcher, where all of a batch's callers wake at once), nearly every request then pays
// a thread's creation and exit. Keeping up to max_queue (4..64) idle threads removes that churn: measured
// on a 2-vCPU VM, 16 single-row clients on a batched 3 x 1024 MLP went from about 2,600 to 11,000
// requests/s and from about 190 to 100 us of server CPU per request (bench/README.md, "Serving"). Idle
// threads cost a wake-up per CQ timeout (10 ms) each.
#pragma once

namespace grpc {
class ServerBuilder;
}  // namespace grpc

namespace sdx::serve {

void keep_handler_threads(grpc::ServerBuilder* builder, int max_queue);

}  // namespace sdx::serve
