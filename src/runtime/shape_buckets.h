// ShapeBuckets: symbolic input dims padded up to buckets (SessionOptions::shape_buckets), so that one frozen
// plan serves every size inside a bucket and a loop whose shapes change every call (a decoder fed its
// growing past by hand, onnxruntime style) replays instead of warming up at every new size.
//
//   shape_buckets = {"past_sequence_length=128"}   // multiples of 128: 1..128 -> 128, 129..256 -> 256, ...
//   shape_buckets = {"batch_size=auto"}            // chosen from the traffic (plan/bucket_choice.h)
//
// Automatic buckets ("NAME=auto", or "NAME=auto:K" for at most K chosen sizes, default 8): the session counts
// the sizes the dim takes and, every 64 calls, chooses the K bucket sizes that pad that traffic least
// (choose_buckets: an exact optimum, so buckets sit where sizes cluster). A size above every chosen bucket
// (a decode loop's growing length) is rounded up to a multiple of a quarter of its power of two (at least
// 16): buckets grow geometrically ahead of the traffic. The choice is reported (describe()).
//
// A bucketed dim NAME is found by its name in the inputs' declared shapes. Every input axis whose declared
// dim is NAME, or a sum naming it ("past_sequence_length + sequence_length", the attention mask's), grows
// by pad = bucket - value, with zeros in front (left padding): a decoder's past gets empty key/value rows
// and its attention_mask zeros there, so padded keys are masked out. Every output axis declared with NAME in
// it loses its first `pad` entries (present.N.key: the empty rows Concat put in front). A value of 0 stays 0.
//
// Padding is exact only when the model masks what it pads (masks are extended with 0, and attention's
// keys are masked by them). The first padded call checks it: it also runs the exact shapes and compares
// every output (same shapes; numbers within 1e-4 of the largest magnitude, others equal). A session whose
// check fails stops padding for good and says why (status()); the call returns the exact result.
//
// Only the feeds path (Session::run with named feeds, Python's InferenceSession.run) pads; the positional
// path (contexts, the C ABI) runs the shapes it is given.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/datum.h"
#include "core/status.h"
#include "runtime/value_info.h"

namespace sdx::runtime {

class ShapeBuckets {
 public:
  // Parses the option against the session's inputs and outputs; null for an empty option. Errors name the
  // entry: malformed ("NAME=STEP" with STEP a whole number >= 1, or "NAME=auto[:K]") or a dim no input
  // declares on its own.
  static Result<std::unique_ptr<ShapeBuckets>> create(const std::vector<std::string>& spec,
                                                      const std::vector<ValueInfo>& inputs,
                                                      const std::vector<ValueInfo>& outputs);

  // One call's padding: the padded feeds (by input, as given where nothing is padded) and, per bucketed
  // dim, the value given and its pad.
  struct Call {
    std::vector<Datum> feeds;
    std::vector<int64_t> pads;  // per bucketed dim
    bool padded() const;
  };
  // The padded feeds for `in` (one per input), or a Call with no pad when nothing is to be padded (no
  // bucketed dim in use, padding turned off, a non-tensor or string feed).
  Result<Call> pad(const std::vector<const Datum*>& in) const;
  // Slices the outputs at positions `outputs` (of the session's outputs) back to the given shapes.
  Result<std::vector<Datum>> unpad(const std::vector<Datum>& padded, const std::vector<int>& outputs,
                                   const Call& call) const;

  // Automatic dim `name`: counts `sizes` as seen once each and chooses its buckets now (the sizes callers
  // brought before the buckets were made: runtime/session_buckets.cc); from then on a new size is a bucket of
  // its own while fewer than K are chosen (the choice every 64 calls still replaces them).
  void seed(const std::string& name, const std::vector<int64_t>& sizes);

  // Whether the first padded call's check is still to come (the caller then runs the exact shapes too and
  // calls verify()).
  bool unchecked() const { return state_.load(std::memory_order_acquire) == kUnchecked; }
  // Compares the unpadded outputs with the exact ones; true when they agree. A disagreement turns padding
  // off for good, with the reason in status().
  bool verify(const std::vector<Datum>& unpadded, const std::vector<Datum>& exact, const std::vector<int>& outputs);
  // "off" (no option), "unchecked", "checked: ..." or "disabled: ..." (why).
  std::string status() const;
  // The option as given, one entry per bucketed dim.
  std::string describe() const;

 private:
  enum State : int { kUnchecked = 0, kChecked = 1, kDisabled = 2 };
  struct Dim {
    std::string name;
    int64_t step = 1;           // 0: automatic
    int max_buckets = 8;        // automatic: sizes chosen at most
    int input = -1, axis = -1;  // where the call's value is read
  };
  // Automatic buckets' state per dim (guarded by auto_mu_): the sizes seen and the current choice.
  struct AutoState {
    std::map<int64_t, double> seen;
    std::vector<int64_t> chosen;
    int64_t calls = 0;
    bool seeded = false;  // seed() made it: a new size joins `chosen` while fewer than max_buckets are
  };
  // Per input / output axis: the bucketed dims its declared dim names (indices into dims_).
  using AxisDims = std::vector<std::vector<int>>;

  int64_t bucket_of(const Dim& d, int64_t value) const;
  static void choose(AutoState& a, const Dim& d);  // a.chosen from a.seen (auto_mu_ held)
  // Entries added in front of each axis of value i (of `axes`: the inputs' or the outputs'), or empty when
  // none is (not a tensor, another rank than declared, nothing padded).
  static std::vector<int64_t> leads(const std::vector<AxisDims>& axes, size_t i, const Datum& d, const Call& call);

  std::vector<Dim> dims_;
  mutable std::mutex auto_mu_;
  mutable std::vector<AutoState> auto_;  // per dim (unused for fixed steps)
  std::vector<AxisDims> in_axes_, out_axes_;  // [input][axis] -> dims
  // Published by verify() with release, read by unchecked()/pad() with acquire: the check's outcome (and,
  // guarded by mu_, its detail).
  std::atomic<int> state_{kUnchecked};
  mutable std::mutex mu_;
  std::string detail_;
};

}  // namespace sdx::runtime
