// The bundle container: round trip, and every kind of damage refused with an error that says what.
#include "frontend/bundle/bundle_format.h"

#include <gtest/gtest.h>

#include <xxhash.h>

#include <random>

namespace sdx::bundle {
namespace {

const std::string kGraph("\x08\x08graph-bytes", 13);
const std::string kWeights(300, 'w');
const std::string kPacked1(70, 'a'), kPacked2(5, 'b');

Bundle sample() {
  Bundle b;
  b.manifest = {{"sdx_version", "0.1.0"}, {"cpu_isa", "avx512"}};
  b.graph = kGraph;
  b.weights = kWeights;
  b.packed = {{"conv1/0", kPacked1}, {"mm/0", kPacked2}};
  b.node_opsets = {17, 20, 1};
  PlanRecord p;
  p.inputs = {{DType::kFloat32, {1, 3}}, {DType::kInt64, {2}}};
  p.slots = {{"x", true, true, false, -1, DType::kFloat32, {1, 3}},
             {"r", true, true, false, 0, DType::kFloat32, {3}},
             {"unused", false, true, false, -1, DType::kUndefined, {}}};
  b.plans = {p};
  return b;
}

TEST(BundleFormat, RoundTrips) {
  const Bundle b = sample();
  const std::string bytes = write_bundle(b);
  ASSERT_TRUE(looks_like_bundle(bytes));
  auto r = read_bundle(bytes);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->manifest, b.manifest);
  EXPECT_EQ(r->graph, b.graph);
  EXPECT_EQ(r->node_opsets, b.node_opsets);
  ASSERT_EQ(r->plans.size(), 1u);
  EXPECT_EQ(r->plans[0].inputs, b.plans[0].inputs);
  ASSERT_EQ(r->plans[0].slots.size(), 3u);
  EXPECT_EQ(r->plans[0].slots[1].name, "r");
  EXPECT_EQ(r->plans[0].slots[1].view_of, 0);
  EXPECT_EQ(r->plans[0].slots[2].dtype, DType::kUndefined);
  EXPECT_FALSE(r->plans[0].slots[2].seen);
  EXPECT_EQ(r->weights, kWeights);
  ASSERT_EQ(r->packed.size(), 2u);
  EXPECT_EQ(r->packed[1].key, "mm/0");
  EXPECT_EQ(r->packed[1].bytes, kPacked2);
}

// Every section, and every packed entry, starts at a multiple of 64 bytes: a mapped bundle's weights are
// used in place.
TEST(BundleFormat, SectionsAndPackedWeightsAre64ByteAligned) {
  const std::string bytes = write_bundle(sample());
  auto r = read_bundle(bytes);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  for (std::string_view v : {r->graph, r->weights, r->packed[0].bytes, r->packed[1].bytes})
    EXPECT_EQ(static_cast<size_t>(v.data() - bytes.data()) % kSectionAlignment, 0u);
}

TEST(BundleFormat, EveryTruncationIsRefused) {
  const std::string bytes = write_bundle(sample());
  for (size_t n = 0; n < bytes.size(); ++n) {
    auto r = read_bundle(bytes.substr(0, n));
    ASSERT_FALSE(r.is_ok()) << "truncated to " << n;
  }
}

TEST(BundleFormat, EveryFlippedByteIsRefused) {
  const std::string bytes = write_bundle(sample());
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string bad = bytes;
    bad[i] = static_cast<char>(bad[i] ^ 0x40);
    EXPECT_FALSE(read_bundle(bad).is_ok()) << "byte " << i;
  }
}

// The format's checksum, from xxHash directly: XXH3-64 (seed 0) of every byte before the trailer.
uint64_t checksum_of(const std::string& body) { return XXH3_64bits(body.data(), body.size()); }

// Re-seals a damaged body with a valid checksum, so the structural checks behind it are reached.
std::string reseal(std::string body_and_trailer) {
  std::string body = body_and_trailer.substr(0, body_and_trailer.size() - 16);
  const uint64_t h = checksum_of(body);
  for (int i = 0; i < 8; ++i) body.push_back(static_cast<char>((h >> (8 * i)) & 0xff));
  return body + "SDXBEND!";
}

