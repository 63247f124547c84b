// The .sdx bundle file: a versioned container of sections, checked before anything in it is used.
//
//   offset 0   "SDXBUNDL"            8-byte magic
//          8   u32 format version    kBundleFormatVersion (another version is refused, naming both)
//         12   u32 section count
//         16   sections: u32 kind, u32 reserved (0), u64 length, zero padding to the next multiple of 64
//              bytes from the start of the file, then `length` bytes (so a mapped file's sections, and the
//              weights in them, are 64-byte aligned and can be used in place)
//        end   u64 checksum of every byte before it, then "SDXBEND!": XXH3-64 (xxHash, seed 0)
//
// All integers little-endian. The magic and the format version are checked first (another version is
// refused by name, not as damage). Every length and count is checked against the bytes that remain, so
// the structure can be read before the checksum is known (a loader does both at once); nothing read from
// a bundle whose checksum fails is used. Sections (each exactly once, in any order):
//   kManifest  "key=value" lines: sdx_version, source_digest (of the ONNX model's bytes), cpu_isa, ...
//   kGraph     the optimized model, a serialized ONNX ModelProto (frontend/onnx/onnx_writer.h)
//   kOpsets    u32 count, then one i32 per node: each node's opset, in write order
//   kPlans     u32 count, then per frozen plan: its input signature and warmup record (PlanRecord)
//   kWeights   the graph's initializers, each 64-byte aligned; the graph refers to them as external data
//              at location "sdx:blob" (frontend/onnx/tensor_proto.h), and a loaded session borrows them
//   kPacked    weights in a kernel's packed layout, by key (backend/packed_weights.h): u32 count, per
//              entry a key, u64 offset and u64 length (from the section's start, 64-byte aligned), then
//              the bytes
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"

namespace sdx::bundle {

inline constexpr char kMagic[9] = "SDXBUNDL";
inline constexpr char kEndMagic[9] = "SDXBEND!";
// 4: the checksum is XXH3-64 of the whole body again. Format 3 used XXH64 of 1 MiB pieces on up to 4
// threads, from a measurement that timed XXH3 on pages the process had not touched yet; measured in fresh
// processes on a page-cached 25 MB bundle, XXH3-64 takes 1.0-1.2 ms on one thread and XXH64 2.5-4 ms
// (2.0-2.5 ms on 4 threads), the memory bus being the limit.
inline constexpr uint32_t kBundleFormatVersion = 4;
inline constexpr size_t kSectionAlignment = 64;

enum class SectionKind : uint32_t { kManifest = 1, kGraph = 2, kOpsets = 3, kPlans = 4, kWeights = 5, kPacked = 6 };

// What the warmup saw of one plan slot, by the slot's value name (plan/recorded_slot.h's fields).
struct SlotRecord {
  std::string name;
  bool seen = false, stable = true, shared = false;
  int32_t view_of = -1;  // index into PlanRecord::slots, or -1
  DType dtype = DType::kUndefined;
  std::vector<int64_t> dims;
};

// One frozen plan: every graph output, for inputs of these types and shapes.
struct PlanRecord {
  std::vector<std::pair<DType, std::vector<int64_t>>> inputs;  // per graph input, in order
  std::vector<SlotRecord> slots;
};

// Weights one kernel packed, under the key it finds them by.
struct PackedRecord {
  std::string key;
  std::string_view bytes;
};

// The views (graph, weights, packed bytes) point into the bytes the bundle was read from, or, for
// write_bundle, into whatever the caller keeps alive until it returns.
struct Bundle {
  std::map<std::string, std::string> manifest;
  std::string_view graph;    // ModelProto bytes
  std::string_view weights;  // the initializers the graph names at "sdx:blob"
  std::vector<int> node_opsets;
  std::vector<PlanRecord> plans;
  std::vector<PackedRecord> packed;
};

// True when `bytes` begins with the bundle magic (a bundle, not an ONNX model).
bool looks_like_bundle(std::string_view bytes);

std::string write_bundle(const Bundle& b);
// Every error names what is wrong and where (section, record, byte offset). No bytes are copied: the
// result's views point into `bytes`. read_bundle is verify_bundle, then read_bundle_unverified.
Result<Bundle> read_bundle(std::string_view bytes);

// The envelope (magic, size, end marker, format version) and the checksum of every byte.
Status verify_bundle(std::string_view bytes);

// The envelope and the structure, every length and count checked against the bytes that remain, but not
// the checksum: for a loader that verifies the same bytes beside it (api/bundle.cc) and lets nothing it
// built from them reach a caller before verify_bundle has passed.
Result<Bundle> read_bundle_unverified(std::string_view bytes);

// The format's checksum of `body` (every byte before the trailer): what write_bundle stores and
// read_bundle compares. For tools that reseal a bundle they changed (the fuzzer).
uint64_t checksum(std::string_view body);

}  // namespace sdx::bundle
