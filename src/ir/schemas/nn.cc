// Schemas of the neural-network ops (matmul, conv, pooling, resampling, detection).
#include "ir/op_cost.h"
#include "ir/op_schema.h"
#include "ir/shape_inference.h"

namespace sdx::ir {
namespace {

// Output 0 takes the element type of input 0; further outputs are int64 (MaxPool Indices).
Status infer_first_same_rest_int64(Node& node) {
  Value* in = node.input(0);
  for (int i = 0; i < node.num_outputs(); ++i) {
    Value* out = node.output(i);
    if (!out || out->type().kind != TypeInfo::Kind::kUnknown) continue;
    if (i == 0) {
      if (in) out->mutable_type() = TypeInfo::tensor(in->type().elem);
    } else {
      out->mutable_type() = TypeInfo::tensor(DType::kInt64);
    }
  }
  return Status::ok();
}

}  // namespace

SDX_OP_SCHEMA(MatMul)
    .attrs({})
    .category(OpCategory::kMatMul)
    .inputs(2, 2)
    .outputs(1, 1)
    .infer(infer_same_as_input(0))
    .infer_shape(shape_matmul)
    .flops(flops_matmul);
SDX_OP_SCHEMA(Gemm)
    .attrs({{"alpha", AttrType::kFloat},
            {"beta", AttrType::kFloat},
            {"broadcast", AttrType::kInt},
            {"transA", AttrType::kInt},
            {"transB", AttrType::kInt}})
    .category(OpCategory::kMatMul)
    .inputs(2, 3)
    .outputs(1, 1)
    .infer(infer_same_as_input(0))
    .infer_shape(shape_gemm)
    .flops(flops_gemm);

SDX_OP_SCHEMA(Conv)
    .attrs({{"auto_pad", AttrType::kString},
            {"dilations", AttrType::kInts},
            {"group", AttrType::kInt},
            {"kernel_shape", AttrType::kInts},
            {"pads", AttrType::kInts},
            {"strides", AttrType::kInts}})
    .category(OpCategory::kConv)
    .inputs(2, 3)
    .outputs(1, 1)
    .infer(infer_same_as_input(0))
    .infer_shape(shape_conv_pool(ConvPoolKind::kConv))
    .flops(flops_conv);
SDX_OP_SCHEMA(ConvTranspose)
    .attrs({{"auto_pad", AttrType::kString},
            {"dilations", AttrType::kInts},
            {"group", AttrType::kInt},
            {"kernel_shape", AttrType::kInts},
            {"output_padding", AttrType::kInts},
            {"output_shape", AttrType::kInts},
            {"pads", AttrType::kInts},
            {"strides", AttrType::kInts}})
    .category(OpCategory::kConv)
    .inputs(2, 3)
    .outputs(1, 1)
    .infer(infer_same_as_input(0))
    .flops(flops_conv_transpose);
SDX_OP_SCHEMA(DeformConv)
    .attrs({{"dilations", AttrType::kInts},
            {"group", AttrType::kInt},
            {"kernel_shape", AttrType::kInts},
            {"offset_group", AttrType::kInt},
            {"pads", AttrType::kInts},
            {"strides", AttrType::kInts}})
    .category(OpCategory::kConv)
    .inputs(3, 5)
    .outputs(1, 1)
    .infer(infer_same_as_input(0));

SDX_OP_SCHEMA(AveragePool)
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
    .infer(infer_same_as_input(0))
    .infer_shape(shape_conv_pool(ConvPoolKind::kPool));
SDX_OP_SCHEMA(MaxPool)
    .attrs({{"auto_pad", AttrType::kString},
            {"ceil_mode", AttrType::kInt},
            {"dilations", AttrType::kInts},
            {"kernel_shape", AttrType::kInts},
            {"pads", AttrType::kInts},
            {"storage_order", AttrType::kInt},
            {"strides", AttrType::kInts}})
    .category(OpCategory::kOther)
    .inputs(1, 1)
    .outputs(1, 2)
    .infer(infer_first_same_rest_int64)
    .infer_shape(shape_conv_pool(ConvPoolKind::kPool));
SDX_OP_SCHEMA(LpPool)
    .attrs({{"auto_pad", AttrType::kString},
            {"ceil_mode", AttrType::kInt},
            {"dilations", AttrType::kInts},
            {"kernel_shape", AttrType::kInts},
            {"p", AttrType::kUndefined},
            {"pads", AttrType::kInts},
            {"strides", AttrType::kInts}})
    .category(OpCategory::kOther)
    .inputs(1, 1)
    .outputs(1, 1)
    .infer(infer_same_as_input(0))
    .infer_shape(shape_conv_pool(ConvPoolKind::kPool));
SDX_OP_SCHEMA(GlobalAveragePool)
    .attrs({})
    .category(OpCategory::kReduction)
    .inputs(1, 1)
    .outputs(1, 1)
    .infer(infer_same_as_input(0))
    .infer_shape(shape_conv_pool(ConvPoolKind::kGlobalPool));
SDX_OP_SCHEMA(GlobalMaxPool)
    .attrs({})
    .category(OpCategory::kReduction)
    .inputs(1, 1)
    .outputs(1, 1)
    .infer(infer_same_as_input(0))
    .infer_shape(shape_conv_pool(ConvPoolKind::kGlobalPool));
SDX_OP_SCHEMA(GlobalLpPool)
    .attrs({{"p", AttrType::kUndefined}})
    .category(OpCategory::kReduction)
    .inputs(1, 1)
    .outputs(1, 1)
    .infer(infer_same_as_input(0))
    .infer_shape(shape_conv_pool(ConvPoolKind::kGlobalPool));
// The output shape may come from the optional output_shape input.
SDX_OP_SCHEMA(MaxUnpool)
    .attrs({{"kernel_shape", AttrType::kInts}, {"pads", AttrType::kInts}, {"strides", AttrType::kInts}})
    .category(OpCategory::kScatter)
    .inputs(2, 3)
    .outputs(1, 1)
    .data_dependent_on({2})
    .infer(infer_same_as_input(0));

// Output sizes come from the scales/sizes input values.
SDX_OP_SCHEMA(Resize)
    .attrs({{"antialias", AttrType::kInt},
            {"axes", AttrType::kInts},
            {"coordinate_transformation_mode", AttrType::kString},
            {"cubic_coeff_a", AttrType::kFloat},
            {"exclude_outside", AttrType::kInt},
            {"extrapolation_value", AttrType::kFloat},
            {"keep_aspect_ratio_policy", AttrType::kString},
            {"mode", AttrType::kString},
            {"nearest_mode", AttrType::kString}})
    .category(OpCategory::kOther)
    .inputs(1, 4)
    .outputs(1, 1)
    .data_dependent_on({1, 2, 3})
    .infer(infer_same_as_input(0));
SDX_OP_SCHEMA(Upsample)
    .attrs({{"height_scale", AttrType::kFloat},
            {"mode", AttrType::kString},
            {"scales", AttrType::kFloats},
            {"width_scale", AttrType::kFloat}})
    .category(OpCategory::kOther)
    .inputs(1, 2)
    .outputs(1, 1)
    .data_dependent_on({1})
    .infer(infer_same_as_input(0));
SDX_OP_SCHEMA(GridSample)
    .attrs({{"align_corners", AttrType::kInt}, {"mode", AttrType::kString}, {"padding_mode", AttrType::kString}})
    .category(OpCategory::kGather)
    .inputs(2, 2)
    .outputs(1, 1)
    .infer(infer_same_as_input(0));
// The output shape is the value of the size input.
SDX_OP_SCHEMA(AffineGrid)
    .attrs({{"align_corners", AttrType::kInt}})
    .category(OpCategory::kOther)
    .inputs(2, 2)
    .outputs(1, 1)
    .data_dependent_on({1})
    .infer(infer_same_as_input(0));

SDX_OP_SCHEMA(RoiAlign)
    .attrs({{"coordinate_transformation_mode", AttrType::kString},
            {"mode", AttrType::kString},
            {"output_height", AttrType::kInt},
            {"output_width", AttrType::kInt},
            {"sampling_ratio", AttrType::kInt},
            {"spatial_scale", AttrType::kFloat}})
    .category(OpCategory::kOther)
    .inputs(3, 3)
    .outputs(1, 1)
    .infer(infer_same_as_input(0));
// The number of selected boxes depends on the scores.
SDX_OP_SCHEMA(NonMaxSuppression)
    .attrs({{"center_point_box", AttrType::kInt}})
    .category(OpCategory::kOther)
    .inputs(2, 5)
    .outputs(1, 1)
    .data_dependent()
    .infer(infer_fixed_type(DType::kInt64));

}  // namespace sdx::ir
