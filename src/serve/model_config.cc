#include "serve/model_config.h"

#include <algorithm>
#include <cstdint>

#include <nlohmann/json.hpp>

namespace sdx::serve {
namespace {

using Json = nlohmann::json;

const char* kind_name(const Json& v) {
  switch (v.type()) {
    case Json::value_t::null: return "null";
    case Json::value_t::boolean: return "a boolean";
    case Json::value_t::string: return "a string";
    case Json::value_t::array: return "an array";
    case Json::value_t::object: return "an object";
    default: return "a number";
  }
}

Status bad(const std::string& file, const std::string& field, const std::string& why) {
  return Status(StatusCode::kInvalidArgument, file + ": " + (field.empty() ? "" : "field '" + field + "' ") + why);
}

Status integer_in(const std::string& file, const std::string& field, const Json& v, int64_t lo, int64_t hi,
                  int64_t* out) {
  if (!v.is_number_integer())
    return bad(file, field, std::string("must be an integer, not ") + (v.is_number() ? v.dump() : kind_name(v)));
  // An unsigned value past int64's range is out of range, not a wrapped negative number.
  const bool huge = v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX);
  if (huge || v.get<int64_t>() < lo || v.get<int64_t>() > hi)
    return bad(file, field, "must be in " + std::to_string(lo) + ".." + std::to_string(hi) + ", not " + v.dump());
  *out = v.get<int64_t>();
  return Status::ok();
}

constexpr int64_t kMaxBatch = int64_t{1} << 20;
constexpr int64_t kMaxInstances = 1024;

// Triton's instance_group: one group [{"count": N, "kind": "KIND_CPU"}]; N runs of the model at once.
Status parse_instance_group(const std::string& file, const Json& v, int64_t* count) {
  if (!v.is_array()) return bad(file, "instance_group", std::string("must be an array, not ") + kind_name(v));
  if (v.size() != 1)
    return bad(file, "instance_group", "must hold exactly one group (sdx serve runs every instance on the CPU), not " +
                                           std::to_string(v.size()));
  const Json& g = v[0];
  if (!g.is_object()) return bad(file, "instance_group[0]", std::string("must be an object, not ") + kind_name(g));
  for (const auto& [name, x] : g.items()) {
    const std::string field = "instance_group[0]." + name;
    if (name == "count") {
      if (Status st = integer_in(file, field, x, 1, kMaxInstances, count); !st.is_ok()) return st;
    } else if (name == "kind") {
      if (!x.is_string() || (x.get<std::string>() != "KIND_CPU" && x.get<std::string>() != "KIND_AUTO"))
        return bad(file, field, "must be \"KIND_CPU\" or \"KIND_AUTO\" (sdx serve runs models on the CPU), not " + x.dump());
    } else {
      return bad(file, field, "is not a known field (known: count, kind)");
    }
  }
  return Status::ok();
}
constexpr int64_t kMaxDelayUs = 10'000'000;

}  // namespace

Result<ModelConfig> parse_model_config(const std::string& text, const std::string& file) {
  // nlohmann::json (Debian's nlohmann-json3-dev): no exceptions; a malformed document is `discarded`. Depth
  // is bounded by the file size the repository reads (config files are small and local).
  const Json root = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) return bad(file, "", "is not valid JSON");
  if (!root.is_object()) return bad(file, "", std::string("must hold an object, not ") + kind_name(root));
  ModelConfig c;
  const Json* batching = nullptr;
  for (const auto& [name, v] : root.items()) {
    if (name == "max_batch_size") {
      if (Status st = integer_in(file, name, v, 0, kMaxBatch, &c.max_batch_size); !st.is_ok()) return st;
    } else if (name == "dynamic_batching") {
      if (!v.is_object()) return bad(file, name, std::string("must be an object, not ") + kind_name(v));
      batching = &v;
    } else if (name == "instance_group") {
      if (Status st = parse_instance_group(file, v, &c.instance_count); !st.is_ok()) return st;
    } else {
      return bad(file, name, "is not a known field (known: max_batch_size, dynamic_batching, instance_group)");
    }
  }
  if (!batching) return c;
  if (c.max_batch_size <= 0)
    return bad(file, "dynamic_batching", "needs \"max_batch_size\" above 0 (the most rows a batch may have)");
  c.dynamic_batching = true;
  for (const auto& [name, v] : batching->items()) {
    const std::string field = "dynamic_batching." + name;
    if (name == "max_queue_delay_microseconds") {
      if (Status st = integer_in(file, field, v, 0, kMaxDelayUs, &c.max_queue_delay_us); !st.is_ok()) return st;
    } else if (name == "preferred_batch_size") {
      if (!v.is_array()) return bad(file, field, std::string("must be an array, not ") + kind_name(v));
      for (size_t i = 0; i < v.size(); ++i) {
        int64_t n;
        const std::string item = field + "[" + std::to_string(i) + "]";
        if (Status st = integer_in(file, item, v[i], 1, c.max_batch_size, &n); !st.is_ok()) return st;
        c.preferred_batch_sizes.push_back(n);
      }
      std::sort(c.preferred_batch_sizes.begin(), c.preferred_batch_sizes.end());
      c.preferred_batch_sizes.erase(std::unique(c.preferred_batch_sizes.begin(), c.preferred_batch_sizes.end()),
                                    c.preferred_batch_sizes.end());
    } else if (name == "pad_to_preferred_batch_size") {
      if (!v.is_boolean()) return bad(file, field, std::string("must be true or false, not ") + kind_name(v));
      c.pad_to_preferred = v.get<bool>();
    } else {
      return bad(file, field,
                 "is not a known field (known: preferred_batch_size, max_queue_delay_microseconds, "
                 "pad_to_preferred_batch_size)");
    }
  }
  return c;
}

Status check_batchable(const Session& session, const ModelConfig& config, const std::string& file) {
  if (config.max_batch_size <= 0) return Status::ok();
  auto check = [&](const ValueInfo& info, const char* what) -> Status {
    if (!info.is_tensor || info.shape.empty() || info.shape[0].value >= 0) {
      std::string shape = "[";
      for (size_t i = 0; i < info.shape.size(); ++i)
        shape +=
            (i ? ", " : "") + (info.shape[i].value >= 0 ? std::to_string(info.shape[i].value)
                                                        : (info.shape[i].param.empty() ? "?" : info.shape[i].param));
      shape += "]";
      return bad(file, "max_batch_size",
                 "is " + std::to_string(config.max_batch_size) + ", but the model's " + what + " '" + info.name +
                     "' has no leading batch dimension (shape " + (info.is_tensor ? shape : "not a tensor") +
                     "; the first dimension must be dynamic)");
    }
    return Status::ok();
  };
  for (const ValueInfo& in : session.inputs())
    if (Status st = check(in, "input"); !st.is_ok()) return st;
  for (const ValueInfo& out : session.outputs())
    if (Status st = check(out, "output"); !st.is_ok()) return st;
  return Status::ok();
}

}  // namespace sdx::serve
