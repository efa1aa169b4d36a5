#include "connection_impl.hpp"
#include "pool_access.hpp"

#include <redcoord/core/deadline.hpp>
#include <redcoord/core/detail/refusal.hpp>
#include <redcoord/core/detail/script_argv.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/core/fan_out.hpp>
#include <redcoord/core/script.hpp>

#include <poll.h>

#include <cerrno>
#include <ctime>
#include <system_error>
#include <thread>

namespace redcoord {
namespace {

using clock_type = std::chrono::steady_clock;

struct node_io {
    pooled_connection lease;
    connection::impl* conn = nullptr;
    bool waiting = false;
    bool sent = false;  // the command went out on this node's connection
    bool retried_noscript = false;
    // The command in flight is a script by SHA, so its reply may be NOSCRIPT.
    bool by_sha = false;
};

std::vector<std::string_view> views(const std::vector<std::string>& v) {
    return {v.begin(), v.end()};
}

// What to send: `argv` as is, or, with `sha` set, a script as EVALSHA (`argv`) on connections
// that have seen it run and EVAL (`eval`, built only when needed) on the others and after
// NOSCRIPT.
struct payload {
    std::span<const std::string_view> argv;
    std::function<std::vector<std::string_view>()> eval;
    const std::string* sha = nullptr;
};

std::vector<node_result> run(std::span<connection_pool* const> pools, const payload& what,
                             const fan_out_options& opts) {
    const auto& argv = what.argv;
    if (opts.timeout.count() <= 0) throw invalid_argument("fan-out timeout must be > 0");
    if (argv.empty()) throw invalid_argument("empty command");
    // On a cluster pool the lease goes to the master of the command's first key: a pipelined
    // command's MOVED is not followed.
    const std::string_view route = detail::routing_key(argv);
    for (auto* p : pools)
        if (!p) throw invalid_argument("fan-out given a null pool");

    const auto start = clock_type::now();
    const auto deadline = deadline_after(opts.timeout, start);
    const std::size_t n = pools.size();
    std::vector<node_result> results(n);
    std::vector<node_io> io(n);
    // Encoded once for all nodes; the EVAL form only if some connection needs it.
    const detail::formatted_command encoded(argv);
    std::optional<detail::formatted_command> eval_encoded;
    auto eval_resp = [&] {
        if (!eval_encoded) eval_encoded.emplace(what.eval());
        return eval_encoded->resp();
    };
    std::size_t outstanding = 0;

    auto elapsed = [&] {
        return std::chrono::duration_cast<std::chrono::microseconds>(clock_type::now() - start);
    };
    auto finish_failed = [&](std::size_t i, node_result::status st, std::string why) {
        results[i].state = st;
        results[i].error = std::move(why);
        results[i].latency = elapsed();
        if (io[i].conn) io[i].conn->poisoned = true;
        if (io[i].waiting) --outstanding;
        io[i].waiting = false;
        io[i].lease.reset();
    };
    auto should_stop = [&] {
        return opts.stop_when && opts.stop_when(std::span<const node_result>(results));
    };

    auto send = [&](std::size_t i) {
        try {
            io[i].conn = &detail::connection_access::get(*io[i].lease);
            if (io[i].conn->poisoned) throw connection_error("connection unusable");
            // A write whose replies are not all waited for (a release) goes as EVAL: a flushed
            // script cache cannot refuse it, so it runs even if no one reads its reply.
            const bool full = what.sha && (opts.tuning.detach || opts.tuning.reach_all ||
                                           !io[i].conn->knows_script(*what.sha));
            io[i].conn->append_formatted(full ? eval_resp() : encoded.resp());
            io[i].by_sha = !full && what.eval;
            // An EVAL that reaches the server loads the script whatever the reply, unless the
            // ACL refuses it (unlearned when that reply comes).
            if (full) io[i].conn->learned_script(*what.sha);
            io[i].sent = true;  // appended: it may reach the server even if the flush fails
            io[i].conn->flush();
            io[i].waiting = true;
            ++outstanding;
        } catch (const timeout_error& e) {
            finish_failed(i, node_result::status::timeout, e.what());
        } catch (const error& e) {
            finish_failed(i, node_result::status::connection_failed, e.what());
        }
    };

    bool stopped = false;
    std::vector<pollfd> fds;
    std::vector<std::size_t> which;
    // Reads replies from whichever node answers first until every sent command is answered,
    // the caller's predicate says stop, or the shared deadline passes.
    auto collect = [&] {
        bool last_look = false;
        while (outstanding > 0 && !stopped && !last_look) {
            auto now = clock_type::now();
            // Past the deadline, one zero-wait look still takes replies already in the buffers.
            last_look = now >= deadline;
            fds.clear();
            which.clear();
            for (std::size_t i = 0; i < n; ++i)
                if (io[i].waiting) {
                    fds.push_back(pollfd{io[i].conn->ctx->fd, POLLIN, 0});
                    which.push_back(i);
                }
            auto left_ns =
                last_look
                    ? 0
                    : std::chrono::duration_cast<std::chrono::nanoseconds>(deadline - now).count();
            timespec ts{static_cast<time_t>(left_ns / 1'000'000'000),
                        static_cast<long>(left_ns % 1'000'000'000)};
            int rc = ::ppoll(fds.data(), fds.size(), &ts, nullptr);
            if (rc < 0) {
                if (errno == EINTR) continue;
                break;
            }
            for (std::size_t k = 0; k < fds.size() && !stopped; ++k) {
                if (!fds[k].revents) continue;
                std::size_t i = which[k];
                auto& c = *io[i].conn;
                try {
                    c.read_ready([&](reply& r) {
                        if (is_noscript(r) && !io[i].retried_noscript && what.eval) {
                            io[i].retried_noscript = true;
                            io[i].by_sha = false;
                            c.append_formatted(eval_resp());
                            if (what.sha) c.learned_script(*what.sha);
                            c.flush();
                            return true;
                        }
                        // A cluster node's MOVED is the caller's reply, but the slot map learns it.
                        if (r.is_error())
                            if (auto f = c.cluster.lock()) f->seen(c, r);
                        // A refused EVAL loaded nothing: EVALSHA next time would run the script
                        // from a cache someone else filled, for a user who may not run it.
                        if (what.sha && !io[i].by_sha && r.is_error() &&
                            detail::is_permission_refusal(r.text()))
                            c.forgot_script(*what.sha);
                        results[i].state = node_result::status::answered;
                        results[i].value = std::move(r);
                        results[i].latency = elapsed();
                        io[i].waiting = false;
                        --outstanding;
                        io[i].lease.reset();
                        stopped = should_stop();
                        return false;
                    });
                } catch (const timeout_error& e) {
                    finish_failed(i, node_result::status::timeout, e.what());
                    stopped = should_stop();
                } catch (const error& e) {
                    finish_failed(i, node_result::status::connection_failed, e.what());
                    stopped = should_stop();
                }
            }
        }
    };

    // Round 1: nodes with an idle connection get the command at once, and their replies
    // are collected before anything waits on a connect.
    std::vector<std::size_t> need_connect;
    for (std::size_t i = 0; i < n; ++i) {
        io[i].lease = detail::pool_access::take_idle(*pools[i]);  // none on a cluster
        if (io[i].lease)
            send(i);
        else
            need_connect.push_back(i);
    }
    stopped = opts.tuning.detach || should_stop();
    collect();

    // Round 2: the rest get a lease in parallel (a connect, or a wait for a pooled connection
    // another thread holds), each bounded by what is left of the deadline, so k unreachable
    // nodes cost one deadline, not k. The connects themselves run in the pool's background
    // dial with the whole connect_timeout: one that outlasts this round is `connecting` and
    // serves the next round instead of being cut short, and thrown away, every round.
    // A decided round that must still reach every node sends to the rest and reads nothing more.
    const bool decided_early = stopped && !opts.tuning.detach;
    if ((!stopped || opts.tuning.detach || opts.tuning.reach_all) && !need_connect.empty()) {
        std::vector<std::string> connect_error(n);
        std::vector<node_result::status> connect_failure(n, node_result::status::connection_failed);
        // Zero once the deadline has passed: the connect is still started (prepare), for the next round.
        auto dial = [&](std::size_t i) noexcept {
            try {
                // A lease that comes in the round's last quarter is not taken: a command sent then
                // would time out unanswered (unknown), where "not sent" is clean and can be resent.
                io[i].lease = detail::pool_access::borrow_bounded(
                    *pools[i], time_left(deadline - opts.timeout / 4), route);
            } catch (const detail::still_connecting& e) {
                connect_error[i] = e.what();
                connect_failure[i] = node_result::status::connecting;
            } catch (const timeout_error& e) {
                connect_error[i] = e.what();
                connect_failure[i] = node_result::status::timeout;
            } catch (const pool_exhausted& e) {
                connect_error[i] = e.what();
                connect_failure[i] = node_result::status::pool_exhausted;
            } catch (const std::exception& e) {
                connect_error[i] = e.what();
            } catch (...) {
                connect_error[i] = "unknown failure while connecting";
            }
        };
        // Every needed connect starts at once in its pool's background dial; the waits
        // below then overlap (all end by the same deadline), with no thread of the round's own.
        for (auto i : need_connect) detail::pool_access::prepare(*pools[i]);
        for (auto i : need_connect) {  // sent on lease: its reply comes while the next waits
            dial(i);
            if (io[i].lease)
                send(i);
            else
                finish_failed(i, connect_failure[i], connect_error[i]);
        }
        stopped = opts.tuning.detach || decided_early || should_stop();
        collect();
    }

    // A detached or reach_all round is a write whose sender does not wait for every reply (a
    // release): if its EVALSHA meets a flushed script cache, the next reader re-runs it. Any
    // other round decided early (an acquire, an extend) must not run late: for its stragglers
    // "did not run" is the safe side.
    auto rerun_if_noscript = [&](std::size_t i) noexcept -> std::string {
        if (!(opts.tuning.detach || opts.tuning.reach_all) || !io[i].by_sha) return {};
        try {
            return std::string(eval_resp());
        } catch (...) {
            // Out of memory: the reply cannot be owed as asked, so the connection goes.
            io[i].conn->poisoned = true;
            return {};
        }
    };
    for (std::size_t i = 0; i < n; ++i) {
        if (!io[i].waiting) continue;
        if (stopped) {
            // Still answering: keep the connection and let its next user skip this reply.
            io[i].conn->owe_last_reply(rerun_if_noscript(i));
            results[i].state = node_result::status::pending;
            io[i].waiting = false;
            io[i].lease.reset();
        } else {
            finish_failed(i, node_result::status::timeout,
                          "no reply within " + std::to_string(opts.timeout.count()) + " ms");
        }
    }
    // Decided before these nodes were reached: "pending" would claim the command may still run
    // there (a Redlock re-lock or a give-back would then count on it).
    for (std::size_t i = 0; i < n; ++i)
        if (!io[i].sent && results[i].state == node_result::status::pending) {
            results[i].state = node_result::status::not_sent;
            results[i].error = "not sent: the round was decided before this node was reached";
        }
    return results;
}

}  // namespace

std::vector<node_result> fan_out(std::span<connection_pool* const> pools,
                                 const std::vector<std::string>& argv,
                                 const fan_out_options& opts) {
    return run(pools, payload{views(argv), {}, nullptr}, opts);
}

std::vector<node_result> fan_out(std::span<connection_pool* const> pools, const script& s,
                                 std::span<const std::string_view> keys,
                                 std::span<const std::string_view> args,
                                 const fan_out_options& opts) {
    // A fan-out goes to independent servers or to one cluster's nodes, never to both.
    const script& form = s.for_cluster(!pools.empty() && pools[0]->where().is_cluster());
    std::string nkeys, eval_nkeys;
    const auto sha = detail::script_argv(form, true, keys, args, nkeys);
    return run(
        pools,
        payload{sha, [&] { return detail::script_argv(form, false, keys, args, eval_nkeys); },
                &form.sha1()},
        opts);
}

}  // namespace redcoord
