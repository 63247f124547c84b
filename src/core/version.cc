#include "core/version.h"

#if defined(__linux__)
#include <elf.h>
#include <link.h>
#endif

#include <cstdint>
#include <cstring>
#include <utility>

#ifndef SDX_VERSION_STRING
#error "SDX_VERSION_STRING is set by CMakeLists.txt (the project version)"
#endif

namespace sdx {

const char* version() { return SDX_VERSION_STRING; }

namespace {

#if defined(__linux__)
// Finds the loaded object whose segments hold `addr`, then its NT_GNU_BUILD_ID note.
struct BuildIdSearch {
  uintptr_t addr = 0;
  std::string hex;
};

int visit_object(dl_phdr_info* info, size_t, void* data) {
  auto* s = static_cast<BuildIdSearch*>(data);
  bool mine = false;
  for (int i = 0; i < info->dlpi_phnum && !mine; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    const uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
    mine = ph.p_type == PT_LOAD && s->addr >= lo && s->addr < lo + ph.p_memsz;
  }
  if (!mine) return 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE) continue;
    const auto* p = reinterpret_cast<const unsigned char*>(info->dlpi_addr + ph.p_vaddr);
    const unsigned char* end = p + ph.p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
      ElfW(Nhdr) n;
      std::memcpy(&n, p, sizeof n);
      const unsigned char* name = p + sizeof n;
      const unsigned char* desc = name + ((n.n_namesz + 3) & ~3u);
      const unsigned char* next = desc + ((n.n_descsz + 3) & ~3u);
      if (next > end) break;
      if (n.n_type == NT_GNU_BUILD_ID && n.n_namesz == 4 && std::memcmp(name, "GNU", 4) == 0) {
        static const char* kHex = "0123456789abcdef";
        for (uint32_t j = 0; j < n.n_descsz; ++j) {
          s->hex += kHex[desc[j] >> 4];
          s->hex += kHex[desc[j] & 15];
        }
        return 1;
      }
      p = next;
    }
  }
  return 1;  // the object, without a build ID
}
#endif

}  // namespace

const std::string& build_id() {
  static const std::string id = [] {
    std::string hex;
#if defined(__linux__)
    BuildIdSearch s;
    s.addr = reinterpret_cast<uintptr_t>(&visit_object);
    dl_iterate_phdr(&visit_object, &s);
    hex = std::move(s.hex);
#endif
    return hex;
  }();
  return id;
}

}  // namespace sdx
