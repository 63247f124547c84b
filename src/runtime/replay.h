// ReplayHandle: the CPU replay handle of a captured plan (the CPU counterpart of
// a CUDA graph exec). Capture walks the plan once, executing the call it happens
// in, and binds each step:
//   CAPTURED      all inputs live at fixed addresses (static inputs, initializers,
//                 frozen memory) and the outputs are frozen buffers. The kernel's
//                 prepare() gives a BoundKernel (a bound call), or the step replays
//                 through Kernel::run() into the same frozen buffers, checked after
//                 each call to have kept address, type and shape;
//   GAP           data-dependent steps (NonZero, control flow, ...): run eagerly;
//   SLOT_BY_SLOT  steps that read a gap's (or another eager step's) output: eager.
// Replay copies the caller's inputs into the static input buffers and walks the
// flat array of steps. A call made only of bound calls does no shape work, no
// allocation, no hashing and no lookups. If an eagerly run step's frozen output
// changes type or shape (a Reshape fed its shape by an input), replay stops and
// reports divergence; the caller reruns the call slot by slot and stops replaying.
//
// CPU_JIT: a segment of the entry's JitPlan whose steps were all captured as bound calls is
// armed for fusion. The first replay that finds its compiled kernel READY runs the kernel into
// scratch memory just before the segment's first step, runs the unfused steps as usual, and
// compares their outputs bit for bit with the kernel's; when they agree, the segment's steps are
// replaced by one bound call of the kernel from the next replay on (that one replay is the only
// one that allocates). A kernel that disagrees, or that failed to compile, leaves the unfused
// steps in place for good; the JitPlan says why. Until it resolves, each replay costs one
// acquire load per armed segment.
//
// Inter-op parallelism: when the plan was compiled in waves (SessionOptions::inter_op_num_threads
// > 1), consecutive bound calls of one wave form a concurrent group, run at the same time over the
// session's pool (cpu::parallel_for over the group's calls; each call's own parallel_for then runs
// inline on its thread). The plan widened liveness to whole waves, so no two calls of a group share
// memory. Eager steps, and fused segments spanning waves, run one at a time between groups.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "backend/cpu/jit/compiled_segment.h"

#include "backend/kernel.h"
#include "runtime/graph_executor.h"
#include "runtime/plan_entry.h"
#include "runtime/step_profile.h"
#include "runtime/tensor_arg.h"

namespace sdx::runtime {

struct ReplayCapturer;

class ReplayHandle {
 public:
  // Captures `entry` (SHAPES_FROZEN) and executes this call: args[i] is the value of
  // input_values[i]; output_values are the requested outputs; `variables` override
  // initializers (value index -> tensor). Returns null, with entry.no_replay_reason set,
  // when the plan cannot be captured.
  //
  // bind_only: binds every step without executing any (the inputs are copied in, unless args is null:
  // a plan bound at load; the caller then replays). Used for a plan frozen from a record (a bundle or the disk plan cache), whose
  // shapes are known before any run. Possible when each step binds to a BoundKernel or is a view shaped
  // by constants; otherwise returns null with entry.no_replay_reason unset and *must_run (if given) set to
  // the first step that needs a run, and the caller captures by executing instead.
  static Result<std::unique_ptr<ReplayHandle>> capture(const GraphExecutor& exec, PlanEntry& entry,
                                                       const std::vector<const ir::Value*>& input_values,
                                                       const TensorArg* args,
                                                       const std::vector<const ir::Value*>& output_values,
                                                       const std::vector<std::pair<int, Tensor>>& variables,
                                                       bool bind_only = false,
                                                       const ir::Node** must_run = nullptr);

  // Runs the call. *diverged is set (and an OK status returned) when the captured bindings
  // no longer hold for these input values; outputs are then not valid.
  Status replay(const TensorArg* args, bool* diverged);

  // Replays like replay(), one call after another (no concurrent groups, no JIT swap), calling
  // observer(first_step, last_step, frame) after each call; a fused JIT segment is one call over its
  // steps, whose values consumed only inside the segment are not materialized. For the replay checker.
  using OpObserver = std::function<void(int first_step, int last_step, const Frame& frame)>;
  Status replay_observed(const TensorArg* args, const OpObserver& observer, bool* diverged);

  // The value of requested output i after a capture or replay.
  const Datum& output(size_t i) const;
  // True when output i stays at one address across replays (a frozen buffer).
  bool output_is_static(size_t i) const { return output_static_[i]; }

  const std::vector<NodePhase>& node_phases() const { return node_phases_; }
  int num_bound() const { return num_bound_; }  // steps with a BoundKernel
  int count(NodePhase p) const;
  int num_fused_segments() const { return num_fused_; }
  int num_elided() const { return num_elided_; }  // view steps replay skips (see Kernel::is_view)
  // Graph inputs copied straight into a bound call's output (BoundKernel::input_placement).
  int num_placed_inputs() const { return num_placed_inputs_; }
  // Borrowed inputs (PlanEntry::borrowed): false when one of args is not where the capture read it, so
  // this handle cannot replay the call.
  bool inputs_in_place(const TensorArg* args) const;
  // True when a requested output is (a view of) a borrowed input, after a capture.
  bool outputs_alias_borrowed() const;
  // Inter-op: groups of calls run concurrently, and the calls in them (0 without waves).
  int num_concurrent_groups() const;
  int num_concurrent_steps() const;

