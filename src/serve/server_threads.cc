#include "serve/server_threads.h"

#include <grpcpp/server_builder.h>

#include <algorithm>

namespace sdx::serve {

void keep_handler_threads(grpc::ServerBuilder* builder, int max_queue) {
  builder->SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MAX_POLLERS, std::clamp(max_queue, 4, 64));
}

}  // namespace sdx::serve
