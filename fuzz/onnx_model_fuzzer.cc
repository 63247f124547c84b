// libFuzzer target: arbitrary bytes as an ONNX model. Loading, verifying and
// creating kernels must return a Status, never crash. When a model loads, it is
// also run once on zero-filled inputs of its declared shapes (bounded in size),
// so kernels meet hostile attributes and shapes too.
//
//   scripts/fuzz.sh onnx_model 120     (builds with clang + ASan/UBSan, seeded from fuzz/corpus/onnx_model)
#include <cstddef>
#include <cstdint>
#include <string>

#include "frontend/onnx/onnx_loader.h"
#include "runtime/session.h"

namespace {
constexpr int64_t kMaxElements = 1 << 16;

sdx::Datum zero_input(const sdx::ir::TypeInfo& type, bool* ok) {
  using Kind = sdx::ir::TypeInfo::Kind;
  if (type.kind != Kind::kTensor || !type.shape || type.elem == sdx::DType::kUndefined) {
    *ok = false;
    return {};
  }
  std::vector<int64_t> dims;
  for (const auto& d : *type.shape) dims.push_back(d.is_fixed() ? d.value : 1);
  auto shape = sdx::Shape::make(dims);
  if (!shape.is_ok() || shape->numel() > kMaxElements) {
    *ok = false;
    return {};
  }
  auto t = sdx::Tensor::allocate(type.elem, *shape, sdx::cpu_allocator(), true);
  if (!t.is_ok()) {
    *ok = false;
    return {};
  }
  return sdx::Datum::tensor(std::move(t).value());
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  auto model = sdx::onnx::load_model_bytes(bytes);
  if (!model.is_ok()) return 0;
  auto session = sdx::runtime::Session::create(std::move(model).value());
  if (!session.is_ok()) return 0;
  // Only run small graphs: Loop bodies with large trip counts would just be slow, not wrong.
  if ((*session)->model().graph->nodes().size() > 64) return 0;
  std::vector<std::pair<std::string, sdx::Datum>> feeds;
  for (const auto& in : (*session)->inputs()) {
    bool ok = true;
    sdx::Datum d = zero_input(in.type, &ok);
    if (!ok) return 0;
    feeds.emplace_back(in.name, std::move(d));
  }
  auto out = (*session)->run(feeds);
  (void)out;
  return 0;
}
