#include "serve/datatype.h"

#include <gtest/gtest.h>

namespace sdx::serve {
namespace {

TEST(Datatype, EveryKServeNameMapsBothWays) {
  const struct {
    const char* name;
    ElementType type;
    int64_t bytes;
  } rows[] = {{"BOOL", ElementType::kBool, 1},      {"UINT8", ElementType::kUint8, 1},
              {"UINT16", ElementType::kUint16, 2},  {"UINT32", ElementType::kUint32, 4},
              {"UINT64", ElementType::kUint64, 8},  {"INT8", ElementType::kInt8, 1},
              {"INT16", ElementType::kInt16, 2},    {"INT32", ElementType::kInt32, 4},
              {"INT64", ElementType::kInt64, 8},    {"FP16", ElementType::kFloat16, 2},
              {"FP32", ElementType::kFloat32, 4},   {"FP64", ElementType::kFloat64, 8},
              {"BF16", ElementType::kBFloat16, 2},  {"BYTES", ElementType::kString, 0}};
  for (const auto& row : rows) {
    ElementType t = ElementType::kUndefined;
    ASSERT_TRUE(parse_datatype(row.name, &t)) << row.name;
    EXPECT_EQ(t, row.type) << row.name;
    EXPECT_STREQ(datatype_name(row.type), row.name);
    EXPECT_EQ(datatype_element_bytes(row.type), row.bytes) << row.name;
  }
}

TEST(Datatype, UnknownNamesAndTypes) {
  ElementType t = ElementType::kUndefined;
  EXPECT_FALSE(parse_datatype("fp32", &t));  // names are upper case, as the protocol spells them
  EXPECT_FALSE(parse_datatype("FLOAT", &t));
  EXPECT_FALSE(parse_datatype("", &t));
  EXPECT_EQ(datatype_name(ElementType::kComplex64), nullptr);
  EXPECT_EQ(datatype_name(ElementType::kInt4), nullptr);
  EXPECT_EQ(datatype_name(ElementType::kFloat8E4M3FN), nullptr);
}

}  // namespace
}  // namespace sdx::serve
