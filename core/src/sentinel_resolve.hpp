#pragma once
// The Sentinel resolver's decisions, sans I/O: whether master() uses the cached master, waits
// for another caller's round or for the back-off, or asks the sentinels; how a round's answers
// become a choice of master (votes, suspects, the promoted-replica fallback) or an error; the
// back-off between rounds; what a notification, a confirmation or a reported failure changes;
// and whether a connected node's role is accepted.
//
// No sockets, threads, mutexes or clock reads: calls take `now` and the parsed answers
// (sentinel_parse.hpp). core/src/sentinel.cpp is the driver; it serialises calls with its
// mutex. Tested without a server in tests/unit/core_sentinel_resolve_test.cpp.

#include "sentinel_parse.hpp"

#include <redcoord/core/endpoint.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace redcoord::detail {

/// One address a resolution round may pick (see choose_master()).
struct master_candidate {
    host_port addr;         ///< The data node's address.
    std::size_t votes = 0;  ///< Sentinels that named it; 0 for a promoted replica.
    /// When a connection to it last failed, if that was recent (it is "suspected").
    std::optional<std::chrono::steady_clock::time_point> suspected_since;
};

/// The candidate a round uses (an index into `cands`, which must be non-empty and ordered
/// by votes, most first). While the sentinels disagree (two or more addresses have votes),
/// the most-voted one, suspected or not: switching to a minority's address risks writing to
/// a demoted master. When they agree, the first candidate not suspected; when every one is,
/// the one suspected longest ago, so alternatives are tried in turn.
[[nodiscard]] std::size_t choose_master(std::span<const master_candidate> cands) noexcept;

/// The resolver's timing (sentinel_options' fields, plus how long a failure is remembered).
struct resolve_timing {
    std::chrono::milliseconds backoff_min{10};
    std::chrono::milliseconds backoff_max{100};
    /// How long an address that failed stays suspected (tried last).
    std::chrono::milliseconds suspect_window{1000};
};

/// A master change to announce (old, new).
using master_change = std::optional<std::pair<host_port, host_port>>;

/// The resolution engine of one sentinel_resolver.
class sentinel_resolve {
public:
    using clock_type = std::chrono::steady_clock;
    using time_point = clock_type::time_point;

    /// What master() does next.
    struct step {
        enum class kind {
            use,              ///< Return `addr` (the cached master).
            ask,              ///< This caller asks the sentinels (a round started).
            wait,             ///< Wait until `until` or a change, then ask again.
            round_timeout,    ///< The deadline passed while another caller's round ran.
            backoff_timeout,  ///< The deadline passed during the back-off after failed rounds.
        };
        kind what = kind::ask;
        host_port addr;
        time_point until{};
    };

    /// How a round ended.
    struct verdict {
        enum class kind {
            chosen,  ///< `addr` is the master (`change` to announce, if it moved).
            need_promoted,  ///< Every named address is suspected: ask for the promoted replica, then promoted().
            auth_refused,     ///< The sentinels refused authentication (`message`).
            unknown_service,  ///< No sentinel monitors the service (`message`).
            unreachable,      ///< No sentinel answered (`message`).
        };
        kind what = kind::chosen;
        host_port addr;
        master_change change;
        std::string message;
    };

    /// `sentinels` in the endpoint's order; `where` and `service` name them in messages.
    sentinel_resolve(resolve_timing timing, std::vector<host_port> sentinels, std::string where,
                     std::string service);

    /// The next step of a master() call with `deadline`. An `ask` starts a round: the caller
    /// must end it with answers() (then maybe promoted()) or abort().
    step next(time_point now, time_point deadline);

    /// The round's answers, one per sentinel in the endpoint's order (any arrival order; a
    /// sentinel whose answer did not come by the round's deadline is unreachable_answer()).
    verdict answers(std::span<const master_answer> answers, time_point now);
    /// The promoted replicas the sentinels flag (after need_promoted): ends the round.
    verdict promoted(std::span<const host_port> replicas, time_point now);
    /// The round failed in the driver (an unexpected error, `what`): ends it.
    void abort(time_point now, std::string what);

    /// A notification announced `to` as the master: use it at once.
    master_change announced(const host_port& to);
    /// A connection to `addr` was verified as a master: the back-off resets.
    void confirm(const host_port& addr);
    /// `addr` failed (connect error, wrong role, READONLY): suspected for a while; if it is
    /// the cached master, the next master() asks again.
    void report_failure(const host_port& addr, time_point now);
    /// Whether connect() accepts `addr` whose role read as `role` (nullopt: the user may not
    /// ask): a master, or, unknown, an address a majority of the sentinels named last round.
    [[nodiscard]] bool accept(const host_port& addr, const std::optional<std::string>& role) const;

    [[nodiscard]] const std::optional<host_port>& current() const noexcept { return current_; }
    [[nodiscard]] bool resolving() const noexcept { return resolving_; }
    [[nodiscard]] std::uint64_t rounds() const noexcept { return rounds_; }
    [[nodiscard]] std::uint64_t switches() const noexcept { return switches_; }
    [[nodiscard]] const std::string& last_failure() const noexcept { return last_failure_; }
    /// The pause after the last round (0 after a confirmation or a notification).
    [[nodiscard]] std::chrono::milliseconds backoff() const noexcept { return backoff_; }
    /// The earliest time of the next round.
    [[nodiscard]] time_point next_round() const noexcept { return next_round_; }
    /// The suspected addresses at `now`.
    [[nodiscard]] std::optional<time_point> suspected_since(const host_port& addr,
                                                            time_point now) const;

private:
    void end_round(time_point now);
    master_change set_master(const host_port& hp);
    verdict choose(time_point now);

    resolve_timing timing_;
    std::vector<host_port> sentinels_;
    std::string where_, service_;

    std::optional<host_port> current_;
    bool stale_ = false;
    bool resolving_ = false;
    time_point next_round_{};
    std::chrono::milliseconds backoff_{0};
    std::vector<std::pair<host_port, time_point>> suspects_;
    std::vector<bool> auth_refused_;  // per sentinel: its last connect failed authentication
    std::uint64_t switches_ = 0, rounds_ = 0;
    std::string last_failure_;
    // The address a majority of the configured sentinels named in the last round, if any.
    std::optional<host_port> majority_;
    std::vector<master_candidate> cands_;  // of the round in progress
};

}  // namespace redcoord::detail
