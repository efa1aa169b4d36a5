#pragma once
/// @file
/// Settings of an election and the leadership deadline arithmetic.

#include <redcoord/core/export.hpp>
#include <redcoord/core/keys.hpp>
#include <redcoord/core/options.hpp>

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

REDCOORD_API_BEGIN
namespace redcoord {

/// How one candidate takes part in an election.
///
/// Thread-safety: a plain value type.
struct election_options {
    /// This candidate's identity, recorded in Redis as the holder while it leads. Must be unique
    /// among candidates (two processes with one identity would share leadership). Empty means a
    /// default of `<hostname>:<pid>:<8 random hex chars>`. Must not contain CR, LF or NUL.
    std::string identity;
    /// The term: how long a leadership lasts without renewal (the selector key's PEXPIRE, and
    /// the base of the local deadline). Default 20 s. Must be in (0, 1 year]; with
    /// the defaults below at least 4 ms; 100 ms is fine for tests on a quiet machine.
    std::chrono::milliseconds term{20000};
    /// How often a candidate campaigns (a leader renews). Zero (the default): term / 3. A
    /// round that got no reply (the server unreachable, a failover under way) is followed by
    /// the next one a quarter of this after its start, so a promoted master is found sooner.
    /// Must be in (0, (term - drift) / 2] once defaulted, so that a leader can miss one renewal
    /// and still renew before its deadline (the spirit of client-go's LeaseDuration >
    /// RenewDeadline > RetryPeriod check); a negative value is rejected.
    std::chrono::milliseconds retry_period{0};
    /// Clock drift allowance subtracted from the term for the local deadline. nullopt (the
    /// default): term / 100 + 2 ms (the Redlock rule). Must be >= 0 and < term. Unlike the
    /// "zero: default" fields of the other parts this stays optional, because zero is a
    /// meaningful allowance here (a single clock, for example in tests).
    std::optional<std::chrono::milliseconds> drift;
    /// Replicas that must acknowledge a round (Redis WAIT, core/options.hpp) before it counts
    /// as confirmed; none by default (the master's reply alone). With replicas >= 1 a failover
    /// to an acknowledged replica keeps the holder and its expiry, so the promoted master cannot
    /// elect a second leader while the old one's deadline runs. `replication.timeout` must then
    /// be in (0, term - drift - retry_period): a renewal sent one retry period after the last
    /// confirmed one must be acknowledged before the deadline.
    replication_options replication;
    /// Expiry of the epoch counter key, refreshed by every new leadership and every renewal,
    /// so an election that is no longer used leaves no key behind for longer than this. Epochs
    /// stay strictly increasing across the counter's expiry because a new epoch is at least
    /// the server's clock in microseconds (see master_selector); the counter only has to
    /// outlast a backward step of that clock. Must be in [term, 10 years]. Default 24 h.
    std::chrono::milliseconds epoch_ttl{std::chrono::hours(24)};
    /// Prefix of every key and channel (see core/keys.hpp), as `prefix` in the other parts.
    std::string prefix{default_prefix};
};

/// election_options with every default filled in and every rule checked.
struct resolved_election_options {
    std::string identity;                    ///< Never empty.
    std::chrono::milliseconds term;          ///< > 0.
    std::chrono::milliseconds retry_period;  ///< In (0, (term - drift) / 2].
    std::chrono::milliseconds drift;         ///< In [0, term).
    /// Replicas WAIT must reach (0: none); the timeout in (0, term - drift - retry_period)
    /// when replicas > 0.
    replication_options replication;
    std::chrono::milliseconds epoch_ttl;  ///< In [term, 10 years].
    std::string prefix;                   ///< Key prefix (core/keys.hpp).
};

/// Fills in defaults and validates `opts` for the election `name`.
/// @throws invalid_argument, naming the rule and the allowed range, for an empty/CR/LF/NUL name
///         or identity, a term outside (0, 1 year] (or too short for the defaults derived from
///         it), a drift outside [0, term), a retry_period < 0 or (once defaulted) outside
///         (0, (term - drift) / 2], a replication.timeout outside (0, term - drift - retry_period)
///         with replicas > 0, or an epoch_ttl outside [term, 10 years].
/// Thread-safety: pure function.
[[nodiscard]] resolved_election_options resolve(std::string_view name,
                                                const election_options& opts);

/// The default identity: `<hostname>:<pid>:<8 random hex chars>`.
[[nodiscard]] std::string default_identity();

/// The local leadership deadline of a round sent at `sent_at` (steady clock): `sent_at + term -
/// drift`. A leader whose next renewal is not confirmed by then steps down. Uses the send time,
/// not the reply time, because the server may have set the expiry any time after sending.
[[nodiscard]] constexpr std::chrono::steady_clock::time_point leader_deadline(
    std::chrono::steady_clock::time_point sent_at, std::chrono::milliseconds term,
    std::chrono::milliseconds drift) noexcept {
    return sent_at + term - drift;
}

/// Redis keys and channel of one election: the selector hash (`<prefix>election:{name}`), the
/// epoch counter (`...:epoch`), the candidates (`...:candidates`) and the handoff channel
/// (`...:handoff`). Every key expires: the selector after a term without its holder's renewal,
/// the counter `epoch_ttl` after the last leadership or renewal, the candidates a term after
/// the last round.
struct election_keys {
    std::string selector;  ///< Hash {round, holder, nonce, epoch} with the term as its PEXPIRE.
    std::string epoch;     ///< Highest epoch handed out; PEXPIRE epoch_ttl, never lowered by us.
    std::string channel;   ///< Pub/sub channel; payload: the identity of a leader that resigned.
    /// Sorted set: each candidate's identity scored with the server time (Unix ms) at which the
    /// term of its last round ends. Written by every round, read only by inspect_election().
    std::string candidates;
};

/// Builds the keys of election `name` under `prefix`. Does not validate.
[[nodiscard]] election_keys make_election_keys(std::string_view prefix, std::string_view name);

}  // namespace redcoord

REDCOORD_API_END
