// Kernel: the executable form of one graph node on one backend.
//
// A kernel is created once per node when a session loads (init() parses and
// validates attributes, so bad attributes fail at load time, naming the node),
// then run() is called for every execution until the plan is captured.
//
// Capture (the CAPTURED phase of the plan lifecycle) calls prepare() once per step
// with the frozen input and output buffers. A kernel that supports it returns a
// BoundKernel: a call with every shape decision made and every pointer baked in,
// which replay invokes with no shape work, no allocation and no lookups. Kernels
// without a bound form return null and replay calls run() for them instead. run() reads inputs from the
// KernelContext and obtains outputs from it: the executor decides where output
// memory comes from (fresh allocation, a planned buffer), kernels never keep
// pointers between calls.
//
//   class ReluKernel final : public Kernel {
//    public:
//     Status run(KernelContext& ctx) const override {
//       const Tensor& x = ctx.input(0);
//       SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, x.dtype(), x.shape()), "Relu");
//       ...
//       return Status::ok();
//     }
//   };
//   const KernelRegistrar kRelu({"Relu", "", 1, kAnyOpset, kernel_factory<ReluKernel>()});
#pragma once

#include <climits>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/datum.h"
#include "core/status.h"
#include "core/tensor.h"
#include "ir/graph.h"

namespace sdx::backend {

class PackedWeights;

class KernelContext {
 public:
  virtual ~KernelContext() = default;

  virtual const ir::Node& node() const = 0;

  virtual int num_inputs() const = 0;
  // True when input i is given and holds a value (omitted optional inputs are absent).
  virtual bool has_input(int i) const = 0;
  // The tensor at input i. Only valid when has_input(i) and the value is a tensor.
  virtual const Tensor& input(int i) const = 0;
  virtual const Datum& input_datum(int i) const = 0;

  virtual int num_outputs() const = 0;
  // False when output i is omitted by the node (kernels may skip computing it).
  virtual bool wants_output(int i) const = 0;
  // Storage for output i with the given type and shape.
  virtual Result<Tensor> allocate_output(int i, DType dtype, const Shape& shape) = 0;
  // Publishes an existing tensor (e.g. a view of an input) as output i.
  virtual Status set_output(int i, Tensor t) = 0;
  virtual Status set_output_datum(int i, Datum d) = 0;

  // Runs a subgraph (If branch, Loop/Scan body) with the given inputs; outer-scope
  // values resolve against the frame this node runs in.
  virtual Result<std::vector<Datum>> run_subgraph(const ir::Graph& graph, std::vector<Datum> inputs) = 0;

  // Convenience: "node 'name' (Op)" for error messages.
  std::string where() const { return node().describe(); }
};

// One node bound to fixed buffers and shapes. run() recomputes the outputs from the
// addresses baked in at prepare() time; it must not allocate. It may still fail on
// bad values (an index out of range), never on shapes: those were checked in prepare().
class BoundKernel {
 public:
  virtual ~BoundKernel() = default;
  virtual Status run() const = 0;

  // Where input i's elements go in this call's outputs when the call only copies them there (Concat):
  // `rows` runs of `row_bytes` bytes, run r at dst + r * stride. The runtime may then write a graph
  // input straight to that place (the caller's array to the KV cache's present output) and call
  // adopt_placed_input(i), after which run() no longer copies input i (nor reads its buffer).
  struct InputPlacement {
    char* dst = nullptr;
    size_t row_bytes = 0, rows = 0, stride = 0;
  };
  virtual bool input_placement(int i, InputPlacement* where) const {
    (void)i;
    (void)where;
    return false;
  }
  virtual void adopt_placed_input(int i) { (void)i; }
};

// Wraps a callable `Status()` as a BoundKernel:
//   return bind_call([=] { for (int64_t i = 0; i < n; ++i) y[i] = x[i] + 1; return Status::ok(); });
template <typename F>
std::unique_ptr<BoundKernel> bind_call(F fn) {
  class Bound final : public BoundKernel {
   public:
    explicit Bound(F f) : f_(std::move(f)) {}
    Status run() const override { return f_(); }

   private:
    F f_;
  };
  return std::make_unique<Bound>(std::move(fn));
}

// What prepare() sees: one step's frozen inputs and outputs. Input and output
// tensors keep their addresses for as long as the bound call lives.
class PrepareContext {
 public:
  virtual ~PrepareContext() = default;
  virtual const ir::Node& node() const = 0;
  virtual int num_inputs() const = 0;
  virtual bool has_input(int i) const = 0;
  // Only valid when has_input(i). The values change from call to call unless input_is_constant(i).
  virtual const Tensor& input(int i) const = 0;
  // True when input i holds the same values on every call (an initializer), so prepare() may
  // read them (axes, shapes, weights to pre-pack).
  virtual bool input_is_constant(int i) const = 0;
  virtual int num_outputs() const = 0;
  virtual bool wants_output(int i) const = 0;
  // The frozen buffer for output i, with the element type and shape recorded during warmup.
  // Only valid when wants_output(i).
  virtual const Tensor& output(int i) const = 0;
  // Packed weights to find (a bundle's) or to record (compiling one); null when neither
  // (backend/packed_weights.h). Keys start with packed_key_prefix().
  virtual PackedWeights* packed_weights() const { return nullptr; }
  // This step's prefix for packed-weight keys: its node's first output, unique in a graph.
  std::string packed_key_prefix() const {
    return node().num_outputs() > 0 && node().output(0) ? node().output(0)->name() : node().name();
  }

  std::string where() const { return node().describe(); }
};

class Kernel {
 public:
  virtual ~Kernel() = default;
  // Parses and validates attributes. Called once at load time.
  virtual Status init(const ir::Node& node) {
    (void)node;
    return Status::ok();
  }
  // Runs the node. const: one kernel serves every thread running the session at
  // once, so everything run() needs beyond init()'s results lives on the stack or
  // in the context.
  virtual Status run(KernelContext& ctx) const = 0;
  // Binds this node to the frozen buffers in ctx for replay. Returns null when this
  // kernel (or this dtype/shape combination) has no bound form. A kernel must check that
  // each output has exactly the element type and shape run() would produce for these
  // inputs and return null otherwise; the runtime then replays the step through run().
  virtual Result<std::unique_ptr<BoundKernel>> prepare(const PrepareContext& ctx) const {
    (void)ctx;
    return std::unique_ptr<BoundKernel>();
  }
  // True when run() only sets its outputs to views of input 0 (no element is read or written) whose
  // shapes follow from the inputs' shapes and the values of the other inputs. Replay then skips the
  // step when input 0 keeps its buffer and every other input is a constant: the view it made at
  // capture stays valid, its elements being input 0's current ones (Reshape, Squeeze...).
  virtual bool is_view() const { return false; }
};

using KernelFactory = std::function<Result<std::unique_ptr<Kernel>>(const ir::Node&)>;

inline constexpr int kAnyOpset = INT_MAX;

struct KernelDef {
  std::string op;
  std::string domain;  // "" for the ONNX default domain
  int since_version = 1;
  int until_version = kAnyOpset;  // inclusive
  KernelFactory create;
};

template <typename K>
KernelFactory kernel_factory() {
  return [](const ir::Node& node) -> Result<std::unique_ptr<Kernel>> {
    auto k = std::make_unique<K>();
    SDX_RETURN_IF_ERROR(k->init(node), node.describe());
    return std::unique_ptr<Kernel>(std::move(k));
  };
}

// A stateless kernel from a function.
using KernelFn = std::function<Status(KernelContext&)>;
KernelFactory function_kernel(KernelFn fn);

}  // namespace sdx::backend
