// Comparisons, boolean logic and bitwise ops with numpy broadcasting:
// Equal, Less, LessOrEqual, Greater, GreaterOrEqual, And, Or, Xor, Not,
// BitwiseAnd, BitwiseOr, BitwiseXor, BitwiseNot, BitShift.
#include <type_traits>

#include "backend/cpu/kernels/util/elementwise.h"
#include "backend/kernel_registry.h"

namespace sdx::cpu {
namespace {

using NumericTypes = Types<SDX_NUMERIC_TYPES>;
using IntTypes = Types<SDX_INT_TYPES>;
using BoolType = Types<bool>;

struct EqualOp : NoAttrs {
  template <typename C>
  bool operator()(const C& a, const C& b) const { return a == b; }
};
struct LessOp : NoAttrs {
  template <typename C>
  bool operator()(C a, C b) const { return a < b; }
};
struct LessOrEqualOp : NoAttrs {
  template <typename C>
  bool operator()(C a, C b) const { return a <= b; }
};
struct GreaterOp : NoAttrs {
  template <typename C>
  bool operator()(C a, C b) const { return a > b; }
};
struct GreaterOrEqualOp : NoAttrs {
  template <typename C>
  bool operator()(C a, C b) const { return a >= b; }
};

struct AndOp : NoAttrs {
  template <typename C>
  C operator()(C a, C b) const { return static_cast<C>(a & b); }
};
struct OrOp : NoAttrs {
  template <typename C>
  C operator()(C a, C b) const { return static_cast<C>(a | b); }
};
struct XorOp : NoAttrs {
  template <typename C>
  C operator()(C a, C b) const { return static_cast<C>(a ^ b); }
};
struct NotOp : NoAttrs {
  bool operator()(bool a) const { return !a; }
};
struct BitwiseNotOp : NoAttrs {
  template <typename C>
  C operator()(C a) const { return static_cast<C>(~a); }
};

// BitShift (numpy semantics, extended to signed types as the ONNX tests do):
// shifts outside [0, bit width) give 0, or -1 for a right shift of a negative
// value; left shifts of signed values shift the two's-complement bits.
struct BitShiftOp {
  bool left = true;
  Status init(const ir::Node& node) {
    const std::string dir = node.attr_string("direction", "");
    if (dir != "LEFT" && dir != "RIGHT")
      return invalid_argument("attribute 'direction' must be \"LEFT\" or \"RIGHT\", got \"" + dir + "\"");
    left = dir == "LEFT";
    return Status::ok();
  }
  template <typename C>
  C operator()(C a, C b) const {
    constexpr int kBits = static_cast<int>(sizeof(C) * 8);
    bool out_of_range = b >= static_cast<C>(kBits);
    if constexpr (std::is_signed_v<C>) out_of_range = out_of_range || b < 0;
    using U = wrap_uint_t<C>;
    if (left) {
      if (out_of_range) return C(0);
      return static_cast<C>(static_cast<std::make_unsigned_t<C>>(static_cast<U>(a) << static_cast<int>(b)));
    }
    if (out_of_range) {
      if constexpr (std::is_signed_v<C>) return a < 0 ? C(-1) : C(0);
      return C(0);
    }
    return static_cast<C>(a >> static_cast<int>(b));  // arithmetic for signed (C++20)
  }
};

using backend::kAnyOpset;
using backend::kernel_factory;
using backend::KernelRegistrar;

const KernelRegistrar kEqual({"Equal", "", 1, kAnyOpset,
                              kernel_factory<CompareKernel<EqualOp, Types<SDX_ALL_TYPES>>>()});
const KernelRegistrar kLess({"Less", "", 1, kAnyOpset, kernel_factory<CompareKernel<LessOp, NumericTypes>>()});
const KernelRegistrar kLessOrEqual({"LessOrEqual", "", 1, kAnyOpset,
                                    kernel_factory<CompareKernel<LessOrEqualOp, NumericTypes>>()});
const KernelRegistrar kGreater({"Greater", "", 1, kAnyOpset, kernel_factory<CompareKernel<GreaterOp, NumericTypes>>()});
const KernelRegistrar kGreaterOrEqual({"GreaterOrEqual", "", 1, kAnyOpset,
                                       kernel_factory<CompareKernel<GreaterOrEqualOp, NumericTypes>>()});

const KernelRegistrar kAnd({"And", "", 1, kAnyOpset, kernel_factory<BinaryKernel<AndOp, BoolType>>()});
const KernelRegistrar kOr({"Or", "", 1, kAnyOpset, kernel_factory<BinaryKernel<OrOp, BoolType>>()});
const KernelRegistrar kXor({"Xor", "", 1, kAnyOpset, kernel_factory<BinaryKernel<XorOp, BoolType>>()});
const KernelRegistrar kNot({"Not", "", 1, kAnyOpset, kernel_factory<UnaryKernel<NotOp, BoolType>>()});

const KernelRegistrar kBitwiseAnd({"BitwiseAnd", "", 1, kAnyOpset, kernel_factory<BinaryKernel<AndOp, IntTypes>>()});
const KernelRegistrar kBitwiseOr({"BitwiseOr", "", 1, kAnyOpset, kernel_factory<BinaryKernel<OrOp, IntTypes>>()});
const KernelRegistrar kBitwiseXor({"BitwiseXor", "", 1, kAnyOpset, kernel_factory<BinaryKernel<XorOp, IntTypes>>()});
const KernelRegistrar kBitwiseNot({"BitwiseNot", "", 1, kAnyOpset,
                                   kernel_factory<UnaryKernel<BitwiseNotOp, IntTypes>>()});
const KernelRegistrar kBitShift({"BitShift", "", 1, kAnyOpset, kernel_factory<BinaryKernel<BitShiftOp, IntTypes>>()});

}  // namespace
}  // namespace sdx::cpu
