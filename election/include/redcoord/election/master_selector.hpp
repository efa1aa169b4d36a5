#pragma once
/// @file
/// One candidate's single campaign round of the hardened master_selector election: a counter
/// hash with an expiry, renewed only by its holder.

#include <redcoord/core/export.hpp>
#include <redcoord/core/pool.hpp>
#include <redcoord/election/campaign_result.hpp>
#include <redcoord/election/election_options.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

REDCOORD_API_BEGIN
namespace redcoord {

/// The hardened master_selector: each round is ONE Lua script that increments the selector,
/// sets the PEXPIRE of the term right after that increment and before any step that can fail
/// (Redis does not roll a script back on a runtime error, so not even a corrupt epoch key can
/// leave a selector without expiry), and checks the recorded holder. Only the holder's rounds
/// refresh the term, so a live leader keeps winning (re-election preference) and a
/// leader that was paused past its term cannot take back a selector another candidate holds.
///
/// The holder is this candidate's identity plus a random nonce of this master_selector object
/// (its incarnation): a process restarted with the same configured identity while the old
/// incarnation's selector lives is a different holder, so it leads only in a new term, under
/// a new, greater epoch, and the old incarnation (if it was only paused) cannot renew the new
/// one's leadership. A selector written without a nonce (an older version) is renewed by
/// nobody and expires after its term.
///
/// A leadership is continuous only while this object's local lease holds: a round that finds
/// us still holder after our last lease ran out (the server keeps the selector up to `drift`
/// longer), or whose renewal reply arrives after that lease ended, does not continue the old
/// term. The first starts a new term with a new epoch; the second is not counted as a win,
/// so the next round starts one. No two terms of a candidate share an epoch.
///
/// Epochs (fencing tokens): a new leadership's epoch is max(counter + 1, the server's TIME in
/// microseconds, the highest epoch this candidate has seen + 1), stored in the counter key,
/// which expires `epoch_ttl` after the last leadership or renewal. So epochs keep increasing
/// across the counter's expiry (the clock has moved on) and across its loss in a failover to
/// a replica that missed it, unless the server clock also stepped back further than the time
/// elapsed. Epochs stay below 2^53 (exact as Lua numbers and doubles); the script fails with a
/// reply_error rather than go past it.
///
/// Caveats: with `replication.replicas == 0` an asynchronous failover can lose the latest
/// leadership and its counter; under an `allkeys-*` maxmemory-policy the counter (and, under
/// memory pressure, the selector) can be evicted. Then only the server clock and the floors of
/// candidates that saw the epoch keep epochs increasing, and a candidate elected by a promoted
/// replica may lead while the old leader's local deadline still runs. Where epochs fence
/// writes, run Redis with `noeviction` or a `volatile-*` policy and use `replication.replicas >= 1`.
///
/// Keys: see make_election_keys(). Values travel as ARGV only.
///
/// @par Thread safety
/// campaign_once(), resign() and leader() may be called from any thread
/// (each borrows its own connection from the pool).
///
/// @par Errors
/// The constructor throws invalid_argument; campaign_once(), resign() and leader() throw
/// connection_error, timeout_error or pool_exhausted on transport failures and reply_error when the
/// server refuses the script (permission_error for an ACL refusal).
///
/// @par Cost
/// campaign_once(): one EVALSHA round trip (plus WAIT in the same write when replicas > 0);
/// resign(): one EVALSHA (DEL and PUBLISH inside); leader(): one HGET.
class master_selector {
public:
    /// @throws invalid_argument for a bad name or options (see resolve()).
    master_selector(connection_pool& pool, std::string name, election_options opts = {});

    /// Runs one round. Blocking: one round trip (plus WAIT when replicas > 0, pipelined); the
    /// script's reply is read within the endpoint's command_timeout, WAIT's within
    /// replica_timeout + command_timeout (core run_then_wait).
    /// @throws connection_error, timeout_error, pool_exhausted on transport failures;
    /// @throws reply_error when the server refuses the script: a key of the wrong type, an epoch
    ///         counter that is not an integer, or an epoch that would reach 2^53. The selector
    ///         keeps (or gets) its expiry in every case.
    [[nodiscard]] campaign_result campaign_once();
    /// The same, bounded: when `replicas` == 0 the whole round (a connect if one is needed, the
    /// send and the reply) ends within `reply_timeout` (milliseconds; zero: as campaign_once()).
    /// A connect still under way then goes on in the pool's background dial and serves the next
    /// round. With replicas, a leader's round (one that continues its lease) ends the script's
    /// reply and WAIT's by `reply_timeout` from the call too, so a leader whose master stalls
    /// hears of it by its lease end; a candidate's round keeps the endpoint's timeouts and
    /// WAIT's (its first rounds on a new master after a failover pay a Sentinel lookup, a
    /// connect and a NOSCRIPT resend). leader_elector bounds its rounds this way (by its retry
    /// period plus, with replicas, replica_timeout, and by a leader's lease end).
    /// @throws as campaign_once(); timeout_error when no reply came in time.
    [[nodiscard]] campaign_result campaign_once(std::chrono::milliseconds reply_timeout);

    /// Deletes the selector if this candidate (identity and this object's nonce) holds it and
    /// publishes a handoff signal (payload: this identity) on the election's channel, both in
    /// one script. Returns true if it did.
    /// @throws as campaign_once().
    bool resign();

    /// The current holder's identity read from Redis (nullopt: no leader).
    /// @throws as campaign_once().
    [[nodiscard]] std::optional<std::string> leader();

    /// The options in force, every default filled in.
    [[nodiscard]] const resolved_election_options& options() const noexcept { return opts_; }
    /// The election's name, as given.
    [[nodiscard]] const std::string& name() const noexcept { return name_; }
    /// The election's keys and hand-off channel.
    [[nodiscard]] const election_keys& keys() const noexcept { return keys_; }
    /// The highest epoch seen in any reply so far.
    [[nodiscard]] std::uint64_t max_epoch_seen() const noexcept { return max_epoch_.load(); }

private:
    connection_pool& pool_;
    std::string name_;
    resolved_election_options opts_;
    election_keys keys_;
    std::string nonce_;  // this incarnation's; recorded next to the holder identity
    std::atomic<std::uint64_t> max_epoch_{0};
    // The local lease end our last round confirmed (ticks of the runtime clock); 0: none.
    std::atomic<std::int64_t> lease_end_{0};
};

}  // namespace redcoord

REDCOORD_API_END
