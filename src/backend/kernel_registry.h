// KernelRegistry: per-backend table of kernels keyed by (domain, op) with
// opset version ranges. Kernel files register themselves with a static
// KernelRegistrar, so adding an op adds a file, never a case in a switch.
//
//   const KernelDef* def = KernelRegistry::cpu().find(node);
//   if (!def) ... unsupported ...
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "backend/kernel.h"

namespace sdx::backend {

class KernelRegistry {
 public:
  static KernelRegistry& cpu();

  void add(KernelDef def);
  // The kernel whose version range covers node.opset(), or nullptr.
  const KernelDef* find(const ir::Node& node) const;
  const KernelDef* find(const std::string& op, const std::string& domain, int opset) const;
  std::vector<std::string> op_names() const;

 private:
  std::unordered_map<std::string, std::vector<KernelDef>> defs_;
};

struct KernelRegistrar {
  explicit KernelRegistrar(KernelDef def) { KernelRegistry::cpu().add(std::move(def)); }
};

}  // namespace sdx::backend
