#pragma once
// Blocking commands take their timeout in (fractional) seconds.

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

}  // namespace redcoord::detail
