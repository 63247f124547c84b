// Datum: what flows along a graph edge at run time: a tensor, a sequence of
// tensors, or an optional that holds nothing.
//
//   Datum d = Datum::tensor(t);  if (d.is_tensor()) use(d.as_tensor());
#pragma once

#include <memory>
#include <vector>

#include "core/tensor.h"

namespace sdx {

class Datum {
 public:
  enum class Kind : uint8_t { kEmpty, kTensor, kSequence, kOptionalNone };

  Datum() = default;
  static Datum tensor(Tensor t) {
    Datum d;
    d.kind_ = Kind::kTensor;
    d.tensor_ = std::move(t);
    return d;
  }
  static Datum sequence(std::vector<Tensor> items, DType elem) {
    Datum d;
    d.kind_ = Kind::kSequence;
    d.seq_ = std::make_shared<std::vector<Tensor>>(std::move(items));
    d.seq_elem_ = elem;
    return d;
  }
  static Datum none() {
    Datum d;
    d.kind_ = Kind::kOptionalNone;
    return d;
  }

  Kind kind() const { return kind_; }
  bool is_empty() const { return kind_ == Kind::kEmpty; }
  bool is_tensor() const { return kind_ == Kind::kTensor; }
  bool is_sequence() const { return kind_ == Kind::kSequence; }
  bool is_none() const { return kind_ == Kind::kOptionalNone; }

  const Tensor& as_tensor() const { return tensor_; }
  Tensor& as_tensor() { return tensor_; }
  const std::vector<Tensor>& as_sequence() const { return *seq_; }
  DType sequence_elem_type() const { return seq_elem_; }

 private:
  Kind kind_ = Kind::kEmpty;
  Tensor tensor_;
  std::shared_ptr<const std::vector<Tensor>> seq_;
  DType seq_elem_ = DType::kUndefined;
};

}  // namespace sdx
