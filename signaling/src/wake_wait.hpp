#pragma once
// Shared by barrier, double_barrier and latch: time slicing and script-reply parsing.

#include <redcoord/core/errors.hpp>
#include <redcoord/core/reply.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace redcoord::detail {

// The opening of the barrier and double_barrier scripts (KEYS[1] the state hash, ARGV[2] the
// party count): server time in ms as `now`, `parties`, and a refusal when the stored party
// count differs. One clock (the server's) scores every lease.
inline constexpr std::string_view party_script_preamble = R"lua(
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local parties = tonumber(ARGV[2])
local stored = redis.call('HGET', KEYS[1], 'parties')
if stored and tonumber(stored) ~= parties then
  return redis.error_reply('ERR barrier parties mismatch: it has ' .. stored)
end
)lua";

/// {done, generation, count} as the coordination scripts return it.
struct phase_reply {
    bool done = false;  // code != 0
    int code = 0;       // script-specific status (0 waiting, 1 passed, 2 blocked)
    std::uint64_t generation = 0;
    std::size_t count = 0;
};

inline phase_reply parse_phase(const reply& r) {
    const auto& e = r.elements();
    if (e.size() < 3) throw protocol_error("coordination script returned " + std::to_string(e.size()) + " elements");
    return {e[0].integer() != 0, static_cast<int>(e[0].integer()), static_cast<std::uint64_t>(std::max<std::int64_t>(0, e[1].integer())),
            static_cast<std::size_t>(std::max<std::int64_t>(0, e[2].integer()))};
}

inline std::chrono::milliseconds remaining(std::chrono::steady_clock::time_point deadline) {
    return std::max(std::chrono::milliseconds(0), std::chrono::duration_cast<std::chrono::milliseconds>(
                                                      deadline - std::chrono::steady_clock::now()));
}

}  // namespace redcoord::detail
