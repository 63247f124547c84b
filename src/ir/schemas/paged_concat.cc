// Schema of sdx.PagedConcat (domain "sdx", opset 1): a sequence's past keys (or values) gathered from a
// shared pool of slots (a paged KV cache) and followed by the step's new ones: what Concat(past, new) on the
// KV axis gives when the past lives in the pool. Made by the paged rewrite of sdx.generate
// (python/sdx/_paged_graph.py); an sdx.Attention reading two of them becomes one sdx.PagedAttention
// (AttentionFusionOptimizations), which reads the pool without gathering. CPU kernel in
// backend/cpu/kernels/paged_concat.cc.
//
//   inputs:  cache [H, slots, D], slot_map [B, P] int64 (the slot of past token t of sequence b; -1: an
//            empty slot, zeros; -2 - j: new token j of this call, new[j / S, :, j % S]), new [B, H, S, D]
//            (the cache's element type)
//   output:  Y [B, H, P + S, D]: Y[b, h, t] = cache[h, slot_map[b, t]] for t < P (zeros for entry -1,
//            new[j / S, h, j % S] for entry -2 - j),
//            Y[b, h, P + j] = new[b, h, j]
#include "ir/op_schema.h"
#include "ir/shape_inference.h"
#include "ir/symbolic_scalar.h"

namespace sdx::ir {
namespace {

Status shape_paged_concat(Node& node) {
  const Dims* map = input_dims(node, 1);
  const Dims* fresh = input_dims(node, 2);
  if (!map || !fresh || map->size() != 2 || fresh->size() != 4) return Status::ok();
  std::optional<Dim> total = add_dims((*map)[1], (*fresh)[2]);
  set_output_dims(node, 0, {(*fresh)[0], (*fresh)[1], total ? *total : Dim{}, (*fresh)[3]});
  return Status::ok();
}

}  // namespace

SDX_OP_SCHEMA_DOMAIN(PagedConcat, "sdx")
    .attrs({})
    .category(OpCategory::kConcat)
    .inputs(3, 3)
    .outputs(1, 1)
    .infer(infer_same_as_input(0))
    .infer_shape(shape_paged_concat);

}  // namespace sdx::ir
