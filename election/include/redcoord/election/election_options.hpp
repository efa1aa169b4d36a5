#pragma once
/// @file
/// Settings of an election and the leadership deadline arithmetic (DESIGN.md §Election,
/// seed 000 §选举算法).

#include <redcoord/core/keys.hpp>

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

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
    /// the base of the local deadline). Default 20 s (the seed's). Must be > 0; 100 ms is
    /// fine for tests on a quiet machine.
    std::chrono::milliseconds term{20000};
    /// How often a candidate campaigns (a leader renews). nullopt means term / 3.
    /// Must be > 0 and < term.
    std::optional<std::chrono::milliseconds> retry_period;
    /// Clock drift allowance subtracted from the term for the local deadline. nullopt means
    /// term / 100 + 2 ms (the Redlock rule). Must be >= 0 and < term.
    std::optional<std::chrono::milliseconds> drift;
    /// Replicas that must acknowledge a round (Redis WAIT) before it counts as confirmed; 0
    /// confirms on the master's reply alone. With >= 1 a failover to an acknowledged replica
    /// keeps the holder and its expiry, so the promoted master cannot elect a second leader
    /// while the old one's deadline runs.
    int replicas = 0;
    /// How long WAIT may block for `replicas` acknowledgements; must be > 0 when replicas > 0
    /// and should be well below the term. Ignored when replicas == 0.
    std::chrono::milliseconds replica_timeout{100};
    std::chrono::milliseconds epoch_ttl{std::chrono::hours(24)};
    /// Prefix of every key and channel (see core/keys.hpp).
    std::string key_prefix{default_prefix};
};

/// election_options with every default filled in and every rule checked.
struct resolved_election_options {
    std::string identity;                     ///< Never empty.
    std::chrono::milliseconds term;           ///< > 0.
    std::chrono::milliseconds retry_period;   ///< In (0, term).
    std::chrono::milliseconds drift;          ///< In [0, term).
    int replicas;                             ///< >= 0.
    std::chrono::milliseconds replica_timeout;///< > 0 when replicas > 0.
    std::chrono::milliseconds epoch_ttl;
    std::string key_prefix;
};

/// Fills in defaults and validates `opts` for the election `name`.
/// @throws invalid_argument for an empty/CR/LF name or identity, term <= 0, retry_period <= 0
///         or >= term, drift < 0 or >= term, replicas < 0, replica_timeout <= 0 with replicas.
[[nodiscard]] resolved_election_options resolve(std::string_view name, const election_options& opts);

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
/// epoch counter that never expires (`...:epoch`) and the handoff channel (`...:handoff`).
struct election_keys {
    std::string selector;  ///< Hash {round, holder, epoch} with the term as its PEXPIRE.
    std::string epoch;     ///< Integer counter of leaderships; never expires, never reset.
    std::string channel;   ///< Pub/sub channel; payload: the identity of a leader that resigned.
};

/// Builds the keys of election `name` under `prefix`. Does not validate.
[[nodiscard]] election_keys make_election_keys(std::string_view prefix, std::string_view name);

}  // namespace redcoord
