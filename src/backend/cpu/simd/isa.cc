#include "backend/cpu/simd/isa.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "backend/cpu/simd/kernel_table.h"

namespace sdx::cpu::simd {
namespace {

Isa detect() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  // The AVX-512 kernels also use AVX2/FMA instructions (the 256-bit tails of conversions).
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (avx2 && __builtin_cpu_supports("avx512f") && avx512_table() != nullptr) return Isa::kAvx512;
  if (avx2 && avx2_table() != nullptr) return Isa::kAvx2;
#endif
  return Isa::kScalar;
}

Isa from_env(Isa detected) {
  const char* v = std::getenv("SDX_CPU_ISA");
  if (v == nullptr || *v == '\0') return detected;
  Isa want = detected;
  if (std::strcmp(v, "scalar") == 0) want = Isa::kScalar;
  else if (std::strcmp(v, "avx2") == 0) want = Isa::kAvx2;
  else if (std::strcmp(v, "avx512") == 0) want = Isa::kAvx512;
  return static_cast<int>(want) < static_cast<int>(detected) ? want : detected;
}

// -1 until the first active_isa() call. Relaxed is enough: the value is a plain level, and the
// tables it selects are constant-initialized.
std::atomic<int> g_active{-1};

}  // namespace

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::kScalar: return "scalar";
    case Isa::kAvx2: return "avx2";
    case Isa::kAvx512: return "avx512";
  }
  return "unknown";
}

Isa detected_isa() {
  static const Isa detected = detect();
  return detected;
}

Isa active_isa() {
  int v = g_active.load(std::memory_order_relaxed);
  if (v < 0) {
    v = static_cast<int>(from_env(detected_isa()));
    int expected = -1;
    if (!g_active.compare_exchange_strong(expected, v, std::memory_order_relaxed)) v = expected;
  }
  return static_cast<Isa>(v);
}

Isa force_isa(Isa isa) {
  const Isa previous = active_isa();
  const Isa detected = detected_isa();
  const Isa level = static_cast<int>(isa) < static_cast<int>(detected) ? isa : detected;
  g_active.store(static_cast<int>(level), std::memory_order_relaxed);
  return previous;
}

const KernelTable& active_table() {
  switch (active_isa()) {
    case Isa::kAvx512: return *avx512_table();
    case Isa::kAvx2: return *avx2_table();
    case Isa::kScalar: break;
  }
  return *scalar_table();
}

}  // namespace sdx::cpu::simd
