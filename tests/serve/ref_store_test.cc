#include "serve/ref_store.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <thread>
#include <vector>

namespace sdx::serve {
namespace {

Value floats(std::vector<float> data) {
  const std::vector<int64_t> dims = {static_cast<int64_t>(data.size())};
  return Value::copy_of({ElementType::kFloat32, dims.data(), 1, data.data()}).value();
}

TEST(RefStore, RefsAreScopedToTheirSession) {
  RefStore refs;
  refs.add_session("a");
  refs.add_session("b");
  const uint64_t id = refs.put("a", floats({1, 2, 3})).value();
  RefStore::Held v;
  ASSERT_TRUE(refs.get("a", id, &v).ok());
  EXPECT_EQ(v->nbytes(), 12u);
  grpc::Status other = refs.get("b", id, &v);
  EXPECT_EQ(other.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_NE(other.error_message().find("another session"), std::string::npos) << other.error_message();
  EXPECT_EQ(refs.get("a", id + 100, &v).error_code(), grpc::StatusCode::NOT_FOUND);
  size_t n = 0;
  EXPECT_EQ(refs.release("b", {id}, &n).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(refs.live_refs(), 1);
}

TEST(RefStore, CountsAndReleaseIsAllOrNothing) {
  RefStore refs;
  refs.add_session("a");
  const uint64_t x = refs.put("a", floats({1, 2})).value();
  const uint64_t y = refs.put("a", floats({1, 2, 3, 4})).value();
  EXPECT_NE(x, y);
  EXPECT_EQ(refs.live_refs(), 2);
  EXPECT_EQ(refs.live_bytes(), 24);
  size_t n = 0;
  EXPECT_EQ(refs.release("a", {x, 999}, &n).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(refs.live_refs(), 2);  // nothing released
  ASSERT_TRUE(refs.release("a", {x, x}, &n).ok());
  EXPECT_EQ(n, 1u);
  EXPECT_EQ(refs.live_bytes(), 16);
  RefStore::Held v;
  EXPECT_EQ(refs.get("a", x, &v).error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST(RefStore, DroppingASessionFreesItsRefsAndRefusesLaterPuts) {
  RefStore refs;
  refs.add_session("a");
  refs.add_session("b");
  const uint64_t kept_by_b = refs.put("b", floats({5})).value();
  RefStore::Held in_flight;
  const uint64_t x = refs.put("a", floats({1, 2})).value();
  ASSERT_TRUE(refs.get("a", x, &in_flight).ok());  // a run holding it as input
  refs.put("a", floats({3})).value();
  EXPECT_EQ(refs.drop_session("a"), 2u);
  EXPECT_EQ(refs.live_refs(), 1);
  EXPECT_EQ(refs.live_bytes(), 4);
  EXPECT_EQ(in_flight->nbytes(), 8u);  // a holder keeps the value alive past the drop
  // A run that finishes after its session ended keeps nothing.
  EXPECT_EQ(refs.put("a", floats({1})).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(refs.put("never-opened", floats({1})).status().code(), StatusCode::kNotFound);
  RefStore::Held v;
  EXPECT_TRUE(refs.get("b", kept_by_b, &v).ok());
  EXPECT_EQ(refs.drop_session("b"), 1u);
  EXPECT_EQ(refs.live_refs(), 0);
  EXPECT_EQ(refs.live_bytes(), 0);
}

TEST(RefStore, StringBytesAreTheirCharacters) {
  Value s = Value::strings({"ab", "cde"}, {2}).value();
  EXPECT_EQ(value_bytes(s), 5);
}

// Runs putting refs while their session is dropped: nothing is left behind, the counts come back to 0.
TEST(RefStore, PutsRacingADropLeaveNothing) {
  RefStore refs;
  for (int round = 0; round < 50; ++round) {
    const std::string s = "s" + std::to_string(round);
    refs.add_session(s);
    std::vector<std::thread> runs;
    for (int t = 0; t < 4; ++t)
      runs.emplace_back([&] {
        for (int i = 0; i < 20; ++i) {
          Result<uint64_t> id = refs.put(s, floats({1, 2, 3}));
          RefStore::Held v;
          if (id.is_ok()) (void)refs.get(s, id.value(), &v);
        }
      });
    refs.drop_session(s);
    for (std::thread& t : runs) t.join();
    refs.drop_session(s);  // what a put made between the two drops: none (a dropped session takes none)
  }
  EXPECT_EQ(refs.live_refs(), 0);
  EXPECT_EQ(refs.live_bytes(), 0);
}

}  // namespace
}  // namespace sdx::serve
