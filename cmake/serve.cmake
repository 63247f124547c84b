# sdx-serve (`sdx serve`): the gRPC server of the KServe v2 protocol, src/serve/. It is not part of libsdx
# (which stays free of gRPC): its layer compiles into a static library, sdx_serve_core, that the
# executable and its tests link, on top of libsdx's public API. Needs Debian's libgrpc++-dev and
# protobuf-compiler-grpc (scripts/setup.sh installs them); without them the build goes on without it. The
# /metrics endpoint serves HTTP with CivetWeb (Debian's libcivetweb-dev); without it sdx-serve is built
# with no metrics endpoint (--metrics-port other than 0 is then refused at start).
find_package(gRPC CONFIG QUIET)
find_program(SDX_GRPC_CPP_PLUGIN grpc_cpp_plugin)
if(NOT gRPC_FOUND OR NOT SDX_GRPC_CPP_PLUGIN)
  message(STATUS "sdx: gRPC not found (apt-get install libgrpc++-dev protobuf-compiler-grpc): no sdx-serve")
  return()
endif()
message(STATUS "sdx: sdx-serve on gRPC ${gRPC_VERSION}")

# The protocols -> C++ messages and service stubs in gen/: KServe's (proto/kserve/grpc_service.proto) and
# sdx's own extension service beside it (proto/sdx/v1/remote.proto, standalone).
set(_serve_gen ${CMAKE_BINARY_DIR}/gen)
set(SDX_SERVE_PROTO_SRCS)
foreach(_proto kserve/grpc_service sdx/v1/remote)
  set(_proto_file ${CMAKE_SOURCE_DIR}/proto/${_proto}.proto)
  list(APPEND SDX_SERVE_PROTO_SRCS ${_serve_gen}/${_proto}.pb.cc ${_serve_gen}/${_proto}.grpc.pb.cc)
  add_custom_command(
    OUTPUT ${_serve_gen}/${_proto}.pb.cc ${_serve_gen}/${_proto}.grpc.pb.cc ${_serve_gen}/${_proto}.pb.h
           ${_serve_gen}/${_proto}.grpc.pb.h
    COMMAND ${CMAKE_COMMAND} -E make_directory ${_serve_gen}
    COMMAND protobuf::protoc --cpp_out=${_serve_gen} --grpc_out=${_serve_gen}
            --plugin=protoc-gen-grpc=${SDX_GRPC_CPP_PLUGIN} -I${CMAKE_SOURCE_DIR}/proto ${_proto_file}
    DEPENDS ${_proto_file} protobuf::protoc
    COMMENT "Generating the gRPC service of proto/${_proto}.proto")
endforeach()

