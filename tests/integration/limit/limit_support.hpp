#pragma once
// Helpers of the limiter integration tests: the server's clock and its script call count.

#include <redcoord/core/pool.hpp>
#include <redcoord/testing/local_server.hpp>

#include <cstdint>
#include <string>

namespace limit_test {

// The server's TIME in microseconds.
inline std::int64_t server_us(redcoord::testing::local_server& s) {
    const auto r = s.command({"TIME"});
    return std::stoll(r.elements().at(0).text()) * 1'000'000 +
           std::stoll(r.elements().at(1).text());
}

// EVAL + EVALSHA calls the server has run so far (INFO commandstats).
inline long long script_calls(redcoord::testing::local_server& s) {
    const auto info = s.command({"INFO", "commandstats"}).text();
    long long n = 0;
    for (const char* c : {"cmdstat_eval:calls=", "cmdstat_evalsha:calls="}) {
        const auto at = info.find(c);
        if (at != std::string::npos) n += std::stoll(info.substr(at + std::string(c).size()));
    }
    return n;
}

}  // namespace limit_test
