#include "backend/cpu/jit/cache_manifest.h"

#include <cstdlib>
#include <sstream>
#include <vector>

namespace sdx::jit {
namespace {

bool lower_hex(const std::string& s, size_t n) {
  if (s.size() != n) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

}  // namespace

std::string CacheManifest::to_text() const {
  return "sdx-jit-manifest " + std::to_string(kCacheManifestVersion) + "\nkey " + key + "\nsize " +
         std::to_string(static_cast<long long>(size)) + "\nxxh3_128 " + digest + "\n";
}

Result<CacheManifest> CacheManifest::parse(const std::string& text) {
  std::vector<std::string> lines;
  std::stringstream ss(text);
  for (std::string line; std::getline(ss, line);) lines.push_back(line);
  if (text.empty() || text.back() != '\n' || lines.size() != 4) return data_loss("malformed manifest");
  auto field = [&](size_t i, const char* name) -> std::string {
    const std::string prefix = std::string(name) + " ";
    return lines[i].rfind(prefix, 0) == 0 ? lines[i].substr(prefix.size()) : std::string("\x01");
  };
  if (field(0, "sdx-jit-manifest") != std::to_string(kCacheManifestVersion))
    return data_loss("manifest of an unknown format ('" + lines[0].substr(0, 40) + "')");
  CacheManifest m;
  m.key = field(1, "key");
  const std::string size = field(2, "size");
  m.digest = field(3, "xxh3_128");
  if (!lower_hex(m.key, 16)) return data_loss("manifest with a malformed key");
  bool digits = !size.empty() && size.size() <= 18;
  for (char c : size) digits = digits && c >= '0' && c <= '9';
  const long long n = digits ? std::strtoll(size.c_str(), nullptr, 10) : 0;
  if (n <= 0) return data_loss("manifest with a malformed size");
  m.size = n;
  if (!lower_hex(m.digest, 32)) return data_loss("manifest with a malformed xxh3_128 digest");
  return m;
}

}  // namespace sdx::jit
