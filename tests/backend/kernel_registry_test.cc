// Registry consistency: every CPU kernel has an op schema and every schema a CPU kernel,
// so `sdx inspect` and the verifier agree with what can actually run.
#include "backend/kernel_registry.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "ir/op_schema.h"

namespace sdx::backend {
namespace {

TEST(KernelRegistry, KernelsAndSchemasMatch) {
  for (const std::string& key : KernelRegistry::cpu().op_names()) {
    const size_t sep = key.find("::");
    const std::string domain = key.substr(0, sep), op = key.substr(sep + 2);
    EXPECT_NE(ir::OpSchemaRegistry::get().find(op, domain), nullptr) << "kernel without schema: " << key;
  }
  const std::vector<std::string> keys = KernelRegistry::cpu().op_names();
  for (const ir::OpSchema* s : ir::OpSchemaRegistry::get().all()) {
    const std::string key = ir::normalize_domain(s->domain()) + "::" + s->name();
    EXPECT_NE(std::find(keys.begin(), keys.end(), key), keys.end()) << "schema without kernel: " << key;
  }
}

TEST(KernelRegistry, VersionRangesAreHonoured) {
  // Scan's kernel starts at opset 8; nothing registers Scan before it.
  EXPECT_EQ(KernelRegistry::cpu().find("Scan", "", 7), nullptr);
  EXPECT_NE(KernelRegistry::cpu().find("Scan", "", 8), nullptr);
  EXPECT_NE(KernelRegistry::cpu().find("Relu", "ai.onnx", 14), nullptr);
  EXPECT_EQ(KernelRegistry::cpu().find("NoSuchOp", "", 14), nullptr);
}

}  // namespace
}  // namespace sdx::backend
