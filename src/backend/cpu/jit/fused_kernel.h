// The bound form of a compiled segment: one BoundKernel that replaces the segment's steps in a
// replay handle (runtime/replay.h). Pointers are baked in like any bound kernel's; the shapes are
// the library's own constants. Elements are independent, so splitting the domain over the
// session's thread pool (cpu::parallel_for) gives the same bits as one pass.
//
//   std::unique_ptr<backend::BoundKernel> k = bind_segment(compiled, {x, c0}, {y});
//   SDX_RETURN_IF_ERROR(k->run(), "");
#pragma once

#include <memory>
#include <vector>

#include "backend/kernel.h"
#include "backend/cpu/jit/compiled_segment.h"

namespace sdx::jit {

// `c` must be READY when run() is first called (it may still be PENDING when binding); in/out hold
// one pointer per IR input/output, each to a buffer of the IR's shape. Inputs marked in `snapshot`
// (those sharing memory with an output, read at other positions than the output writes) are
// copied to the kernel's own buffer before each run, so stores never clobber what is still to be read.
std::unique_ptr<backend::BoundKernel> bind_segment(std::shared_ptr<const CompiledSegment> c, std::vector<const float*> in,
                                                   std::vector<float*> out, const std::vector<bool>& snapshot = {});

// Runs `c` once over its whole domain on the calling thread (capture-time checks).
void run_segment(const CompiledSegment& c, const float* const* in, float* const* out);

}  // namespace sdx::jit
