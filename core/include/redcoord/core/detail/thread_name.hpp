#pragma once
/// @file
/// Names the threads redcoord starts ("rc-io", "rc-tick", ...), so `top -H`, `ps -L`, gdb and
/// /proc/PID/task/*/comm tell them apart. Internal to redcoord; not a stable API.

#include <redcoord/core/export.hpp>

REDCOORD_API_BEGIN
namespace redcoord::detail {

/// Names the calling thread `name` (at most 15 characters are kept: the kernel's limit).
/// Best effort: a failure is ignored. Thread-safety: names only the caller's thread.
void name_this_thread(const char* name) noexcept;

}  // namespace redcoord::detail
REDCOORD_API_END
