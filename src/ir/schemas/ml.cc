// Schemas for the ONNX-ML domain ("ai.onnx.ml"): LabelEncoder, ArrayFeatureExtractor,
// Binarizer, TreeEnsemble, TreeEnsembleClassifier, TreeEnsembleRegressor.
#include "ir/op_schema.h"

namespace sdx::ir {
namespace {

constexpr const char* kMl = "ai.onnx.ml";

// LabelEncoder's output type comes from whichever values_* attribute is set.
Status infer_label_encoder(Node& node) {
  Value* out = node.output(0);
  if (!out || out->type().kind != TypeInfo::Kind::kUnknown) return Status::ok();
  DType t = DType::kUndefined;
  if (node.attr("values_int64s"))
    t = DType::kInt64;
  else if (node.attr("values_floats"))
    t = DType::kFloat32;
  else if (node.attr("values_strings"))
    t = DType::kString;
  else if (const Attribute* a = node.attr("values_tensor"); a && a->t.defined())
    t = a->t.dtype();
  else if (node.attr("classes_strings")) {  // opset 1: string <-> int64
    Value* in = node.input(0);
    if (in && in->type().kind == TypeInfo::Kind::kTensor)
      t = in->type().elem == DType::kString ? DType::kInt64 : DType::kString;
  }
  if (t != DType::kUndefined) out->mutable_type() = TypeInfo::tensor(t);
  return Status::ok();
}

SDX_OP_SCHEMA_DOMAIN(LabelEncoder, kMl)
    .attrs({{"classes_strings", AttrType::kStrings},
            {"default_float", AttrType::kFloat},
            {"default_int64", AttrType::kInt},
            {"default_string", AttrType::kString},
            {"default_tensor", AttrType::kTensor},
            {"keys_floats", AttrType::kFloats},
            {"keys_int64s", AttrType::kInts},
            {"keys_strings", AttrType::kStrings},
            {"keys_tensor", AttrType::kTensor},
            {"values_floats", AttrType::kFloats},
            {"values_int64s", AttrType::kInts},
            {"values_strings", AttrType::kStrings},
            {"values_tensor", AttrType::kTensor}})

    .category(OpCategory::kElementwise)
    .inputs(1, 1)
    .outputs(1, 1)
    .infer(infer_label_encoder);
SDX_OP_SCHEMA_DOMAIN(Binarizer, kMl)
    .attrs({{"threshold", AttrType::kFloat}})

    .category(OpCategory::kElementwise)
    .inputs(1, 1)
    .outputs(1, 1)
    .infer(infer_same_as_input(0));
SDX_OP_SCHEMA_DOMAIN(ArrayFeatureExtractor, kMl)
    .attrs({})

    .category(OpCategory::kGather)
    .inputs(2, 2)
    .outputs(1, 1)
    .infer(infer_same_as_input(0));
SDX_OP_SCHEMA_DOMAIN(TreeEnsemble, kMl)
    .attrs({{"aggregate_function", AttrType::kInt},
            {"leaf_targetids", AttrType::kInts},
            {"leaf_weights", AttrType::kTensor},
            {"membership_values", AttrType::kTensor},
            {"n_targets", AttrType::kInt},
            {"nodes_falseleafs", AttrType::kInts},
            {"nodes_falsenodeids", AttrType::kInts},
            {"nodes_featureids", AttrType::kInts},
            {"nodes_hitrates", AttrType::kTensor},
            {"nodes_missing_value_tracks_true", AttrType::kInts},
            {"nodes_modes", AttrType::kTensor},
            {"nodes_splits", AttrType::kTensor},
            {"nodes_trueleafs", AttrType::kInts},
            {"nodes_truenodeids", AttrType::kInts},
            {"post_transform", AttrType::kInt},
            {"tree_roots", AttrType::kInts}})

    .category(OpCategory::kOther)
    .inputs(1, 1)
    .outputs(1, 1)
    .infer(infer_same_as_input(0));

// TreeEnsembleClassifier: labels (int64, or string with classlabels_strings) and float probabilities.
Status infer_tree_classifier(Node& node) {
  if (Value* labels = node.output(0); labels && labels->type().kind == TypeInfo::Kind::kUnknown)
    labels->mutable_type() = TypeInfo::tensor(node.attr("classlabels_strings") ? DType::kString : DType::kInt64);
  if (Value* probs = node.num_outputs() > 1 ? node.output(1) : nullptr; probs && probs->type().kind == TypeInfo::Kind::kUnknown)
    probs->mutable_type() = TypeInfo::tensor(DType::kFloat32);
  return Status::ok();
}

Status infer_float_output(Node& node) {
  if (Value* y = node.output(0); y && y->type().kind == TypeInfo::Kind::kUnknown) y->mutable_type() = TypeInfo::tensor(DType::kFloat32);
  return Status::ok();
}

SDX_OP_SCHEMA_DOMAIN(TreeEnsembleClassifier, kMl)
    .attrs({{"base_values", AttrType::kFloats},
            {"base_values_as_tensor", AttrType::kTensor},
            {"class_ids", AttrType::kInts},
            {"class_nodeids", AttrType::kInts},
            {"class_treeids", AttrType::kInts},
            {"class_weights", AttrType::kFloats},
            {"class_weights_as_tensor", AttrType::kTensor},
            {"classlabels_int64s", AttrType::kInts},
            {"classlabels_strings", AttrType::kStrings},
            {"nodes_falsenodeids", AttrType::kInts},
            {"nodes_featureids", AttrType::kInts},
            {"nodes_hitrates", AttrType::kFloats},
            {"nodes_hitrates_as_tensor", AttrType::kTensor},
            {"nodes_missing_value_tracks_true", AttrType::kInts},
            {"nodes_modes", AttrType::kStrings},
            {"nodes_nodeids", AttrType::kInts},
            {"nodes_treeids", AttrType::kInts},
            {"nodes_truenodeids", AttrType::kInts},
            {"nodes_values", AttrType::kFloats},
            {"nodes_values_as_tensor", AttrType::kTensor},
            {"post_transform", AttrType::kString}})
    .category(OpCategory::kOther)
    .inputs(1, 1)
    .outputs(2, 2)
    .infer(infer_tree_classifier);
SDX_OP_SCHEMA_DOMAIN(TreeEnsembleRegressor, kMl)
    .attrs({{"aggregate_function", AttrType::kString},
            {"base_values", AttrType::kFloats},
            {"base_values_as_tensor", AttrType::kTensor},
            {"n_targets", AttrType::kInt},
            {"nodes_falsenodeids", AttrType::kInts},
            {"nodes_featureids", AttrType::kInts},
            {"nodes_hitrates", AttrType::kFloats},
            {"nodes_hitrates_as_tensor", AttrType::kTensor},
            {"nodes_missing_value_tracks_true", AttrType::kInts},
            {"nodes_modes", AttrType::kStrings},
            {"nodes_nodeids", AttrType::kInts},
            {"nodes_treeids", AttrType::kInts},
            {"nodes_truenodeids", AttrType::kInts},
            {"nodes_values", AttrType::kFloats},
            {"nodes_values_as_tensor", AttrType::kTensor},
            {"post_transform", AttrType::kString},
            {"target_ids", AttrType::kInts},
            {"target_nodeids", AttrType::kInts},
            {"target_treeids", AttrType::kInts},
            {"target_weights", AttrType::kFloats},
            {"target_weights_as_tensor", AttrType::kTensor}})
    .category(OpCategory::kOther)
    .inputs(1, 1)
    .outputs(1, 1)
    .infer(infer_float_output);

}  // namespace
}  // namespace sdx::ir
