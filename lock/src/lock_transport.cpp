#include "lock_transport.hpp"

#include <redcoord/core/detail/refusal.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/core/fan_out.hpp>
#include <redcoord/core/replication.hpp>
#include <redcoord/core/runtime.hpp>
#include <redcoord/core/token.hpp>

#include <algorithm>
#include <string>

namespace redcoord::detail {

using clock_type = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {

// The time a round's replies are stamped with: the lock's runtime clock, on which the round
// started (lock_core's rt is the first pool's runtime).
clock_type::time_point lease_now(const connection_pool& p) { return p.runtime()->clock().now(); }

node_result answered(reply r) {
    node_result nr;
    nr.state = node_result::status::answered;
    nr.value = std::move(r);
    return nr;
}

node_result failed(node_result::status s, std::string why) {
    node_result nr;
    nr.state = s;
    nr.error = std::move(why);
    return nr;
}

// Runs the round's command on the pools of `nodes` (empty: all of `pools`) under one
// deadline and feeds each node's outcome into `round` (nodes nothing reached as busy or
// connecting, so the engine can say which to send again), best effort: keys left behind
// expire after their TTL. With `detach` it returns once sent (those nodes stay pending).
void fan_out_into(lock_round& round, std::span<connection_pool* const> pools,
                  std::span<const std::size_t> nodes, milliseconds timeout, bool detach) noexcept {
    try {
        std::vector<connection_pool*> subset;
        for (auto i : nodes) subset.push_back(pools[i]);
        const auto cmd = round.command();
        fan_out_options fo;
        fo.timeout = timeout;
        fo.tuning.detach = detach;
        const auto results =
            fan_out(nodes.empty() ? pools : std::span<connection_pool* const>(subset), *cmd.lua,
                    cmd.keys(), cmd.args(), fo);
        const auto now = lease_now(*pools.front());
        for (std::size_t i = 0; i < results.size(); ++i)
            round.on_result(nodes.empty() ? i : nodes[i], results[i], now);
    } catch (...) {}
}

class single final : public lock_transport {
public:
    single(connection_pool& pool, std::size_t replicas, milliseconds replica_timeout)
        : pool_(pool), replicas_(replicas), replica_timeout_(replica_timeout), one_{&pool} {}

    std::span<connection_pool* const> pools() const noexcept override { return one_; }

    std::exception_ptr run(lock_round& round, const round_io& io) override {
        const auto cmd = round.command();
        pooled_connection conn;
        std::optional<milliseconds> budget;
        try {
            budget = io_budget(io);
            conn = borrow(budget, cmd.keys().front());
        } catch (const pool_exhausted& e) {  // nothing sent: nothing to give back
            round.on_not_sent(0, node_outcome::status::busy, e.what());
            return std::current_exception();
        } catch (const error& e) {
            round.on_not_sent(0, node_outcome::status::unreachable, e.what());
            return std::current_exception();
        }
        const bool lost_reply_is_unknown =
            round.kind() == round_kind::extend || round.kind() == round_kind::release;
        try {
            std::optional<std::size_t> acks;
            reply r;
            if (replicas_ > 0 &&
                (round.kind() == round_kind::acquire || round.kind() == round_kind::extend)) {
                auto rr = run_then_wait(*conn, *cmd.lua, cmd.keys(), cmd.args(), replicas_,
                                        replica_timeout_);
                r = std::move(rr.result);
                acks = rr.acks;
            } else {
                r = budget ? cmd.lua->run_for(*conn, *budget, cmd.keys(), cmd.args())
                           : cmd.lua->run(*conn, cmd.keys(), cmd.args());
            }
            round.on_result(0, answered(std::move(r)), lease_now(pool_), acks);
        } catch (const reply_error& e) {  // the script refused: the connection is fine
            round.on_result(0, answered(reply::make_text(reply::kind::error, e.what())),
                            lease_now(pool_));
            return std::current_exception();
        } catch (const error& e) {
            const auto s = dynamic_cast<const timeout_error*>(&e)
                               ? node_result::status::timeout
                               : node_result::status::connection_failed;
            round.on_result(0, failed(s, e.what()), lease_now(pool_));
            // A write whose reply is lost may or may not have happened: say so.
            if (lost_reply_is_unknown)
                return std::make_exception_ptr(
                    outcome_unknown(std::string("lock: reply lost, outcome unknown: ") + e.what()));
            return std::current_exception();
        }
        const auto& o = round.outcomes()[0];
        if (o.state == node_outcome::status::error)
            return std::make_exception_ptr(protocol_error("lock: unexpected reply: " + o.detail));
        return nullptr;
    }

    void give_back(lock_round& round, std::span<const std::size_t> nodes,
                   const round_io& io) noexcept override {
        if (nodes.empty()) return;
        if (const auto budget = io_budget(io)) {
            // Within a timed wait: sent without waiting for the reply, on an idle connection or
            // one connected within the budget, so a stalled server cannot hold the caller past
            // its deadline.
            return fan_out_into(round, one_, {}, std::max(*budget, milliseconds(20)), true);
        }
        const auto cmd = round.command();
        try {
            auto conn = borrow_or_busy(round);
            if (!conn) return;
            round.on_result(0, answered(cmd.lua->run(*conn, cmd.keys(), cmd.args())),
                            lease_now(pool_));
        } catch (const std::exception& e) {
            // An undeleted key expires after its TTL.
            round.on_result(0, failed(node_result::status::connection_failed, e.what()),
                            lease_now(pool_));
        } catch (...) {}
    }

    void send(lock_round& round, const round_io&) noexcept override {
        const auto cmd = round.command();
        try {
            auto conn = borrow_or_busy(round);
            if (!conn) return;
            cmd.lua->send(*conn, cmd.keys(), cmd.args());
            round.on_result(0, node_result{}, lease_now(pool_));  // sent, not waited for
        } catch (const std::exception& e) {
            // Not sent or broken: the key expires after its TTL.
            round.on_not_sent(0, node_outcome::status::unreachable, e.what());
        } catch (...) {}
    }

    std::vector<endpoint> waiter_endpoints() const override { return {pool_.where()}; }

private:
    // A pooled connection, or none when every one stayed leased: then the round records the
    // node as busy (nothing sent), which a release resends. Connect failures throw.
    pooled_connection borrow_or_busy(lock_round& round) {
        try {
            return pool_.borrow_for(round.command().keys().front());
        } catch (const pool_exhausted& e) {
            round.on_not_sent(0, node_outcome::status::busy, e.what());
            return {};
        }
    }

    // How long one request of a timed acquire may take: what is left of its wait
    // (try_lock_for(10ms) must not block for the pool's and connection's timeouts, which are
    // seconds), capped by command_timeout.
    std::optional<milliseconds> io_budget(const round_io& io) const {
        if (!io.deadline) return std::nullopt;
        // Rounded up: a request that times out has reached the deadline, so the wait ends
        // without the lock instead of failing with a timeout of its own making.
        const auto left = std::max(
            std::chrono::ceil<milliseconds>(*io.deadline - clock_type::now()), milliseconds(10));
        const auto cap = pool_.where().command_timeout;
        return std::min(left, cap.count() > 0 ? cap : left);
    }

    // A lease on the server of `key` (its slot's master on a cluster).
    pooled_connection borrow(std::optional<milliseconds> budget, std::string_view key) {
        return budget ? pool_.borrow_for(key, std::min(*budget, pool_.options().borrow_timeout))
                      : pool_.borrow_for(key);
    }

    connection_pool& pool_;
    std::size_t replicas_;
    milliseconds replica_timeout_;
    connection_pool* one_[1];
};

class fanned final : public lock_transport {
public:
    fanned(std::vector<connection_pool*> nodes, milliseconds node_timeout)
        : nodes_(std::move(nodes)), node_timeout_(node_timeout) {}

    std::span<connection_pool* const> pools() const noexcept override { return nodes_; }

    std::exception_ptr run(lock_round& round, const round_io& io) override {
        const auto cmd = round.command();
        const auto start = round.start();
        std::vector<connection_pool*> subset;
        const auto pools = some(io.only, subset);
        auto node = [&](std::size_t j) { return io.only.empty() ? j : io.only[j]; };
        fan_out_options fo;
        fo.timeout = node_timeout_;
        fo.tuning.reach_all = io.reach_all;
        // Decided early, a node still in flight ran the script unless SCRIPT FLUSH emptied its
        // cache since its connection last used it: for an acquire or an extension "did not
        // run" is the safe side (no key taken, no validity claimed from that node), and a
        // release reaches such nodes anyway (reach_all re-runs a flushed script as EVAL).
        // fan_out hands over only replies it read within its deadline; their latency also
        // counts the time until it got to them (a loaded machine), which must not make them late.
        auto arrived = [&](const node_result& r) {
            return std::min(start + r.latency, round.deadline());
        };
        fo.stop_when = [&](std::span<const node_result> rs) {
            for (std::size_t i = 0; i < rs.size(); ++i)
                if (rs[i].state != node_result::status::pending)
                    round.on_result(node(i), rs[i], arrived(rs[i]));
            return round.decided();
        };
        const auto results = fan_out(pools, *cmd.lua, cmd.keys(), cmd.args(), fo);
        for (std::size_t i = 0; i < results.size(); ++i)
            round.on_result(node(i), results[i], arrived(results[i]));
        return refused_for_good(results, *cmd.lua);
    }

    void give_back(lock_round& round, std::span<const std::size_t> nodes,
                   const round_io&) noexcept override {
        if (!nodes.empty()) fan_out_into(round, nodes_, nodes, node_timeout_, false);
    }

    void send(lock_round& round, const round_io& io) noexcept override {
        fan_out_into(round, nodes_, io.only, node_timeout_, true);
    }

    std::vector<endpoint> waiter_endpoints() const override {
        // A majority of the nodes, chosen at random per object, is enough to hear a release:
        // a holder needs a majority too, so any lock held while all of ours are down would
        // share a node with them. Fewer listeners mean less work per release.
        std::vector<endpoint> eps;
        for (auto* p : nodes_) eps.push_back(p->where());
        for (std::size_t i = eps.size(); i > 1; --i)
            std::swap(eps[i - 1], eps[random_between(0, i - 1)]);
        eps.resize(quorum(eps.size()));
        return eps;
    }

private:
    // ACL refusals (a user missing a command, key or channel on some nodes) that leave a
    // majority out of reach whatever the others answer: no retry can cure them, so the
    // round fails with permission_error instead of waiting for a majority (a minority of
    // misconfigured nodes only costs redundancy, as a minority of dead ones does).
    std::exception_ptr refused_for_good(const std::vector<node_result>& results,
                                        const script& lua) const {
        std::size_t refused = 0;
        std::exception_ptr first;
        for (const auto& r : results) {
            const bool replied = r.value && r.value->is_error();
            const std::string& text = replied ? r.value->text() : r.error;
            if ((!replied && r.state != node_result::status::connection_failed) ||
                !is_permission_refusal(text))
                continue;
            ++refused;
            if (!first) first = reply_exception(text, replied ? "EVALSHA" : "");
        }
        if (refused == 0 || refused <= nodes_.size() - quorum(nodes_.size())) return nullptr;
        try {
            std::rethrow_exception(first);
        } catch (const permission_error&) {
            try {
                rethrow_with_script(lua);
            } catch (...) {
                return std::current_exception();
            }
        }
        return first;
    }

    // The pools of `only` (empty: all of them, without a copy); `store` holds a subset.
    std::span<connection_pool* const> some(std::span<const std::size_t> only,
                                           std::vector<connection_pool*>& store) const {
        if (only.empty()) return nodes_;
        for (auto i : only) store.push_back(nodes_[i]);
        return store;
    }

    std::vector<connection_pool*> nodes_;
    milliseconds node_timeout_;
};

}  // namespace

std::unique_ptr<lock_transport> single_transport(connection_pool& pool, std::size_t replicas,
                                                 milliseconds replica_timeout) {
    return std::make_unique<single>(pool, replicas, replica_timeout);
}

std::unique_ptr<lock_transport> fan_out_transport(std::vector<connection_pool*> nodes,
                                                  milliseconds node_timeout) {
    return std::make_unique<fanned>(std::move(nodes), node_timeout);
}

}  // namespace redcoord::detail