 private:
  friend struct ReplayCapturer;  // capture's working state (replay.cc)
  struct Op {
    const backend::BoundKernel* bound = nullptr;  // null: eager through Kernel::run()
    int step = 0;
    int last_step = 0;                            // > step for a fused segment
    uint32_t verify_begin = 0, verify_end = 0;    // frozen outputs to check after an eager run
    uint32_t release_begin = 0, release_end = 0;  // eager slots whose last reader is this step
    const char* op_name = "";    // interned, for the op timing tracker ("sdx.JitSegment" when fused)
    const char* node_name = "";  // interned (a fused segment's first node)
    StepProfile profile;         // for kernel events (a fused segment: its steps' bytes summed)
    bool elided = false;         // a view step replay skips (Kernel::is_view); dropped after capture
  };
  struct Expect {
    int value;
    const void* data;
    DType dtype;
    Shape shape;
  };
  struct InputCopy {
    void* dst;
    size_t bytes;     // raw bytes to copy (packed types included)
    int64_t strings;  // or, for string inputs, the number of std::string elements
    // Placed in a bound call's output (BoundKernel::input_placement): the bytes go as `rows` runs of
    // bytes / rows at dst + r * stride. 0: one contiguous run.
    size_t rows = 0, stride = 0;
    // A borrowed input (PlanEntry::borrowed): nothing is copied; the plan reads the caller's array at
    // this address, which every replay must pass again.
    const void* borrowed = nullptr;
  };
  // A JIT segment waiting for its kernel (see the header comment).
  struct ArmedSegment {
    size_t segment = 0;  // index in the JitPlan
    std::shared_ptr<const jit::CompiledSegment> compiled;
    std::vector<const float*> in;
    std::vector<float*> out;
    std::vector<std::vector<float>> scratch;  // the kernel's outputs in the checking replay
    std::vector<float*> scratch_out;          // their addresses
    std::unique_ptr<backend::BoundKernel> kernel;  // bound when armed, so swapping allocates nothing
    // The same kernel bound to the scratch outputs: run (on the intra-op threads, as `kernel` would
    // be) and timed in the checking replay.
    std::unique_ptr<backend::BoundKernel> probe;
    bool probing = false, matched = false;
    int64_t fused_ns = 0, unfused_ns = 0, unfused_from_ns = 0;  // the checking replay's timings
  };
  static void copy_input(const InputCopy& c, const void* src);
  void copy_inputs(const TensorArg* args) const;
  Status run_op(const Op& op, bool* diverged);
  // The bound call, timed when the op timing tracker is on (one relaxed load when it is not).
  static Status run_bound(const Op& op);
  static Status run_bound_observed(const Op& op);
  // Arms the segments of entry.jit whose steps were all bound (end of capture).
  void arm_segments(PlanEntry& entry);
  bool segment_resolved() const;
  // A replay that checks the READY kernels against the unfused steps, then swaps them in.
  Status replay_swapping(bool* diverged);
  // Runs a READY kernel into its scratch, timed (replay_swapping, at the segment's first step).
  Status probe_segment(ArmedSegment& a);
  // Records each probed kernel's check and timing; true when one is to be swapped in.
  bool resolve_segments();
  // Replaces the steps of every matched kernel with one fused op.
  void swap_in_fused();
  // Removes the elided view steps from ops_ (end of capture, after arm_segments).
  void drop_elided();
  // Graph inputs read only by `node` whose bound call offers them a place in its output: their
  // InputCopy is redirected there (see BoundKernel::input_placement).
  void place_inputs(const ir::Node& node, backend::BoundKernel* bound, const std::vector<const ir::Value*>& input_values,
                    const std::vector<const ir::Value*>& output_values);
  // Inter-op: cuts ops_ into groups (after capture and after a swap; allocates).
  void build_groups();
  Status run_concurrent(uint32_t begin, uint32_t end);

  ReplayHandle(const GraphExecutor& exec, const plan::Plan& plan) : exec_(exec), plan_(plan), frame_(&plan.graph(), nullptr) {}

  const GraphExecutor& exec_;
  const plan::Plan& plan_;
  Frame frame_;
  std::vector<std::unique_ptr<backend::BoundKernel>> owned_;
  std::vector<Op> ops_;
  std::vector<Expect> verify_;
  std::vector<int> release_;  // value indices
  std::vector<InputCopy> inputs_;
  std::vector<const Buffer*> borrowed_buffers_;  // the frame's tensors of the borrowed inputs
  size_t input_bytes_ = 0;  // sum of inputs_[i].bytes
  std::vector<int> output_values_;
  std::vector<bool> output_static_;
  std::vector<NodePhase> node_phases_;
  int num_bound_ = 0;
  JitPlan* jit_ = nullptr;  // the entry's (it owns this handle too)
  std::vector<ArmedSegment> armed_;
  std::vector<Op> spare_ops_;  // capacity for the ops after a swap (reserved when arming)
  int num_fused_ = 0;
  int num_elided_ = 0;
  int num_placed_inputs_ = 0;
  // Inter-op: ops_ in runs [begin, end), concurrent or one after another; empty without waves.
  struct Group {
    uint32_t begin = 0, end = 0;
    bool concurrent = false;
  };
  std::vector<Group> groups_;
  std::vector<int> wave_of_step_;       // from the plan's wave_begin()
  std::vector<Status> group_status_;    // one per call of the largest concurrent group
};

}  // namespace sdx::runtime