file(GLOB SDX_SERVE_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/serve/*.cc)
list(REMOVE_ITEM SDX_SERVE_SOURCES ${CMAKE_SOURCE_DIR}/src/serve/main.cc)
add_library(sdx_serve_core STATIC ${SDX_SERVE_SOURCES} ${SDX_SERVE_PROTO_SRCS})
add_dependencies(sdx_serve_core sdx_check_layers)
target_include_directories(sdx_serve_core PUBLIC ${CMAKE_SOURCE_DIR}/src ${CMAKE_SOURCE_DIR}/include ${_serve_gen})
target_link_libraries(sdx_serve_core PUBLIC sdx gRPC::grpc++ protobuf::libprotobuf Threads::Threads)
# SHA-256 of uploaded models (model_store.cc): libcrypto, which gRPC on Debian links already.
find_package(OpenSSL REQUIRED COMPONENTS Crypto)
target_link_libraries(sdx_serve_core PRIVATE OpenSSL::Crypto)
# config.json of a repository model (serve/model_config.h): Debian's nlohmann-json3-dev, header-only.
find_package(nlohmann_json 3 REQUIRED)
target_link_libraries(sdx_serve_core PRIVATE nlohmann_json::nlohmann_json)
# Not find_package(civetweb): Debian's CMake package config names /usr/bin/civetweb (another package) and
# fails the configure without it; the header and the library are all it takes.
find_path(SDX_CIVETWEB_INCLUDE_DIR civetweb.h)
find_library(SDX_CIVETWEB_LIBRARY civetweb)
if(SDX_CIVETWEB_INCLUDE_DIR AND SDX_CIVETWEB_LIBRARY)
  target_include_directories(sdx_serve_core PRIVATE ${SDX_CIVETWEB_INCLUDE_DIR})
  target_link_libraries(sdx_serve_core PRIVATE ${SDX_CIVETWEB_LIBRARY})
  target_compile_definitions(sdx_serve_core PRIVATE SDX_SERVE_HAS_CIVETWEB=1)
else()
  message(STATUS "sdx: CivetWeb not found (apt-get install libcivetweb-dev): sdx-serve without /metrics")
endif()

add_executable(sdx-serve ${CMAKE_SOURCE_DIR}/src/serve/main.cc)
set_source_files_properties(${CMAKE_SOURCE_DIR}/src/serve/main.cc PROPERTIES
                            COMPILE_DEFINITIONS "SDX_VERSION_STRING=\"${PROJECT_VERSION}\"")
target_link_libraries(sdx-serve PRIVATE sdx_serve_core)
# Installed beside the Python package's libsdx (sdx/bin/sdx-serve, sdx/lib/libsdx.so): `sdx serve` runs it.
set_target_properties(sdx-serve PROPERTIES INSTALL_RPATH "$ORIGIN/../lib")
install(TARGETS sdx-serve RUNTIME DESTINATION ${SDX_INSTALL_DIR}/bin)
if(SDX_BUILD_PYTHON)
  # The build tree's runnable package (build/<dir>/python/sdx) gets it too, in the same place.
  add_custom_command(TARGET sdx-serve POST_BUILD
    COMMAND ${CMAKE_COMMAND} -E make_directory ${SDX_PY_STAGE}/bin
    COMMAND ${CMAKE_COMMAND} -E copy_if_different $<TARGET_FILE:sdx-serve> ${SDX_PY_STAGE}/bin)
endif()

# bench/serve_load.cc: a C++ closed-loop load generator for bench/serve_bench.py --load cpp (not built by
# default: ninja sdx_serve_load).
add_executable(sdx_serve_load EXCLUDE_FROM_ALL ${CMAKE_SOURCE_DIR}/bench/serve_load.cc)
target_link_libraries(sdx_serve_load PRIVATE sdx_serve_core)

# The Python stubs of the sdx.v1 service for the client, sdx.remote (python/sdx/remote.py), generated at build
# time with grpcio-tools into the package: sdx/_proto/remote_pb2.py and remote_pb2_grpc.py. The proto is
# compiled as sdx/_proto/remote.proto (a copy in the build folder) so that the generated import reads
# `from sdx._proto import remote_pb2`, which works from the staged build tree and from an installed package
# alike. Only sdx.v1: KServe's messages (package inference) are left to tritonclient, which registers them
# under the same names. Without grpcio-tools the stubs are skipped, and sdx.remote says so on import.
if(SDX_BUILD_PYTHON)
  execute_process(COMMAND ${Python_EXECUTABLE} -c "import grpc_tools.protoc" RESULT_VARIABLE _grpc_tools_rc
                  OUTPUT_QUIET ERROR_QUIET)
  if(_grpc_tools_rc EQUAL 0)
    set(_py_proto_src ${CMAKE_BINARY_DIR}/py_proto/sdx/_proto/remote.proto)
    set(_py_proto_out ${SDX_PY_STAGE}/_proto/remote_pb2.py ${SDX_PY_STAGE}/_proto/remote_pb2_grpc.py)
    add_custom_command(
      OUTPUT ${_py_proto_out}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/py_proto/sdx/_proto ${SDX_PY_STAGE}/_proto
      COMMAND ${CMAKE_COMMAND} -E copy_if_different ${CMAKE_SOURCE_DIR}/proto/sdx/v1/remote.proto ${_py_proto_src}
      COMMAND ${CMAKE_COMMAND} -E copy_if_different ${CMAKE_SOURCE_DIR}/python/sdx/_proto/__init__.py
              ${SDX_PY_STAGE}/_proto/__init__.py
      COMMAND ${Python_EXECUTABLE} -m grpc_tools.protoc -I${CMAKE_BINARY_DIR}/py_proto
              --python_out=${CMAKE_BINARY_DIR}/python --grpc_python_out=${CMAKE_BINARY_DIR}/python
              sdx/_proto/remote.proto
      DEPENDS ${CMAKE_SOURCE_DIR}/proto/sdx/v1/remote.proto ${CMAKE_SOURCE_DIR}/python/sdx/_proto/__init__.py
      COMMENT "Generating the Python stubs of proto/sdx/v1/remote.proto (sdx/_proto)")
    add_custom_target(sdx_py_proto ALL DEPENDS ${_py_proto_out})
    add_dependencies(sdx_py_files sdx_py_proto)
    # python/sdx/_proto/__init__.py comes with the package's sources (wheel.packages); the stubs beside it.
    install(FILES ${_py_proto_out} DESTINATION ${SDX_INSTALL_DIR}/_proto)
  else()
    message(STATUS "sdx: grpcio-tools not found (pip install grpcio-tools): no Python stubs for sdx.remote")
  endif()
endif()

# The libFuzzer target of the server's request decoding (fuzz/serve_request_fuzzer.cc; scripts/fuzz.sh
# serve_request): the decoder, the KServe messages and the public Value on the small sdx_fuzz_frontend
# library (CMakeLists.txt), without gRPC or the rest of libsdx.
if(SDX_BUILD_FUZZERS)
  add_executable(serve_request_fuzzer EXCLUDE_FROM_ALL ${CMAKE_SOURCE_DIR}/fuzz/serve_request_fuzzer.cc
                 ${CMAKE_SOURCE_DIR}/src/serve/tensor_codec.cc ${CMAKE_SOURCE_DIR}/src/serve/datatype.cc
                 ${CMAKE_SOURCE_DIR}/src/api/public_value.cc ${_serve_gen}/kserve/grpc_service.pb.cc)
  target_include_directories(serve_request_fuzzer PRIVATE ${CMAKE_SOURCE_DIR}/src ${CMAKE_SOURCE_DIR}/include
                             ${_serve_gen})
  target_compile_options(serve_request_fuzzer PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_options(serve_request_fuzzer PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_libraries(serve_request_fuzzer PRIVATE sdx_fuzz_frontend protobuf::libprotobuf)
endif()
