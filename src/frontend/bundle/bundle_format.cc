#include "frontend/bundle/bundle_format.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "core/shape.h"
#include "core/xxh3.h"

namespace sdx::bundle {
namespace {

constexpr size_t kHeaderBytes = 16, kTrailerBytes = 16, kSectionHeaderBytes = 16;

// The checksum of the bytes before the trailer: XXH3-64 (xxHash, seed 0) in one pass, on its AVX2 path where
// the CPU has it (core/xxh3.h: 0.85-0.9 ms for a page-cached 25 MB bundle here, 1.6-1.8 ms on the SSE2
// library; format 3's XXH64 of 1 MiB pieces took 2.5-5 ms even on 4 threads: see kBundleFormatVersion).
uint64_t checksum_of(const char* data, size_t n) { return xxh3_64(data, n); }

// Bounds that keep a hostile count from asking for absurd memory before the bytes run out.
constexpr uint64_t kMaxRank = 64, kMaxNameBytes = 1 << 16;

void put_u32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void put_u64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void put_i64(std::string& out, int64_t v) { put_u64(out, static_cast<uint64_t>(v)); }
void put_str(std::string& out, const std::string& s) {
  put_u32(out, static_cast<uint32_t>(s.size()));
  out += s;
}

// A bounds-checked little-endian reader over one section.
class Cursor {
 public:
  Cursor(std::string_view bytes, size_t begin, size_t end, std::string where)
      : b_(bytes), pos_(begin), end_(end), where_(std::move(where)) {}
  size_t pos() const { return pos_; }
  size_t remaining() const { return end_ - pos_; }
  Status need(uint64_t n, const char* what) const {
    if (n > remaining())
      return data_loss(where_ + ": " + what + " needs " + std::to_string(n) + " bytes at offset " + std::to_string(pos_) +
                       " but only " + std::to_string(remaining()) + " remain");
    return Status::ok();
  }
  Result<uint64_t> u(int bytes, const char* what) {
    SDX_RETURN_IF_ERROR(need(static_cast<uint64_t>(bytes), what), "");
    uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(static_cast<unsigned char>(b_[pos_ + i])) << (8 * i);
    pos_ += static_cast<size_t>(bytes);
    return v;
  }
  Result<uint32_t> u32(const char* what) {
    SDX_ASSIGN_OR_RETURN(uint64_t v, u(4, what), "");
    return static_cast<uint32_t>(v);
  }
  Result<int32_t> i32(const char* what) {
    SDX_ASSIGN_OR_RETURN(uint64_t v, u(4, what), "");
    return static_cast<int32_t>(static_cast<uint32_t>(v));
  }
  Result<int64_t> i64(const char* what) {
    SDX_ASSIGN_OR_RETURN(uint64_t v, u(8, what), "");
    return static_cast<int64_t>(v);
  }
  // A count of items of at least `min_item_bytes` each: more than the remaining bytes can hold is an error.
  Result<uint32_t> count(const char* what, uint64_t min_item_bytes) {
    SDX_ASSIGN_OR_RETURN(uint32_t n, u32(what), "");
    if (static_cast<uint64_t>(n) * min_item_bytes > remaining())
      return data_loss(where_ + ": " + what + " " + std::to_string(n) + " does not fit in the " +
                       std::to_string(remaining()) + " bytes that remain");
    return n;
  }
  Result<std::string> str(const char* what) {
    SDX_ASSIGN_OR_RETURN(uint32_t n, u32(what), "");
    if (n > kMaxNameBytes) return data_loss(where_ + ": " + what + " of " + std::to_string(n) + " bytes");
    SDX_RETURN_IF_ERROR(need(n, what), "");
    std::string s(b_.substr(pos_, n));
    pos_ += n;
    return s;
  }
  Result<DType> dtype(const char* what) {
    SDX_ASSIGN_OR_RETURN(int32_t code, i32(what), "");
    if (code == 0) return DType::kUndefined;  // a slot no warmup run produced
    auto dt = dtype_from_onnx(code);
    if (!dt) return data_loss(where_ + ": " + what + " has unknown element type code " + std::to_string(code));
    return *dt;
  }
  Result<std::vector<int64_t>> dims(const char* what) {
    SDX_ASSIGN_OR_RETURN(uint32_t rank, count(what, 8), "");
    if (rank > kMaxRank) return data_loss(where_ + ": " + what + " has rank " + std::to_string(rank));
    std::vector<int64_t> d(rank);
    for (int64_t& x : d) {
      SDX_ASSIGN_OR_RETURN(x, i64(what), "");
      if (x < 0) return data_loss(where_ + ": " + what + " has a negative dimension");
    }
    // A count of elements whose bytes (up to 16 per element) overflow int64 is no real tensor's.
    Result<int64_t> n = checked_numel(d);
    if (!n.is_ok() || *n > std::numeric_limits<int64_t>::max() / 16)
      return data_loss(where_ + ": " + what + " " + dims_to_string(d) + " has more elements than any tensor can");
    return d;
  }
  // Skips the zero padding up to the next multiple of kSectionAlignment (from the start of the file).
  Status align(const char* what) {
    const size_t pad = (kSectionAlignment - pos_ % kSectionAlignment) % kSectionAlignment;
    SDX_RETURN_IF_ERROR(need(pad, what), "");
    pos_ += pad;
    return Status::ok();
  }
  Status done() const {
    if (remaining() != 0)
      return data_loss(where_ + ": " + std::to_string(remaining()) + " unread bytes at the end of the section");
    return Status::ok();
  }

