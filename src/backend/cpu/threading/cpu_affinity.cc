#include "backend/cpu/threading/cpu_affinity.h"

#if defined(__linux__)
#include <sched.h>
#define SDX_AFFINITY 1
#endif

namespace sdx::cpu {

int current_cpu() {
#if SDX_AFFINITY
  return sched_getcpu();
#else
  return -1;
#endif
}

std::vector<int> allowed_cpus() {
  std::vector<int> cpus;
#if SDX_AFFINITY
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
#endif
  return cpus;
}

bool move_off_cpu(int cpu, const std::vector<int>& cpus) {
#if SDX_AFFINITY
  if (cpu < 0) return false;
  cpu_set_t set;
  CPU_ZERO(&set);
  int others = 0;
  for (int c : cpus)
    if (c != cpu && c >= 0 && c < CPU_SETSIZE) {
      CPU_SET(c, &set);
      ++others;
    }
  // Nowhere else to go: stay, sharing it.
  return others > 0 && sched_setaffinity(0, sizeof set, &set) == 0;
#else
  (void)cpu;
  (void)cpus;
  return false;
#endif
}

}  // namespace sdx::cpu
