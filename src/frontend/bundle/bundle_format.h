// The .sdx bundle file: a versioned container of sections, checked before anything in it is used.
//
//   offset 0   "SDXBUNDL"            8-byte magic
//          8   u32 format version    kBundleFormatVersion (another version is refused, naming both)
//         12   u32 section count
//         16   sections: u32 kind, u32 reserved (0), u64 length, then `length` bytes
//        end   u64 XXH3-64 (xxHash) of every byte before it, then "SDXBEND!"
//
// All integers little-endian. The checksum is verified first, so a truncated or damaged file is refused
// before any length in it is believed; every length and count is still checked against the bytes that
// remain. Sections (each exactly once, in any order):
//   kManifest  "key=value" lines: sdx_version, source_fnv1a (the ONNX model's bytes), cpu_isa, ...
//   kGraph     the optimized model, a serialized ONNX ModelProto (frontend/onnx/onnx_writer.h)
//   kOpsets    u32 count, then one i32 per node: each node's opset, in write order
//   kPlans     u32 count, then per frozen plan: its input signature and warmup record (PlanRecord)
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"

namespace sdx::bundle {

inline constexpr char kMagic[9] = "SDXBUNDL";
inline constexpr char kEndMagic[9] = "SDXBEND!";
inline constexpr uint32_t kBundleFormatVersion = 1;

enum class SectionKind : uint32_t { kManifest = 1, kGraph = 2, kOpsets = 3, kPlans = 4 };

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

struct Bundle {
  std::map<std::string, std::string> manifest;
  std::string graph;               // ModelProto bytes
  std::vector<int> node_opsets;
  std::vector<PlanRecord> plans;
};

// True when `bytes` begins with the bundle magic (a bundle, not an ONNX model).
bool looks_like_bundle(const std::string& bytes);

std::string write_bundle(const Bundle& b);
// Every error names what is wrong and where (section, record, byte offset).
Result<Bundle> read_bundle(const std::string& bytes);

}  // namespace sdx::bundle
