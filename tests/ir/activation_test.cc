// The activation table (ir/activation_defs.inc): names are unique, each kind finds its own row, and
// "none" (the identity) has none.
#include "ir/activation.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace sdx::ir {
namespace {

TEST(ActivationTable, NamesAreUniqueAndKindsFindTheirRows) {
  std::set<std::string_view> names;
  for (const ActivationInfo& a : activations()) {
    EXPECT_TRUE(names.insert(a.name).second) << a.name;
    EXPECT_EQ(find_activation(a.name), &a);
    EXPECT_EQ(&activation_info(a.kind), &a);
    EXPECT_LE(a.min_params, a.max_params) << a.name;
    EXPECT_LE(a.max_params, 2) << a.name;
    for (int i = 0; i < a.max_params; ++i) EXPECT_FALSE(a.params[i].attribute.empty()) << a.name << " param " << i;
  }
  EXPECT_EQ(find_activation("none"), nullptr);
  EXPECT_EQ(find_activation("Relu"), nullptr);  // names, not ONNX op types
}

}  // namespace
}  // namespace sdx::ir
