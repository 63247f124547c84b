// The instruction-set level the CPU kernels' vector code runs at, chosen once per process.
//
// sdx is compiled for baseline x86-64 (no -march); the vector kernels (simd/kernels_*.cc) are
// compiled once per level with that level's flags, and vector_ops.h calls the table of the
// active level. The level is detected on first use (cpuid via __builtin_cpu_supports) and can
// be lowered for tests or with SDX_CPU_ISA=scalar|avx2|avx512 in the environment:
//
//   simd::Isa isa = simd::active_isa();          // e.g. Isa::kAvx512 on a Zen 4
//   simd::ScopedIsa scalar(simd::Isa::kScalar);  // tests: run the portable fallback
//
// Results are deterministic per level (the same input gives the same bits at every thread
// count and chunking), but the levels may differ from each other in the last bits (FMA
// contraction, summation order). Changing the level while kernels run is not supported.
#pragma once

namespace sdx::cpu::simd {

enum class Isa { kScalar = 0, kAvx2 = 1, kAvx512 = 2 };

const char* isa_name(Isa isa);

// The best level this CPU and this build support.
Isa detected_isa();

// The level vector_ops.h uses now: detected_isa(), lowered by SDX_CPU_ISA or force_isa().
Isa active_isa();

// Sets the active level (clamped to detected_isa()); returns the previous one. For tests and
// benchmarks; call it while no kernel runs.
Isa force_isa(Isa isa);

// Of one kernel family's per-level tables (null where this build has no such level), the active
// level's, falling back to the next lower level the build has:
//
//   const dw::Kernels& k = simd::active_level(dw::avx512_kernels(), dw::avx2_kernels(), *dw::scalar_kernels());
template <class Table>
const Table& active_level(const Table* avx512, const Table* avx2, const Table& scalar) {
  const Isa isa = active_isa();
  if (isa == Isa::kAvx512 && avx512) return *avx512;
  if (isa >= Isa::kAvx2 && avx2) return *avx2;
  return scalar;
}

// Forces a level for a scope (tests).
class ScopedIsa {
 public:
  explicit ScopedIsa(Isa isa) : previous_(force_isa(isa)) {}
  ~ScopedIsa() { force_isa(previous_); }
  ScopedIsa(const ScopedIsa&) = delete;
  ScopedIsa& operator=(const ScopedIsa&) = delete;

 private:
  Isa previous_;
};

}  // namespace sdx::cpu::simd
