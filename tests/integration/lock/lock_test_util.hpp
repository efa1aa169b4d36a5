#pragma once
// Helpers shared by the lock's integration tests.

#include <redcoord/testing/local_server.hpp>

#include <cstdint>
#include <string>

namespace lock_test {

// How many times `command` (lower case, e.g. "evalsha") ran on `s` (INFO commandstats).
inline std::int64_t calls(const redcoord::testing::local_server& s, const std::string& command) {
    const auto info = s.command({"INFO", "commandstats"}).text();
    const auto tag = "cmdstat_" + command + ":calls=";
    const auto at = info.find(tag);
    if (at == std::string::npos) return 0;
    return std::stoll(info.substr(at + tag.size()));
}

}  // namespace lock_test