 private:
  std::string_view b_;
  size_t pos_, end_;
  std::string where_;
};

std::string encode_plans(const std::vector<PlanRecord>& plans) {
  std::string s;
  put_u32(s, static_cast<uint32_t>(plans.size()));
  for (const PlanRecord& p : plans) {
    put_u32(s, static_cast<uint32_t>(p.inputs.size()));
    for (const auto& [dt, dims] : p.inputs) {
      put_u32(s, static_cast<uint32_t>(dtype_to_onnx(dt)));
      put_u32(s, static_cast<uint32_t>(dims.size()));
      for (int64_t d : dims) put_i64(s, d);
    }
    put_u32(s, static_cast<uint32_t>(p.slots.size()));
    for (const SlotRecord& r : p.slots) {
      put_str(s, r.name);
      s.push_back(static_cast<char>((r.seen ? 1 : 0) | (r.stable ? 2 : 0) | (r.shared ? 4 : 0)));
      put_u32(s, static_cast<uint32_t>(r.view_of));
      put_u32(s, static_cast<uint32_t>(dtype_to_onnx(r.dtype)));
      put_u32(s, static_cast<uint32_t>(r.dims.size()));
      for (int64_t d : r.dims) put_i64(s, d);
    }
  }
  return s;
}

Result<std::vector<PlanRecord>> decode_plans(Cursor c) {
  std::vector<PlanRecord> plans;
  SDX_ASSIGN_OR_RETURN(uint32_t n, c.count("plan count", 8), "");
  for (uint32_t i = 0; i < n; ++i) {
    PlanRecord p;
    SDX_ASSIGN_OR_RETURN(uint32_t n_in, c.count("input count", 8), "");
    for (uint32_t k = 0; k < n_in; ++k) {
      SDX_ASSIGN_OR_RETURN(DType dt, c.dtype("input"), "");
      SDX_ASSIGN_OR_RETURN(std::vector<int64_t> dims, c.dims("input shape"), "");
      p.inputs.emplace_back(dt, std::move(dims));
    }
    SDX_ASSIGN_OR_RETURN(uint32_t n_slots, c.count("slot count", 17), "");
    for (uint32_t k = 0; k < n_slots; ++k) {
      SlotRecord r;
      SDX_ASSIGN_OR_RETURN(r.name, c.str("slot name"), "");
      SDX_ASSIGN_OR_RETURN(uint64_t flags, c.u(1, "slot flags"), "");
      if (flags > 7) return data_loss("plan " + std::to_string(i) + " slot '" + r.name + "': unknown flags");
      r.seen = flags & 1;
      r.stable = flags & 2;
      r.shared = flags & 4;
      SDX_ASSIGN_OR_RETURN(r.view_of, c.i32("view_of"), "");
      if (r.view_of < -1 || r.view_of >= static_cast<int32_t>(n_slots))
        return data_loss("plan " + std::to_string(i) + " slot '" + r.name + "': view_of " + std::to_string(r.view_of) +
                         " is not a slot");
      SDX_ASSIGN_OR_RETURN(r.dtype, c.dtype("slot type"), "");
      SDX_ASSIGN_OR_RETURN(r.dims, c.dims("slot shape"), "");
      p.slots.push_back(std::move(r));
    }
    plans.push_back(std::move(p));
  }
  SDX_RETURN_IF_ERROR(c.done(), "");
  return plans;
}

void pad_to(std::string& out, size_t base) {
  out.resize(base + (out.size() - base + kSectionAlignment - 1) / kSectionAlignment * kSectionAlignment, '\0');
}

// u32 count; per entry: key, u64 offset, u64 length (offsets from the section's start, each a multiple of
// kSectionAlignment); then the entries' bytes.
std::string encode_packed(const std::vector<PackedRecord>& packed) {
  std::string table;
  put_u32(table, static_cast<uint32_t>(packed.size()));
  size_t table_bytes = 4;
  for (const PackedRecord& r : packed) table_bytes += 4 + r.key.size() + 16;
  size_t offset = (table_bytes + kSectionAlignment - 1) / kSectionAlignment * kSectionAlignment;
  for (const PackedRecord& r : packed) {
    put_str(table, r.key);
    put_u64(table, offset);
    put_u64(table, r.bytes.size());
    offset += (r.bytes.size() + kSectionAlignment - 1) / kSectionAlignment * kSectionAlignment;
  }
  for (const PackedRecord& r : packed) {
    pad_to(table, 0);
    table.append(r.bytes);
  }
  return table;
}

Result<std::vector<PackedRecord>> decode_packed(std::string_view bytes, Cursor c, size_t begin, size_t end) {
  std::vector<PackedRecord> packed;
  SDX_ASSIGN_OR_RETURN(uint32_t n, c.count("packed weight count", 20), "");
  for (uint32_t i = 0; i < n; ++i) {
    PackedRecord r;
    SDX_ASSIGN_OR_RETURN(r.key, c.str("packed weight key"), "");
    SDX_ASSIGN_OR_RETURN(uint64_t offset, c.u(8, "packed weight offset"), "");
    SDX_ASSIGN_OR_RETURN(uint64_t length, c.u(8, "packed weight length"), "");
    const uint64_t size = end - begin;
    if (offset % kSectionAlignment != 0 || offset > size || length > size - offset || offset < c.pos() - begin)
      return data_loss("bundle packed weights: entry '" + r.key + "' has bytes [" + std::to_string(offset) + ", +" +
                       std::to_string(length) + ") outside the section's " + std::to_string(size) +
                       " bytes or not aligned to " + std::to_string(kSectionAlignment));
    r.bytes = bytes.substr(begin + offset, length);
    packed.push_back(std::move(r));
  }
  return packed;
}

Result<std::map<std::string, std::string>> decode_manifest(const std::string& text) {
  std::map<std::string, std::string> m;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    const std::string line = text.substr(pos, nl - pos);
    pos = nl + 1;
    if (line.empty()) continue;
    const size_t eq = line.find('=');
    if (eq == std::string::npos || eq == 0) return data_loss("manifest: line '" + line.substr(0, 80) + "' is not key=value");
    m[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return m;
}

}  // namespace

bool looks_like_bundle(std::string_view bytes) { return bytes.size() >= 8 && std::memcmp(bytes.data(), kMagic, 8) == 0; }

std::string write_bundle(const Bundle& b) {
  std::string manifest;
  for (const auto& [k, v] : b.manifest) manifest += k + "=" + v + "\n";
  std::string opsets;
  put_u32(opsets, static_cast<uint32_t>(b.node_opsets.size()));
  for (int v : b.node_opsets) put_u32(opsets, static_cast<uint32_t>(v));
  const std::string plans = encode_plans(b.plans), packed = encode_packed(b.packed);
  const std::pair<SectionKind, std::string_view> sections[] = {
      {SectionKind::kManifest, manifest}, {SectionKind::kGraph, b.graph},   {SectionKind::kOpsets, opsets},
      {SectionKind::kPlans, plans},       {SectionKind::kWeights, b.weights}, {SectionKind::kPacked, packed}};
  size_t total = kHeaderBytes + kTrailerBytes;
  for (const auto& [kind, body] : sections) total += kSectionHeaderBytes + kSectionAlignment + body.size();
  std::string out;
  out.reserve(total);
  out.append(kMagic, 8);
  put_u32(out, kBundleFormatVersion);
  put_u32(out, static_cast<uint32_t>(std::size(sections)));
  for (const auto& [kind, body] : sections) {
    put_u32(out, static_cast<uint32_t>(kind));
    put_u32(out, 0);
    put_u64(out, body.size());
    pad_to(out, 0);
    out.append(body);
  }
  put_u64(out, checksum_of(out.data(), out.size()));
  out.append(kEndMagic, 8);
  return out;
}

uint64_t checksum(std::string_view body) { return checksum_of(body.data(), body.size()); }

namespace {

// The checks that come before any length in the file is believed: the magic, the size, the end marker
// and the format version (another version is refused by name, not reported as damage). The result reads
// the body (up to the trailer) from just after the version.
Result<Cursor> open_body(std::string_view bytes) {
  if (!looks_like_bundle(bytes)) return invalid_argument("not an sdx bundle (no SDXBUNDL magic)");
  if (bytes.size() < kHeaderBytes + kTrailerBytes)
    return data_loss("bundle is truncated: " + std::to_string(bytes.size()) + " bytes");
  const size_t body_end = bytes.size() - kTrailerBytes;
  if (std::memcmp(bytes.data() + body_end + 8, kEndMagic, 8) != 0)
    return data_loss("bundle is truncated or damaged: its last 8 bytes are not the end marker");
  Cursor c(bytes, 8, body_end, "bundle");
  SDX_ASSIGN_OR_RETURN(uint32_t version, c.u32("format version"), "");
  if (version != kBundleFormatVersion)
    return failed_precondition("bundle format version " + std::to_string(version) + ": this sdx reads version " +
                               std::to_string(kBundleFormatVersion) + "; compile the model again with this sdx");
  return c;
}

}  // namespace

Status verify_bundle(std::string_view bytes) {
  SDX_RETURN_IF_ERROR(open_body(bytes).status(), "");
  const size_t body_end = bytes.size() - kTrailerBytes;
  Cursor trailer(bytes, body_end, body_end + 8, "bundle trailer");
  SDX_ASSIGN_OR_RETURN(uint64_t stored, trailer.u(8, "checksum"), "");
  if (stored != checksum_of(bytes.data(), body_end))
    return data_loss("bundle is damaged: its checksum does not match its contents");
  return Status::ok();
}

Result<Bundle> read_bundle(std::string_view bytes) {
  SDX_RETURN_IF_ERROR(verify_bundle(bytes), "");
  return read_bundle_unverified(bytes);
}

Result<Bundle> read_bundle_unverified(std::string_view bytes) {
  SDX_ASSIGN_OR_RETURN(Cursor c, open_body(bytes), "");
  const size_t body_end = bytes.size() - kTrailerBytes;
  SDX_ASSIGN_OR_RETURN(uint32_t n, c.count("section count", kSectionHeaderBytes), "");
  Bundle b;
  std::map<uint32_t, bool> seen;
  for (uint32_t i = 0; i < n; ++i) {
    SDX_ASSIGN_OR_RETURN(uint32_t kind, c.u32("section kind"), "");
    SDX_ASSIGN_OR_RETURN(uint32_t reserved, c.u32("section header"), "");
    SDX_ASSIGN_OR_RETURN(uint64_t len, c.u(8, "section length"), "");
    if (reserved != 0) return data_loss("bundle section " + std::to_string(i) + ": reserved field is not 0");
    SDX_RETURN_IF_ERROR(c.align("section padding"), "");
    SDX_RETURN_IF_ERROR(c.need(len, "section body"), "");
    if (seen[kind]) return data_loss("bundle: section kind " + std::to_string(kind) + " appears twice");
    seen[kind] = true;
    const size_t begin = bytes.size() - kTrailerBytes - c.remaining();
    const size_t end = begin + static_cast<size_t>(len);
    Cursor body(bytes, begin, end, "bundle section " + std::to_string(kind));
    switch (static_cast<SectionKind>(kind)) {
      case SectionKind::kManifest: {
        SDX_ASSIGN_OR_RETURN(b.manifest, decode_manifest(std::string(bytes.substr(begin, end - begin))), "");
        break;
      }
      case SectionKind::kGraph: b.graph = bytes.substr(begin, end - begin); break;
      case SectionKind::kOpsets: {
        SDX_ASSIGN_OR_RETURN(uint32_t count, body.count("opset count", 4), "");
        b.node_opsets.resize(count);
        for (int& v : b.node_opsets) {
          SDX_ASSIGN_OR_RETURN(v, body.i32("node opset"), "");
        }
        SDX_RETURN_IF_ERROR(body.done(), "");
        break;
      }
      case SectionKind::kPlans: {
        SDX_ASSIGN_OR_RETURN(b.plans, decode_plans(body), "");
        break;
      }
      case SectionKind::kWeights: b.weights = bytes.substr(begin, end - begin); break;
      case SectionKind::kPacked: {
        SDX_ASSIGN_OR_RETURN(b.packed, decode_packed(bytes, body, begin, end), "");
        break;
      }
      default: return data_loss("bundle: unknown section kind " + std::to_string(kind));
    }
    c = Cursor(bytes, end, body_end, "bundle");
  }
  SDX_RETURN_IF_ERROR(c.done(), "");
  for (SectionKind k : {SectionKind::kManifest, SectionKind::kGraph, SectionKind::kOpsets, SectionKind::kPlans,
                        SectionKind::kWeights, SectionKind::kPacked})
    if (!seen[static_cast<uint32_t>(k)])
      return data_loss("bundle: section kind " + std::to_string(static_cast<uint32_t>(k)) + " is missing");
  return b;
}

}  // namespace sdx::bundle
