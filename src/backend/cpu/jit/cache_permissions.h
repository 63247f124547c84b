// The rule that decides whether a folder may hold code that sdx loads (the JIT disk cache,
// backend/cpu/jit/disk_cache.h). Loading a library runs its code, so a library from a folder that another
// local user can write to, or swap for their own, would run their code in our process (as root,
// if root runs sdx). Such a folder is refused: the JIT then runs no fused kernels.
//
// The rule, for a cache folder `root` and the folders sdx keeps below it (v1/, v1/compilers/):
//  - sdx's own folders: created with mode 0700 when missing; checked with lstat, each must be a
//    real folder (not a symbolic link), owned by the effective user, and not writable by group
//    or others. (0755 folders made by older versions pass.)
//  - every folder above root, both as written and as resolved (symbolic links followed, so a
//    link such as ~/.cache -> /elsewhere is judged by where it points): owned by the user or by
//    root, and not writable by group or others unless sticky (like /tmp, where others may add
//    entries but not rename or delete ours). A symbolic link on the way must belong to the user
//    or root. This is OpenSSH's StrictModes rule for ~/.ssh.
// Folders that sdx creates along the way (e.g. ~/.cache/sdx) are made with mode 0700.
//
//   SDX_RETURN_IF_ERROR(make_private_dirs(root + "/v1/compilers"), "JIT disk cache");
//   SDX_RETURN_IF_ERROR(check_folders_above(root), "JIT disk cache");
//   SDX_RETURN_IF_ERROR(check_private_dir(root), "JIT disk cache");
#pragma once

#include <string>

#include "core/status.h"

namespace sdx::jit {

// Creates `path` and its missing parents with mode 0700 (existing ones are left as they are;
// the checks below judge them).
Status make_private_dirs(const std::string& path);

// sdx's own folder: a real folder, the effective user's, not group- or world-writable.
// failed_precondition says which condition failed.
Status check_private_dir(const std::string& path);

// Every folder above `path` (not `path` itself), as written and as resolved: owned by the user
// or root, not group- or world-writable unless sticky; symbolic links on the way owned by the
// user or root.
Status check_folders_above(const std::string& path);

}  // namespace sdx::jit
