#pragma once
// Arguments and deadlines of blocking commands (BRPOP, BLMOVE).

#include <chrono>
#include <cstdio>
#include <string>

namespace redcoord::detail {

/// `t` as a decimal seconds argument with millisecond resolution ("1.250"); never "0",
/// which Redis would read as "block forever".
inline std::string seconds_arg(std::chrono::milliseconds t) {
    long long ms = t.count() < 1 ? 1 : static_cast<long long>(t.count());
    char buf[32];
    std::snprintf(buf, sizeof buf, "%lld.%03lld", ms / 1000, ms % 1000);
    return buf;
}

/// The reply deadline for a command that blocks up to `block` on a connection whose default
/// deadline is `command_timeout`: the default itself when it covers the block with room to
/// spare (so the socket timeout is not changed, two syscalls saved per switch), else the
/// block plus the default. Zero (no deadline) stays zero, and so does a sum that would
/// overflow (callers bound their blocks, so that is only a safety net).
inline std::chrono::milliseconds blocking_deadline(std::chrono::milliseconds block,
                                                   std::chrono::milliseconds command_timeout) {
    using std::chrono::milliseconds;
    if (command_timeout <= milliseconds(0)) return milliseconds(0);
    const auto spare = command_timeout / 2 + command_timeout / 4;
    if (spare >= milliseconds(250) && block <= spare - milliseconds(250)) return command_timeout;
    if (block > milliseconds::max() - command_timeout) return milliseconds(0);
    return block + command_timeout;
}

}  // namespace redcoord::detail
