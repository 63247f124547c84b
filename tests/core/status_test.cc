#include "core/status.h"

#include <gtest/gtest.h>

namespace sdx {
namespace {

Status fails() { return invalid_argument("bad thing"); }
Status wraps() {
  SDX_RETURN_IF_ERROR(fails(), "while loading");
  return Status::ok();
}
Result<int> half(int x) {
  if (x % 2) return invalid_argument("odd");
  return x / 2;
}
Status use_half(int x, int* out) {
  SDX_ASSIGN_OR_RETURN(*out, half(x), "halving " + std::to_string(x));
  return Status::ok();
}

TEST(Status, OkHasNoMessage) {
  Status s;
  EXPECT_TRUE(s.is_ok());
  EXPECT_EQ(s.to_string(), "OK");
}

TEST(Status, ContextIsPrepended) {
  Status s = wraps();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "while loading: bad thing");
}

TEST(Status, AssignOrReturn) {
  int v = 0;
  EXPECT_TRUE(use_half(4, &v).is_ok());
  EXPECT_EQ(v, 2);
  Status s = use_half(3, &v);
  EXPECT_EQ(s.message(), "halving 3: odd");
}

}  // namespace
}  // namespace sdx
