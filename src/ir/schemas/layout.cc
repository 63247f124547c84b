// Schemas of the sdx ops that read and write channel-blocked tensors (NCHW16c: float32, 4-D, the
// logical NCHW shape, channels a multiple of 16; backend/cpu/tensor/channel_blocked.h), which
// ConvLayoutOptimizations makes of the pools between convolutions (sdx.FusedConv's own layout
// attributes are in fused.cc):
//
//   sdx.BlockedMaxPool(X) -> Y       MaxPool without Indices, X and Y channel-blocked
//   sdx.BlockedAveragePool(X) -> Y   AveragePool, X and Y channel-blocked
//
// Attributes and shapes as the ONNX ops'.
#include <string>

#include "ir/op_schema.h"
#include "ir/shape_inference.h"

namespace sdx::ir {
namespace {

constexpr const char* kSdx = "sdx";

// The pool's output shape; X float32 and, where known, 4-D with a multiple of 16 channels.
Status shape_blocked_pool(Node& node) {
  const Dims* x = input_dims(node, 0);
  if (x && (x->size() != 4 || ((*x)[1].is_fixed() && (*x)[1].value % 16 != 0)))
    return invalid_argument("a channel-blocked pool needs a 4-D input with a multiple of 16 channels, got " +
                            dims_string(*x));
  return shape_conv_pool(ConvPoolKind::kPool)(node);
}

Status infer_blocked_pool(Node& node) {
  const Value* x = node.input(0);
  if (x && x->type().kind == TypeInfo::Kind::kTensor && x->type().elem != DType::kUndefined &&
      x->type().elem != DType::kFloat32)
    return invalid_argument(std::string("a channel-blocked pool needs float32, got ") + dtype_name(x->type().elem));
  return infer_same_as_input(0)(node);
}

}  // namespace

SDX_OP_SCHEMA_DOMAIN(BlockedMaxPool, kSdx)
    .attrs({{"auto_pad", AttrType::kString},
            {"ceil_mode", AttrType::kInt},
            {"dilations", AttrType::kInts},
            {"kernel_shape", AttrType::kInts},
            {"pads", AttrType::kInts},
            {"strides", AttrType::kInts}})
    .category(OpCategory::kOther)
    .inputs(1, 1)
    .outputs(1, 1)
    .infer(infer_blocked_pool)
    .infer_shape(shape_blocked_pool);

SDX_OP_SCHEMA_DOMAIN(BlockedAveragePool, kSdx)
    .attrs({{"auto_pad", AttrType::kString},
            {"ceil_mode", AttrType::kInt},
            {"count_include_pad", AttrType::kInt},
            {"dilations", AttrType::kInts},
            {"kernel_shape", AttrType::kInts},
            {"pads", AttrType::kInts},
            {"strides", AttrType::kInts}})
    .category(OpCategory::kOther)
    .inputs(1, 1)
    .outputs(1, 1)
    .infer(infer_blocked_pool)
    .infer_shape(shape_blocked_pool);

}  // namespace sdx::ir
