#pragma once
// What barrier and double_barrier share: the opening of their scripts and the membership
// lease block, the reply and error mapping, option checks, and the wake-and-re-read pause
// (latch uses the pause too).

#include <redcoord/core/deadline.hpp>
#include <redcoord/core/detail/lease_schedule.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/core/keys.hpp>
#include <redcoord/core/reply.hpp>
#include <redcoord/core/script.hpp>
#include <redcoord/signaling/barrier.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace redcoord::detail {

// The opening of the barrier and double_barrier scripts is the fragment
// signaling/src/lua/party.lua: server time in ms as `now` (one clock, the server's, scores
// every lease), `parties`, a refusal when the stored party count differs, and the membership
// leases (live, touch, join).

/// Status codes of the barrier and double_barrier scripts.
enum phase_code : int {
    waiting = 0,  // not yet: keep waiting
    passed = 1,   // passed / inside / everyone left / reset done
    blocked = 2,  // double_barrier enter: the previous round is still leaving
    lost = 3,     // this member's lease lapsed and the group went on without it
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
    if (e.size() < 3)
        throw protocol_error("coordination script returned " + std::to_string(e.size()) +
                             " elements");
    return {e[0].integer() != 0, static_cast<int>(e[0].integer()),
            static_cast<std::uint64_t>(std::max<std::int64_t>(0, e[1].integer())),
            static_cast<std::size_t>(std::max<std::int64_t>(0, e[2].integer()))};
}

/// True when error reply `text` is the preamble's refusal of a different party count.
inline bool is_parties_mismatch(std::string_view text) {
    return text.find("parties mismatch") != std::string_view::npos;
}

/// The invalid_argument for that refusal: names `kind` ("barrier", "double_barrier") and the
/// party count the caller asked for.
inline invalid_argument parties_mismatch(const char* kind, std::string_view text,
                                         const std::string& asked) {
    return invalid_argument(std::string(kind) + ": " + std::string(text) + ", not " + asked +
                            " parties");
}

/// Runs a barrier or double_barrier script and parses its phase reply. The preamble's
/// refusal becomes invalid_argument naming `kind` ("barrier", "double_barrier") and the
/// party count the caller asked for (ARGV[2]).
inline phase_reply run_phase(const script& s, connection_pool& pool,
                             std::initializer_list<std::string_view> keys,
                             std::initializer_list<std::string_view> argv, const char* kind) {
    try {
        return parse_phase(s.run(pool, keys, argv));
    } catch (const reply_error& e) {
        if (is_parties_mismatch(e.what()))
            throw parties_mismatch(kind, e.what(), std::string(argv.begin()[1]));
        throw;
    }
}

// The constructor checks of barrier and double_barrier (`kind` names the class).
inline void validate_party(const char* kind, const std::string& name, std::size_t parties,
                           const barrier_options& o) {
    validate_name(name, std::string(kind) + " name");
    if (parties == 0)
        throw invalid_argument(std::string(kind) + " '" + name + "' needs at least one party");
    if (o.arrival_lease < std::chrono::milliseconds(30))
        throw invalid_argument("barrier_options::arrival_lease must be >= 30 ms");
    if (o.idle_ttl < 3 * o.arrival_lease || o.idle_ttl > std::chrono::hours(24 * 366))
        throw invalid_argument(
            "barrier_options::idle_ttl must be between 3 x arrival_lease and 366 days");
}

// How often a member refreshes its lease (waiting, or inside a double barrier): three times
// per lease, so one missed refresh never lets it lapse.
inline std::chrono::milliseconds refresh_period(const barrier_options& o) {
    return lease_schedule(o.arrival_lease, 0.0).renew_period();
}

// How long a passed generation's member list is kept: long enough for a counted
// member that stalled well past its lease to still learn that it passed.
inline std::chrono::milliseconds passed_retention(const barrier_options& o) {
    return std::min(10 * o.arrival_lease, o.idle_ttl);
}

/// One pause of a wait loop whose truth is in keys: waits for a wake on `w`, at most
/// `period` (the re-read period, which bounds the cost of a lost wake) and never past
/// `deadline`, then drops the other queued wakes (one re-read answers them all).
/// @return false, at once, when the deadline has passed: the caller gives up.
template <class Waiter>
bool await_wake(Waiter& w, std::chrono::steady_clock::time_point deadline,
                std::chrono::milliseconds period) {
    const auto left = time_left(deadline);
    if (left.count() == 0) return false;
    (void)w.wait(std::min(left, period));
    while (w.try_wait()) {}
    return true;
}

}  // namespace redcoord::detail
