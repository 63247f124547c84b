// oneDNN (Debian's libdnnl-dev, CPU runtime OpenMP) as the engine behind the float Conv and pooling
// kernels: whether it is built in and switched on, and the two things every oneDNN call in sdx needs.
//
//   if (onednn_enabled()) {
//     OneDnnSingleThread one;              // oneDNN runs on this thread only while `one` lives
//     ... create primitives / execute them (inside a cpu::parallel_for chunk) ...
//   }
//
// Threading. oneDNN's CPU runtime here is OpenMP: left alone it opens an OpenMP team of one thread
// per core for every primitive, on top of the session's ThreadPool (oversubscription: both sets of
// threads spin, and on 2 cores a 2-thread team next to a spinning pool worker ran 2-7x slower than
// split work, see bench/README.md "Convolution"). So sdx calls oneDNN single-threaded, from inside
// cpu::parallel_for chunks, each chunk with its own primitive over a slice of the work (output
// channels for Conv, planes for pooling). Primitives are created under the same guard, because
// oneDNN fixes a primitive's thread count (and its blocking) when it is created.
//
// Kill switch: SDX_NO_ONEDNN=1 (read once) sends every op back to the reference kernels; tests flip it
// with set_onednn_enabled() to compare both paths in one process.
#pragma once

namespace sdx::cpu {

// True when sdx was built with SDX_WITH_ONEDNN.
bool onednn_built();
// True when built in and not switched off (SDX_NO_ONEDNN=1 or set_onednn_enabled(false)).
bool onednn_enabled();
// For tests: routes kernels created and run after the call (not already prepared bound calls).
void set_onednn_enabled(bool enabled);

// Sets OpenMP's thread count for the calling thread to 1 for the guard's lifetime and restores the
// previous value after, so a caller's own OpenMP code keeps its setting. No-op without oneDNN.
class OneDnnSingleThread {
 public:
  OneDnnSingleThread();
  ~OneDnnSingleThread();
  OneDnnSingleThread(const OneDnnSingleThread&) = delete;
  OneDnnSingleThread& operator=(const OneDnnSingleThread&) = delete;

 private:
  int previous_ = 0;
};

}  // namespace sdx::cpu
