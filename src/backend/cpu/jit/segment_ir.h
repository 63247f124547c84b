// SegmentIR: the target-neutral form of one fused kernel segment: a straight-line list of
// scalar float32 operations applied to every element of a frozen output domain. Emitters
// (cpp_emitter.h; later a CUDA/NVRTC emitter) lower it to source; nothing here knows a target.
//
// Value numbering: values 0..inputs.size()-1 are the loads of the inputs (element i of the
// domain reads input k at (i / inner) % count: the numpy broadcast of an input whose shape is
// a contiguous block of the domain's dims); value inputs.size() + j is the result of instrs[j].
// outputs name the values stored to the segment's outputs, each with the domain's shape.
//
//   SegmentIR ir;
//   ir.domain = Shape({1, 16});
//   ir.inputs = {SegmentInput::broadcast(Shape({1, 16}), ir.domain).value()};
//   ir.instrs.push_back({JitOp::kRelu, {0, -1}, 0.f});   // value 1
//   ir.outputs = {1};
//
// Shapes are frozen: a kernel generated from an IR must only ever run on buffers of exactly
// these shapes (the emitters embed them as constants).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/shape.h"
#include "core/status.h"
#include "ir/op_schema.h"

namespace sdx::jit {

enum class JitOp : uint8_t {
#define SDX_JIT_OP(e, onnx, arity, fn, exact) e,
#include "backend/cpu/jit/jit_ops.inc"
#undef SDX_JIT_OP
};

struct JitOpInfo {
  JitOp op;
  const char* onnx_op;
  int arity;
  const char* function;
  bool exact;
};
const JitOpInfo& jit_op_info(JitOp op);
// The operation an ONNX op type (default domain) lowers to, or null.
const JitOpInfo* find_jit_op(const std::string& onnx_op);

// How element i of the domain reads an input: at (i / inner) % count.
struct SegmentInput {
  Shape shape;
  int64_t inner = 1;  // product of the domain dims after the input's block
  int64_t count = 1;  // elements of the input (product of its block)
  // The access pattern of an input of `shape` broadcast to `domain` (numpy rules), when its
  // non-1 dims form one contiguous block of the domain's dims; an error otherwise.
  static Result<SegmentInput> broadcast(const Shape& shape, const Shape& domain);
};

struct SegmentInstr {
  JitOp op;
  int args[2] = {-1, -1};  // value numbers; -1 when unused
  float param = 0.f;       // LeakyRelu's alpha
};

struct SegmentIR {
  ir::OpCategory category = ir::OpCategory::kElementwise;
  Shape domain;
  std::vector<SegmentInput> inputs;
  std::vector<SegmentInstr> instrs;
  std::vector<int> outputs;

  int num_values() const { return static_cast<int>(inputs.size() + instrs.size()); }
  // The most values live at once in the element loop (a register-pressure estimate).
  int max_live_values() const;
  // Checks value numbering, arities and that every output is a value: emitters may trust a valid IR.
  Status validate() const;
  // "ELEMENTWISE float32[1, 16]: 200 ops (Add 29, Mul 29, ...), 101 inputs, 1 output"
  std::string describe() const;
};

}  // namespace sdx::jit
