#include <redcoord/core/detail/refusal.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/core/fan_out.hpp>
#include <redcoord/core/replication.hpp>
#include <redcoord/core/runtime.hpp>
#include <redcoord/core/script.hpp>
#include <redcoord/core/token.hpp>
#include <redcoord/election/master_selector.hpp>

#include "election_scripts.hpp"
#include "round.hpp"

#include <redcoord_lua/election.hpp>

namespace redcoord {
namespace {

// One campaign round (election/src/lua/election_campaign.lua gives its keys, arguments and
// reply). Redis does not roll a script back on a runtime error, so the selector's expiry is set
// right after the HINCRBY that may create it and before anything that can fail (a corrupt
// counter): no error can leave a selector without expiry. Only the holder's own rounds push the
// expiry out; others merely repair a missing one. The holder is the identity AND the nonce: a
// restarted process (same identity, new nonce) waits for a new term and so gets a new epoch. A
// holder whose local lease ran out has stepped down (its leader work stopped) although the
// selector still names it for up to the drift: its win is a new term with a new epoch, so no
// two terms share a fencing token.
// A new epoch is the largest of the counter + 1, the server clock in microseconds and the
// caller's floor + 1, so epochs keep increasing after the counter expired or was lost; they
// stay below 2^53, where Lua numbers stop being exact.
const script campaign_script(detail::election_campaign_lua);

// The holder resigns: election/src/lua/election_resign.lua.
const script resign_script(detail::election_resign_lua, cluster_publish::sharded);

// The campaign script on one node through fan_out(): connect, send and reply all end by
// `within`, so a stalled or unreachable server costs the caller at most that (a connect still
// under way goes on in the pool's background dial and serves the next round).
reply run_within(connection_pool& pool, std::chrono::milliseconds within,
                 std::span<const std::string_view> keys, std::span<const std::string_view> args) {
    connection_pool* pools[] = {&pool};
    fan_out_options fo;
    fo.timeout = within;
    auto res = fan_out(pools, campaign_script, keys, args, fo);
    auto& n = res.front();
    switch (n.state) {
        case node_result::status::answered:
            // A refusal inside the script names no command (Redis 7.0): list what it calls,
            // as script::run() does.
            if (n.value->is_error() && detail::is_permission_refusal(n.value->text())) {
                try {
                    detail::throw_reply_error(n.value->text(), "EVALSHA", "election round");
                } catch (const permission_error&) {
                    detail::rethrow_with_script(campaign_script);
                }
            }
            return std::move(*n.value);
        case node_result::status::connection_failed:
            // A handshake the ACL user may not complete (PING, SELECT) arrives here as text.
            if (detail::is_permission_refusal(n.error))
                detail::throw_reply_error(n.error, "PING", "election round");
            // fan_out() keeps only the text of a refused AUTH (connection.cpp's own words);
            // typed, last_error() tells a wrong password, which no retry cures, from an outage.
            if (n.error.starts_with("authentication failed for "))
                throw auth_error("election round: " + n.error);
            throw connection_error("election round: " + n.error);
        case node_result::status::pool_exhausted:
            throw pool_exhausted("election round: " + n.error);
        default:
            throw timeout_error("election round: no reply within " +
                                std::to_string(within.count()) + " ms");
    }
}

}  // namespace

namespace detail {
// For election_acl_needs(): the scripts whose commands an ACL user needs.
std::vector<const script*> election_scripts() { return {&campaign_script, &resign_script}; }
}  // namespace detail

master_selector::master_selector(connection_pool& pool, std::string name, election_options opts)
    : pool_(pool), name_(std::move(name)), opts_(resolve(name_, opts)),
      keys_(make_election_keys(opts_.prefix, name_)), nonce_(random_token().substr(0, 16)) {}

campaign_result master_selector::campaign_once() {
    return campaign_once(std::chrono::milliseconds::zero());
}

// reply_timeout zero: the endpoint's command_timeout (the public overload above).
campaign_result master_selector::campaign_once(std::chrono::milliseconds reply_timeout) {
    const std::string term = std::to_string(opts_.term.count());
    const std::string floor = std::to_string(max_epoch_.load());
    const std::string epoch_ttl = std::to_string(opts_.epoch_ttl.count());
    const std::int64_t lease_end_ticks = lease_end_.load();
    const std::chrono::steady_clock::time_point lease_end{
        std::chrono::steady_clock::duration(lease_end_ticks)};
    // The lease's times are on the runtime's clock (runtime_clock); I/O deadlines are steady.
    const runtime_clock& clock = pool_.runtime()->clock();
    const bool continuing = lease_end_ticks != 0 && clock.now() < lease_end;
    const std::string_view keys[] = {keys_.selector, keys_.epoch, keys_.candidates};
    const std::string_view args[] = {opts_.identity, term,      floor,
                                     nonce_,         epoch_ttl, continuing ? "1" : "0"};

    // The clock is read here, around the I/O; what the reply means is decided in round.cpp.
    reply out;
    int acks = -1;
    std::optional<pooled_connection> conn;
    auto sent_at = clock.now();
    const auto io_start = std::chrono::steady_clock::now();
    if (opts_.replication.replicas == 0 && reply_timeout > std::chrono::milliseconds::zero()) {
        // Counted from before the connect: the lease can only end earlier than the server's.
        out = run_within(pool_, reply_timeout, keys, args);
    } else {
        // A leader's bounded round (the elector's) ends by its lease bound once it has a
        // connection: a stalled master must not hold the leader's step-down (its timer's lane)
        // for the endpoint's timeouts. A candidate's round keeps the endpoint's
        // timeouts and WAIT's own: after a failover its first rounds on the new master pay a
        // Sentinel lookup, a connect and a NOSCRIPT resend, and cut to one period they never
        // counted (ElectionFailover.WaitForReplicaPreventsTheUnreplicatedLeadershipRace).
        // The borrow keeps the endpoint's connect_timeout for the same reason; a leader's
        // connection is in use every period, so it gets no health check.
        const bool bounded = continuing && reply_timeout > std::chrono::milliseconds::zero();
        const auto until = io_start + reply_timeout;
        conn.emplace(pool_.borrow_for(keys_.selector));
        sent_at = clock.now();
        if (opts_.replication.replicas == 0) {
            out = campaign_script.run(**conn, keys, args);
        } else {
            // EVALSHA and WAIT in one write: the round counts only once replicas hold it. WAIT's
            // reply may take replica_timeout on top of the command timeout (run_then_wait).
            auto rr = bounded
                          ? detail::run_then_wait_until(**conn, campaign_script, keys, args,
                                                        opts_.replication.replicas,
                                                        opts_.replication.timeout, until)
                          : run_then_wait(**conn, campaign_script, keys, args,
                                          opts_.replication.replicas, opts_.replication.timeout);
            out = std::move(rr.result);
            acks = static_cast<int>(rr.acks);
        }
    }
    const auto received_at = clock.now();
    conn.reset();

    auto res = detail::judge_round(detail::parse_round_reply(out), sent_at, received_at, acks,
                                   opts_.term, opts_.drift, opts_.replication.replicas);
    if (res.leader && continuing && !detail::renewal_in_time(res.new_term, lease_end, received_at))
        res.leader = false;
    lease_end_.store(res.leader ? res.deadline.time_since_epoch().count() : 0);
    for (auto seen = max_epoch_.load();
         res.epoch > seen && !max_epoch_.compare_exchange_weak(seen, res.epoch);) {}
    return res;
}

bool master_selector::resign() {
    auto r = resign_script.run(pool_, {keys_.selector, keys_.candidates},
                               {opts_.identity, keys_.channel, nonce_});
    if (r.is_error()) detail::throw_reply_error(r.text(), "EVALSHA");
    return r.integer() == 1;
}

std::optional<std::string> master_selector::leader() {
    auto r = pool_.command({"HGET", keys_.selector, "holder"});
    return r.maybe_text();
}

}  // namespace redcoord
