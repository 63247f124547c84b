// The entries of a paged KV cache's slot map (sdx.PagedConcat, sdx.PagedAttention; schema comments in
// ir/schemas/paged_*.cc): one int64 per past key of a row, read as
//
//   e >= 0    pool slot e;
//   e == -1   an empty position (a zero key and value: what a padded past holds);
//   e <= -2   new token j = -2 - e of this same call (row j / S, position j % S of K_new / V_new).
//
// The third form lets one call hold several tokens of one sequence as separate rows (a packed prefill or a
// mixed prefill + decode batch, python/sdx/_paged_decode.py): a row sees its sequence's earlier tokens of the
// call through them, before those tokens' keys are in the pool.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"

namespace sdx::cpu::paged {

inline constexpr int64_t kEmpty = -1;

// The new token an entry refers to (e <= -2).
inline int64_t new_token(int64_t e) { return -2 - e; }

// OK when every entry of map [rows, past] is a slot below `slots`, -1, or a new token below `new_tokens`;
// else an error naming `op` and the entry. names_new (optional): set to whether any entry names a new token.
inline Status check_slot_map(const char* op, const int64_t* map, int64_t rows, int64_t past, int64_t slots,
                             int64_t new_tokens, bool* names_new = nullptr) {
  bool any_new = false;
  for (int64_t i = 0; i < rows * past; ++i) {
    const int64_t e = map[i];
    any_new |= e < kEmpty;
    if (e < slots && (e >= kEmpty || new_token(e) < new_tokens)) continue;
    const std::string at = std::string(op) + ": slot_map[" + std::to_string(i / past) + ", " +
                           std::to_string(i % past) + "] = " + std::to_string(e);
    if (e >= slots) return invalid_argument(at + " is outside the KV cache's " + std::to_string(slots) + " slots");
    return invalid_argument(at + " names new token " + std::to_string(new_token(e)) + " of the call, which has " +
                            std::to_string(new_tokens));
  }
  if (names_new) *names_new = any_new;
  return Status::ok();
}

}  // namespace sdx::cpu::paged
