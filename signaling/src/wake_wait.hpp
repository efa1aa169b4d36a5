#pragma once
// Shared by barrier, double_barrier and latch: time slicing and script-reply parsing.

#include <redcoord/core/errors.hpp>
#include <redcoord/core/reply.hpp>
#include <redcoord/signaling/barrier.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace redcoord::detail {

// The opening of the barrier and double_barrier scripts (KEYS[1] the state hash, ARGV[2] the
// party count): server time in ms as `now`, `parties`, and a refusal when the stored party
// count differs. One clock (the server's) scores every lease. ARGV[2] = 0 (count, reset)
// works on whatever party count is stored.
inline constexpr std::string_view party_script_preamble = R"lua(
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local parties = tonumber(ARGV[2])
local stored = redis.call('HGET', KEYS[1], 'parties')
if stored and parties > 0 and tonumber(stored) ~= parties then
  return redis.error_reply('ERR barrier parties mismatch: it has ' .. stored)
end
)lua";

/// Status codes of the barrier and double_barrier scripts.
enum phase_code : int {
    waiting = 0,  // not yet: keep waiting
    passed = 1,   // passed / inside / everyone left / reset done
    blocked = 2,  // double_barrier enter: the previous round is still leaving
    lost = 3,     // this member's lease lapsed and the group went on without it (review S2)
};

/// {code, generation, count} as the coordination scripts return it.
struct phase_reply {
    bool done = false;  // code != waiting
    int code = 0;       // a phase_code
    std::uint64_t generation = 0;
    std::size_t count = 0;
};

inline phase_reply parse_phase(const reply& r) {
    const auto& e = r.elements();
    if (e.size() < 3) throw protocol_error("coordination script returned " + std::to_string(e.size()) + " elements");
    return {e[0].integer() != 0, static_cast<int>(e[0].integer()), static_cast<std::uint64_t>(std::max<std::int64_t>(0, e[1].integer())),
            static_cast<std::size_t>(std::max<std::int64_t>(0, e[2].integer()))};
}

// barrier_options rules shared by barrier and double_barrier.
inline void validate_barrier_options(const barrier_options& o) {
    if (o.arrival_lease < std::chrono::milliseconds(30))
        throw invalid_argument("barrier_options::arrival_lease must be >= 30 ms");
    if (o.idle_ttl < 3 * o.arrival_lease || o.idle_ttl > std::chrono::hours(24 * 366))
        throw invalid_argument("barrier_options::idle_ttl must be between 3 x arrival_lease and 366 days");
}

// How long a passed generation's member list is kept (review S2): long enough for a counted
// member that stalled well past its lease to still learn that it passed.
inline std::chrono::milliseconds passed_retention(const barrier_options& o) {
    return std::min(10 * o.arrival_lease, o.idle_ttl);
}

}  // namespace redcoord::detail
