"""Generated Python stubs of sdx serve's sdx.v1 service (proto/sdx/v1/remote.proto): remote_pb2 and
remote_pb2_grpc, written here at build time by grpcio-tools (cmake/serve.cmake). sdx.remote imports them;
they need grpcio and protobuf (`pip install sdx-runtime[remote]`)."""
