// Which CPU a thread runs on, and moving a helper thread off its caller's CPU.
//
// On a VM the scheduler may wake a new or woken thread onto the CPU of the thread that started it (an
// idle vCPU can look busy) and leave the two sharing it for milliseconds: the caller is preempted, and
// work meant to overlap runs in turn. A helper that narrows its own affinity away from the caller's CPU
// never takes the caller's CPU from it (it may still start late, when the other vCPU is slow to run).
//
//   const int caller = cpu::current_cpu();                 // on the calling thread
//   std::thread helper([caller] { cpu::move_off_cpu(caller, cpu::allowed_cpus()); ... });
#pragma once

#include <vector>

namespace sdx::cpu {

// The CPU the calling thread is on now (glibc reads it from rseq or the vDSO: no system call); -1 where
// unknown.
int current_cpu();

// The CPUs the calling thread may run on (empty where unknown).
std::vector<int> allowed_cpus();

// Narrows the calling thread's affinity to `cpus` minus `cpu` when that leaves any (true: it did). It
// never leaves `cpus`. A no-op returning false for cpu < 0, or where affinity is not supported.
bool move_off_cpu(int cpu, const std::vector<int>& cpus);

}  // namespace sdx::cpu
