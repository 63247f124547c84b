# Generates the ONNX protobuf parser from the onnx package's onnx-ml.proto and
# onnx-data.proto (sequences/optionals in test data). The package is renamed to
# sdx_onnx so the descriptors never collide with another copy of onnx's protos
# loaded in the same process (e.g. the onnx Python module).
if(NOT SDX_ONNX_PROTO)
  execute_process(
    COMMAND ${Python_EXECUTABLE} -c "import onnx, os; print(os.path.join(os.path.dirname(onnx.__file__), 'onnx-ml.proto'))"
    OUTPUT_VARIABLE SDX_ONNX_PROTO OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _rc)
  if(NOT _rc EQUAL 0 OR NOT EXISTS "${SDX_ONNX_PROTO}")
    message(FATAL_ERROR "Cannot find onnx-ml.proto: install the onnx Python package (pip install onnx) or set SDX_ONNX_PROTO")
  endif()
endif()
get_filename_component(_onnx_proto_dir ${SDX_ONNX_PROTO} DIRECTORY)
message(STATUS "sdx: ONNX schema from ${_onnx_proto_dir}")
set(_gen_dir ${CMAKE_BINARY_DIR}/gen)
file(MAKE_DIRECTORY ${_gen_dir})

function(sdx_rename_proto src dst)
  file(READ ${src} _proto)
  string(REGEX REPLACE "\npackage onnx;" "\npackage sdx_onnx;" _proto "${_proto}")
  string(REPLACE "import \"onnx/onnx-ml.proto\";" "import \"sdx_onnx.proto\";" _proto "${_proto}")
  file(WRITE ${_gen_dir}/${dst}.tmp "${_proto}")
  configure_file(${_gen_dir}/${dst}.tmp ${_gen_dir}/${dst} COPYONLY)
endfunction()
sdx_rename_proto(${SDX_ONNX_PROTO} sdx_onnx.proto)
sdx_rename_proto(${_onnx_proto_dir}/onnx-data.proto sdx_onnx_data.proto)

add_custom_command(
  OUTPUT ${_gen_dir}/sdx_onnx.pb.cc ${_gen_dir}/sdx_onnx.pb.h ${_gen_dir}/sdx_onnx_data.pb.cc ${_gen_dir}/sdx_onnx_data.pb.h
  COMMAND protobuf::protoc --cpp_out=${_gen_dir} -I${_gen_dir} ${_gen_dir}/sdx_onnx.proto ${_gen_dir}/sdx_onnx_data.proto
  DEPENDS ${_gen_dir}/sdx_onnx.proto ${_gen_dir}/sdx_onnx_data.proto protobuf::protoc
  COMMENT "Generating ONNX protobuf parser")
set(SDX_ONNX_PROTO_SRCS ${_gen_dir}/sdx_onnx.pb.cc ${_gen_dir}/sdx_onnx_data.pb.cc)
set(SDX_ONNX_PROTO_INCLUDE_DIR ${_gen_dir})