// A 12 MB bundle: written and read back, its trailer is the format's checksum, and one flipped byte in
// the middle is refused, by read_bundle and by verify_bundle, though read_bundle_unverified reads it.
TEST(BundleFormat, TheChecksumCoversEveryByte) {
  Bundle b = sample();
  std::string weights(size_t{12} << 20, '\0');
  for (size_t i = 0; i < weights.size(); ++i) weights[i] = static_cast<char>(i * 2654435761u >> 24);
  b.weights = weights;
  const std::string bytes = write_bundle(b);
  const std::string body = bytes.substr(0, bytes.size() - 16);
  uint64_t stored = 0;
  for (int i = 0; i < 8; ++i) stored |= uint64_t{static_cast<unsigned char>(bytes[body.size() + i])} << (8 * i);
  EXPECT_EQ(stored, checksum_of(body));
  EXPECT_EQ(checksum(body), checksum_of(body));  // what the fuzzer reseals with
  auto r = read_bundle(bytes);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->weights, weights);
  std::string bad = bytes;
  bad[bytes.size() / 2 + 12345] ^= 0x01;
  auto refused = read_bundle(bad);
  ASSERT_FALSE(refused.is_ok());
  EXPECT_NE(refused.status().message().find("checksum"), std::string::npos) << refused.status().message();
  const Status unsound = verify_bundle(bad);
  EXPECT_NE(unsound.message().find("checksum"), std::string::npos) << unsound.message();
  EXPECT_TRUE(verify_bundle(bytes).is_ok());
  auto unverified = read_bundle_unverified(bad);
  ASSERT_TRUE(unverified.is_ok()) << unverified.status().to_string();
  EXPECT_NE(unverified->weights, weights);
}

TEST(BundleFormat, HostileLengthsAndVersionsNameTheProblem) {
  std::string bytes = write_bundle(sample());
  {
    std::string v = bytes;
    v[8] = 9;  // format version 9
    auto r = read_bundle(reseal(v));
    ASSERT_FALSE(r.is_ok());
    EXPECT_NE(r.status().message().find("format version 9"), std::string::npos) << r.status().message();
    // Checked before the checksum: a file of another format is named as such, not as damaged.
    auto unsealed = read_bundle(v);
    ASSERT_FALSE(unsealed.is_ok());
    EXPECT_NE(unsealed.status().message().find("format version 9"), std::string::npos) << unsealed.status().message();
    EXPECT_NE(verify_bundle(v).message().find("format version 9"), std::string::npos);
    EXPECT_NE(read_bundle_unverified(v).status().message().find("format version 9"), std::string::npos);
  }
  {
    std::string v = bytes;
    for (int i = 0; i < 8; ++i) v[16 + 8 + i] = '\xff';  // the first section's length: past the end
    auto r = read_bundle(reseal(v));
    ASSERT_FALSE(r.is_ok());
    EXPECT_NE(r.status().message().find("remain"), std::string::npos) << r.status().message();
  }
  {
    std::string v = bytes;
    v[12] = '\x7f';  // a section count far beyond the file
    auto r = read_bundle(reseal(v));
    ASSERT_FALSE(r.is_ok());
    EXPECT_NE(r.status().message().find("section count"), std::string::npos) << r.status().message();
  }
  EXPECT_NE(read_bundle("SDXBUNDL").status().message().find("truncated"), std::string::npos);
  EXPECT_FALSE(read_bundle("not a bundle at all").is_ok());
}

// A recorded shape whose element count overflows is refused by the reader: a session would assert on it.
TEST(BundleFormat, ShapesWithMoreElementsThanAnyTensorAreRefused) {
  for (const std::vector<int64_t>& dims : {std::vector<int64_t>{int64_t{1} << 62, 4}, std::vector<int64_t>{int64_t{1} << 60}}) {
    Bundle b = sample();
    b.plans[0].slots[0].dims = dims;
    auto r = read_bundle(write_bundle(b));
    ASSERT_FALSE(r.is_ok());
    EXPECT_NE(r.status().message().find("more elements than any tensor"), std::string::npos) << r.status().message();
    b = sample();
    b.plans[0].inputs[0].second = dims;
    EXPECT_FALSE(read_bundle(write_bundle(b)).is_ok());
  }
}

TEST(BundleFormat, RandomGarbageAfterTheMagicNeverCrashes) {
  std::mt19937 rng(5);
  for (int i = 0; i < 2000; ++i) {
    std::string s = "SDXBUNDL";
    const size_t n = rng() % 200;
    for (size_t k = 0; k < n; ++k) s.push_back(static_cast<char>(rng()));
    if (rng() % 2) s = reseal(s + std::string(16, '\0'));
    (void)read_bundle(s);  // an error or a bundle, never a crash (ASan/UBSan builds check the rest)
  }
}

}  // namespace
}  // namespace sdx::bundle
