#include "backend/kernel_registry.h"

#include "ir/op_schema.h"

namespace sdx::backend {
namespace {
class FunctionKernel final : public Kernel {
 public:
  explicit FunctionKernel(KernelFn fn) : fn_(std::move(fn)) {}
  Status run(KernelContext& ctx) const override { return fn_(ctx); }

 private:
  KernelFn fn_;
};

std::string key_of(const std::string& op, const std::string& domain) { return ir::normalize_domain(domain) + "::" + op; }
}  // namespace

KernelFactory function_kernel(KernelFn fn) {
  return [fn = std::move(fn)](const ir::Node&) -> Result<std::unique_ptr<Kernel>> {
    return std::unique_ptr<Kernel>(std::make_unique<FunctionKernel>(fn));
  };
}

KernelRegistry& KernelRegistry::cpu() {
  static KernelRegistry* registry = new KernelRegistry();  // never destroyed: used by static registrars
  return *registry;
}

void KernelRegistry::add(KernelDef def) {
  std::string key = key_of(def.op, def.domain);
  defs_[key].push_back(std::move(def));
}

const KernelDef* KernelRegistry::find(const std::string& op, const std::string& domain, int opset) const {
  auto it = defs_.find(key_of(op, domain));
  if (it == defs_.end()) return nullptr;
  for (const KernelDef& d : it->second)
    if (opset >= d.since_version && opset <= d.until_version) return &d;
  return nullptr;
}

const KernelDef* KernelRegistry::find(const ir::Node& node) const {
  return find(node.op_type(), node.domain(), node.opset());
}

std::vector<std::string> KernelRegistry::op_names() const {
  std::vector<std::string> out;
  for (const auto& [k, v] : defs_) out.push_back(k);
  return out;
}

}  // namespace sdx::backend
