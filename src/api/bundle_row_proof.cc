#include "api/bundle_row_proof.h"

#include <charconv>

namespace sdx::api {
namespace {

constexpr const char* kDimKey = "row_dim.";
constexpr const char* kAxesKey = "row_axes.";
constexpr int kMaxAxis = 1 << 20;

std::string encode(const std::string& s) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (c == '%' || c == '=' || c == ',' || c == ':' || c < 0x20 || c == 0x7f) {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

Result<std::string> decode(const std::string& s, const std::string& entry) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out += s[i];
      continue;
    }
    unsigned v = 0;
    if (i + 2 >= s.size()) return data_loss("bundle manifest entry '" + entry + "': a '%' escape is cut short");
    auto [end, ec] = std::from_chars(s.data() + i + 1, s.data() + i + 3, v, 16);
    if (ec != std::errc() || end != s.data() + i + 3)
      return data_loss("bundle manifest entry '" + entry + "': '" + s.substr(i, 3) + "' is not a '%' escape");
    out += static_cast<char>(v);
    i += 2;
  }
  return out;
}

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

}  // namespace

void write_row_proof(const runtime::RowProof& proof, std::map<std::string, std::string>& manifest) {
  for (const auto& [dim, why] : proof.dims) manifest[kDimKey + encode(dim)] = encode(why);
  for (const auto& [dim, axes] : proof.output_axes) {
    std::string v;
    for (const auto& [output, axis] : axes) v += (v.empty() ? "" : ",") + encode(output) + ":" + std::to_string(axis);
    manifest[kAxesKey + encode(dim)] = v;
  }
}

Result<runtime::RowProof> read_row_proof(const std::map<std::string, std::string>& manifest) {
  runtime::RowProof proof;
  for (const auto& [key, value] : manifest) {
    if (starts_with(key, kDimKey)) {
      SDX_ASSIGN_OR_RETURN(std::string dim, decode(key.substr(std::char_traits<char>::length(kDimKey)), key), "");
      SDX_ASSIGN_OR_RETURN(proof.dims[dim], decode(value, key), "");
    } else if (starts_with(key, kAxesKey)) {
      SDX_ASSIGN_OR_RETURN(std::string dim, decode(key.substr(std::char_traits<char>::length(kAxesKey)), key), "");
      auto& axes = proof.output_axes[dim];
      size_t pos = 0;
      while (pos < value.size()) {
        size_t comma = value.find(',', pos);
        if (comma == std::string::npos) comma = value.size();
        const std::string item = value.substr(pos, comma - pos);
        pos = comma + 1;
        const size_t colon = item.rfind(':');
        int axis = -1;
        if (colon == std::string::npos || colon == 0 ||
            std::from_chars(item.data() + colon + 1, item.data() + item.size(), axis).ptr != item.data() + item.size() ||
            colon + 1 == item.size() || axis < 0 || axis > kMaxAxis)
          return data_loss("bundle manifest entry '" + key + "': '" + item.substr(0, 80) + "' is not output:axis");
        SDX_ASSIGN_OR_RETURN(std::string output, decode(item.substr(0, colon), key), "");
        axes.emplace_back(std::move(output), axis);
      }
    }
  }
  for (const auto& [dim, axes] : proof.output_axes) {
    auto it = proof.dims.find(dim);
    if (it == proof.dims.end() || !it->second.empty())
      return data_loss("bundle manifest gives output axes for '" + dim.substr(0, 80) + "', which it does not prove");
  }
  return proof;
}

}  // namespace sdx::api
