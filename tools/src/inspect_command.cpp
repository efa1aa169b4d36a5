// `redcoord inspect lock|election|queue|barrier|jobs|semaphore|rwlock|limit NAME [--watch
// [--interval D]]`: what an operator
// needs to see of a live primitive, read without taking part (the parts' inspect_* functions).
#include "context.hpp"
#include "exit_codes.hpp"
#include "inspect_limit.hpp"
#include "os_signals.hpp"

#include <redcoord/core/pool.hpp>
#include <redcoord/election/inspect.hpp>
#include <redcoord/jobs/inspect.hpp>
#include <redcoord/lock/inspect.hpp>
#include <redcoord/queue/inspect.hpp>
#include <redcoord/signaling/inspect.hpp>

#include <csignal>
#include <functional>
#include <map>
#include <memory>

namespace redcoord::cli {
namespace {

using std::chrono::milliseconds;

struct inspect_args {
    std::string name;
    bool watch = false;
    milliseconds interval{1000};
    limit_inspect_args limit;  // the limiters' own options
};

std::int64_t ms(milliseconds d) { return static_cast<std::int64_t>(d.count()); }

std::string or_none(const std::optional<milliseconds>& d) { return d ? format_duration(*d) : "-"; }

json_object& add_ms(json_object& o, std::string_view key, const std::optional<milliseconds>& d) {
    return d ? o.add(key, ms(*d)) : o.add_raw(key, "null");
}

std::string joined(const std::vector<std::string>& items) {
    std::string s;
    for (const auto& i : items) s += (s.empty() ? "" : ", ") + i;
    return s;
}

std::string quoted_list(const std::vector<std::string>& items) {
    std::vector<std::string> q;
    q.reserve(items.size());
    for (const auto& i : items) q.push_back(json_quote(i));
    return json_array(q);
}

// A Redlock resource is held when one holder has a majority of the masters: the quorum of the
// Redlock page's step 3.
void print_lock(const context& ctx, const std::string& name, const std::vector<endpoint>& eps,
                const std::vector<lock_inspection>& views) {
    std::map<std::string, std::size_t> votes;
    std::map<std::string, std::string> labels;  // by holder fingerprint
    for (const auto& v : views)
        if (v.held) {
            ++votes[v.holder];
            labels[v.holder] = v.label;
        }
    std::string majority;
    const std::size_t quorum = views.size() / 2 + 1;
    for (const auto& [holder, n] : votes)
        if (n >= quorum) majority = holder;
    const std::string majority_label = majority.empty() ? "" : labels[majority];
    if (ctx.opts.json) {
        std::vector<std::string> nodes;
        for (std::size_t i = 0; i < views.size(); ++i) {
            const auto& v = views[i];
            json_object o;
            o.add("server", eps[i].to_string()).add("held", v.held).add("holder", v.holder);
            o.add("label", v.label);
            add_ms(o, "ttl_ms", v.ttl_left).add("release_notice", v.release_notice);
            v.fencing_counter ? o.add("fencing_counter", *v.fencing_counter)
                              : o.add_raw("fencing_counter", "null");
            o.add("turn_owner", v.turn_owner);
            add_ms(o, "turn_left_ms", v.turn_left).add("next_in_turn", v.next_in_turn);
            o.add_raw("fair_queue", quoted_list(v.fair_queue));
            nodes.push_back(o.str());
        }
        json_object top;
        top.add("kind", "lock")
            .add("name", name)
            .add("held", !majority.empty())
            .add("holder", majority)
            .add("label", majority_label);
        top.add("quorum", static_cast<std::uint64_t>(quorum)).add_raw("servers", json_array(nodes));
        print_line(top.str());
        return;
    }
    print_line("lock '" + name + "': " +
               (majority.empty()
                    ? std::string("free")
                    : "held by " + majority +
                          (majority_label.empty() ? "" : " (" + majority_label + ")")) +
               (views.size() > 1
                    ? " (Redlock: " + std::to_string(votes.empty() ? 0 : votes.rbegin()->second) +
                          " of " + std::to_string(views.size()) + " masters hold a key, quorum " +
                          std::to_string(quorum) + ")"
                    : ""));
    for (std::size_t i = 0; i < views.size(); ++i) {
        const auto& v = views[i];
        print_line("  server " + eps[i].to_string());
        if (v.held)
            print_line("    holder            " + v.holder +
                       (v.label.empty() ? "" : " " + v.label) + " (ttl " + or_none(v.ttl_left) +
                       ")" + (v.release_notice ? ", a waiter wants the release notice" : ""));
        else
            print_line("    holder            -");
        print_line("    fencing counter   " +
                   (v.fencing_counter ? std::to_string(*v.fencing_counter) : "-"));
        if (v.turn_owner)
            print_line("    turn              " + *v.turn_owner + " (" + or_none(v.turn_left) +
                       " left)" + (v.next_in_turn ? ", next " + *v.next_in_turn : ""));
        if (!v.fair_queue.empty())
            print_line("    fair queue        " + std::to_string(v.fair_queue.size()) +
                       " waiting: " + joined(v.fair_queue));
    }
}

void print_election(const context& ctx, const std::string& name, const election_inspection& v) {
    if (ctx.opts.json) {
        json_object o;
        o.add("kind", "election").add("name", name).add("leader", v.leader).add("epoch", v.epoch);
        add_ms(o, "term_left_ms", v.term_left).add("rounds", v.rounds);
        v.last_epoch ? o.add("last_epoch", *v.last_epoch) : o.add_raw("last_epoch", "null");
        std::vector<std::string> candidates;
        for (const auto& c : v.candidates) {
            json_object e;
            e.add("identity", c.identity).add("expires_in_ms", c.expires_in.count());
            candidates.push_back(e.str());
        }
        o.add_raw("candidates", json_array(candidates));
        print_line(o.str());
        return;
    }
    print_line("election '" + name +
               "': " + (v.leader ? "leader " + *v.leader : std::string("no leader")));
    if (v.leader) {
        print_line("  epoch             " + std::to_string(v.epoch));
        print_line("  term left         " + or_none(v.term_left));
        print_line("  rounds this term  " + std::to_string(v.rounds));
    }
    print_line("  last epoch issued " + (v.last_epoch ? std::to_string(*v.last_epoch) : "-"));
    print_line("  candidates        " + std::to_string(v.candidates.size()));
    for (const auto& c : v.candidates)
        print_line("    " + c.identity + " (drops out in " + format_duration(c.expires_in) + ")");
}

void print_queue(const context& ctx, const std::string& name, const queue_inspection& v) {
    if (ctx.opts.json) {
        std::vector<std::string> consumers;
        for (const auto& c : v.consumers) {
            json_object o;
            o.add("id", c.id)
                .add("in_flight", static_cast<std::uint64_t>(c.in_flight))
                .add("expired", !c.lease_left);
            add_ms(o, "lease_left_ms", c.lease_left);
            add_ms(o, "oldest_in_flight_age_ms", c.oldest_in_flight_age);
            consumers.push_back(o.str());
        }
        json_object o;
        o.add("kind", "queue").add("name", name).add("ready", static_cast<std::uint64_t>(v.ready));
        o.add("in_flight", static_cast<std::uint64_t>(v.in_flight()))
            .add("dead", static_cast<std::uint64_t>(v.dead));
        o.add("expired_consumers", static_cast<std::uint64_t>(v.expired()));
        add_ms(o, "oldest_ready_age_ms", v.oldest_ready_age)
            .add_raw("consumers", json_array(consumers));
        print_line(o.str());
        return;
    }
    print_line("queue '" + name + "': " + std::to_string(v.ready) + " ready, " +
               std::to_string(v.in_flight()) + " in flight, " + std::to_string(v.dead) + " dead");
    print_line("  oldest ready      " + or_none(v.oldest_ready_age) + " old");
    print_line("  consumers         " + std::to_string(v.consumers.size()) + " (" +
               std::to_string(v.expired()) + " expired, awaiting recovery)");
    for (const auto& c : v.consumers)
        print_line(
            "    " + c.id + ": " + std::to_string(c.in_flight) + " in flight" +
            (c.oldest_in_flight_age
                 ? ", oldest " + format_duration(*c.oldest_in_flight_age) + " old"
                 : "") +
            (c.lease_left ? ", lease " + format_duration(*c.lease_left) + " left" : ", EXPIRED"));
}

void print_barrier(const context& ctx, const std::string& name, const barrier_inspection& v) {
    auto names = [](const std::vector<barrier_arrival>& a) {
        std::vector<std::string> n;
        n.reserve(a.size());
        for (const auto& m : a) n.push_back(m.member);
        return n;
    };
    if (ctx.opts.json) {
        std::vector<std::string> arrivals;
        for (const auto& a : v.arrivals)
            arrivals.push_back(
                json_object().add("member", a.member).add("lease_left_ms", ms(a.lease_left)).str());
        json_object o;
        o.add("kind", "barrier").add("name", name).add("generation", v.generation);
        v.parties ? o.add("parties", static_cast<std::uint64_t>(*v.parties))
                  : o.add_raw("parties", "null");
        o.add("arrived", static_cast<std::uint64_t>(v.arrivals.size()))
            .add_raw("arrivals", json_array(arrivals));
        o.add_raw("lapsed", quoted_list(names(v.lapsed)));
        print_line(o.str());
        return;
    }
    print_line("barrier '" + name + "': generation " + std::to_string(v.generation) + ", " +
               std::to_string(v.arrivals.size()) + " of " +
               (v.parties ? std::to_string(*v.parties) : "?") + " arrived");
    for (const auto& a : v.arrivals)
        print_line("    " + a.member + " (lease " + format_duration(a.lease_left) + " left)");
    if (!v.lapsed.empty()) print_line("  lapsed (not counted): " + joined(names(v.lapsed)));
}

void print_jobs(const context& ctx, const std::string& name, const jobs_inspection& v) {
    const auto& n = v.counts;
    if (ctx.opts.json) {
        std::vector<std::string> repeats;
        for (const auto& r : v.repeats) {
            json_object o;
            o.add("name", r.name)
                .add("every_ms", static_cast<std::int64_t>(r.every.count()))
                .add("cron", r.cron)
                .add("time_zone", r.time_zone)
                .add("missed", r.missed)
                .add("last_tick_ms", r.last_tick_ms);
            repeats.push_back(o.str());
        }
        std::vector<std::string> groups;
        for (const auto& g : v.groups)
            groups.push_back(json_object()
                                 .add("name", g.name)
                                 .add("waiting", g.waiting)
                                 .add("active", g.active)
                                 .add("limit", static_cast<std::uint64_t>(g.limit))
                                 .str());
        json_object o;
        o.add("kind", "jobs")
            .add("name", name)
            .add("waiting", n.waiting)
            .add("delayed", n.delayed)
            .add("active", n.active)
            .add("completed", n.completed)
            .add("failed", n.failed)
            .add("dead", n.dead)
            .add("waiting_children", n.waiting_children)
            .add("paused", v.paused);
        add_ms(o, "oldest_waiting_age_ms", v.oldest_waiting_age);
        v.scheduler ? o.add("scheduler", *v.scheduler) : o.add_raw("scheduler", "null");
        o.add("scheduler_epoch", v.scheduler_epoch)
            .add_raw("repeats", json_array(repeats))
            .add_raw("groups", json_array(groups));
        print_line(o.str());
        return;
    }
    print_line("jobs '" + name + "': " + std::to_string(n.waiting) + " waiting, " +
               std::to_string(n.delayed) + " delayed, " + std::to_string(n.active) + " active, " +
               std::to_string(n.completed) + " completed, " + std::to_string(n.failed) +
               " failed, " + std::to_string(n.dead) + " dead, " +
               std::to_string(n.waiting_children) + " waiting_children" +
               (v.paused ? " (paused)" : ""));
    print_line("  oldest waiting    " + or_none(v.oldest_waiting_age) + " old");
    print_line("  scheduler         " +
               (v.scheduler ? *v.scheduler + " (epoch " + std::to_string(v.scheduler_epoch) + ")"
                            : std::string("none")));
    for (const auto& r : v.repeats)
        print_line("    repeat " + r.name + ": " +
                   (r.every.count() > 0 ? "every " + format_duration(r.every)
                                        : "cron '" + r.cron + "' in " + r.time_zone) +
                   ", missed ticks " + r.missed + ", last tick " + std::to_string(r.last_tick_ms));
    for (const auto& g : v.groups)
        print_line("    group " + g.name + ": " + std::to_string(g.waiting) + " waiting, " +
                   std::to_string(g.active) + " active, limit " +
                   (g.limit > 0 ? std::to_string(g.limit) : std::string("none")));
}

// One snapshot printer per kind; pools are made once so --watch reuses their connections.
using printer = std::function<void()>;

printer make_printer(const context& ctx, const std::string& kind, const inspect_args& a,
                     std::vector<std::unique_ptr<connection_pool>>& pools) {
    const std::string& prefix = ctx.opts.prefix;
    if (kind == "lock") {
        auto eps = ctx.endpoints();
        for (const auto& ep : eps) pools.push_back(std::make_unique<connection_pool>(ep));
        return [&ctx, &pools, a, eps, prefix] {
            std::vector<lock_inspection> views;
            views.reserve(pools.size());
            for (auto& p : pools) views.push_back(inspect_lock(*p, a.name, prefix));
            print_lock(ctx, a.name, eps, views);
        };
    }
    pools.push_back(std::make_unique<connection_pool>(ctx.single_endpoint("inspect " + kind)));
    connection_pool& pool = *pools.front();
    if (is_limit_kind(kind)) return make_limit_printer(ctx, kind, a.name, a.limit, pool);
    if (kind == "election")
        return [&ctx, &pool, a, prefix] {
            print_election(ctx, a.name, inspect_election(pool, a.name, prefix));
        };
    if (kind == "queue")
        return [&ctx, &pool, a, prefix] {
            print_queue(ctx, a.name, inspect_queue(pool, a.name, prefix));
        };
    if (kind == "jobs")
        return [&ctx, &pool, a, prefix] {
            print_jobs(ctx, a.name, inspect_jobs(pool, a.name, prefix));
        };
    return [&ctx, &pool, a, prefix] {
        print_barrier(ctx, a.name, inspect_barrier(pool, a.name, prefix));
    };
}

int run_inspect(context& ctx, const std::string& kind, const inspect_args& a) {
    std::vector<std::unique_ptr<connection_pool>> pools;
    const auto print = make_printer(ctx, kind, a, pools);
    if (!a.watch) {
        print();
        return ok;
    }
    // A snapshot per interval until SIGINT/SIGTERM; a failed read is reported and retried, so
    // a watch survives the failover it is often run to observe.
    signal_source signals;
    for (;;) {
        try {
            print();
        } catch (const connection_error& e) {
            print_note(std::string("error: ") + e.what());
        } catch (const timeout_error& e) {
            print_note(std::string("error: ") + e.what());
        }
        if (auto sig = signals.wait_termination(a.interval))
            return *sig == SIGINT || *sig == SIGTERM ? ok : signal_exit(*sig);
    }
}

}  // namespace

void add_inspect_command(CLI::App& app, context& ctx) {
    auto* inspect = app.add_subcommand(
        "inspect", "Show the live state of a lock, election, queue, barrier, job queue or limiter");
    inspect->require_subcommand(1);
    inspect->footer(
        "Reads only (one MULTI/EXEC per snapshot); needs a user that may read the primitive's "
        "keys.\n"
        "Tokens are never shown: a holder is its token's fingerprint (first 16 hex digits of "
        "SHA-1).\n"
        "--watch prints a snapshot every --interval until SIGINT/SIGTERM (exit 0); with --json "
        "one\n"
        "object per line. Several --redis URLs make 'inspect lock' show each Redlock master.");
    struct kind_desc {
        const char* kind;
        const char* what;
    };
    for (const auto& [kind, what] :
         {kind_desc{"lock", "Holder fingerprint, TTL left, fencing counter, waiters"},
          kind_desc{"election", "Leader identity, epoch, term left and candidates"},
          kind_desc{"queue", "Ready, in flight per consumer, dead, expired consumers, oldest age"},
          kind_desc{"barrier", "Generation, parties and arrivals"},
          kind_desc{"jobs", "Jobs per state, oldest waiting age, the scheduler and the repeats"},
          kind_desc{"semaphore", "Holders with their TTLs left, waiters, permits left"},
          kind_desc{"rwlock",
                    "Writer and readers with their TTLs left, waiting writers and readers"},
          kind_desc{
              "limit",
              "A rate limiter's units left and time until full (--window: a sliding window's)"}}) {
        auto a = std::make_shared<inspect_args>();
        auto* sub = inspect->add_subcommand(kind, what);
        sub->add_option("name", a->name, std::string(kind) + " name")->required();
        sub->add_flag("--watch", a->watch, "Print a snapshot every --interval until interrupted");
        add_duration(*sub, "--interval", a->interval, "Time between --watch snapshots");
        add_limit_inspect_options(*sub, kind, a->limit);
        const std::string k = kind;
        sub->callback([a, &ctx, k] {
            if (a->interval <= milliseconds(0))
                throw CLI::ValidationError("--interval", "must be > 0");
            ctx.run = [a, &ctx, k] { return run_inspect(ctx, k, *a); };
        });
    }
}

}  // namespace redcoord::cli
