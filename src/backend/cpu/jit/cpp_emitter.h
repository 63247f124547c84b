// The C++ emitter: lowers a SegmentIR to one self-contained C++ translation unit that the
// system compiler builds into a shared library (compiler.h) exporting
//
//   extern "C" const char sdx_jit_abi[];          // kJitAbi: the contract below
//   extern "C" const long long sdx_jit_numel;      // the frozen domain size
//   extern "C" void sdx_jit_segment(const float* const* in, float* const* out,
//                                   long long begin, long long end);
//
// sdx_jit_segment computes domain elements [begin, end): in[k] is the IR's input k, out[k]
// its output k. Shapes are constants of the source, never arguments: a library only serves
// the shapes it was generated for. Each element loads its inputs before it stores any
// output, so an output may be the very buffer of an input read at the same index.
//
// Bit-exactness: every operation is the prelude function of jit_ops.inc, written with the
// formula of the CPU kernel (same float operations in the same order, the same libm calls, the same
// NaN propagation), and kCompileFlags keeps the compiler from reassociating, contracting or assuming
// finite values (-fno-fast-math: no -ffinite-math-only, under which `isnan` folds to false;
// -ffp-contract=off). The prelude writes every select branch-free (both arms computed, NaN tests as
// `x != x`), so the loop vectorizes at the ISA of compile_flags().
//
//   std::string src = emit_cpp(ir);
#pragma once

#include <string>

#include "backend/cpu/jit/segment_ir.h"

namespace sdx::jit {

inline constexpr const char* kJitAbi = "sdx-jit-cpp/1";
// -fno-trapping-math only lets the compiler evaluate both arms of a select (LeakyRelu's alpha * x)
// and so vectorize it; no result changes.
inline constexpr const char* kCompileFlags =
    "-std=c++17 -O2 -fPIC -shared -fno-fast-math -ffp-contract=off -fno-trapping-math -w";

// kCompileFlags plus the instruction set of the hand kernels (simd::active_isa(): -mavx2, or
// AVX-512's F/VL/BW/DQ), so a generated loop runs at the width the unfused kernels run at. Part of
// the disk-cache key (disk_cache.h): a kernel built for one level is never loaded at another.
std::string compile_flags();

std::string emit_cpp(const SegmentIR& ir);

}  // namespace sdx::jit
