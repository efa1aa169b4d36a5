// `redcoord elect NAME [--identity ID] [--term D] [--wait D] [--grace D] -- CMD ARGS...`,
// `redcoord leader NAME`, `redcoord observe NAME [--timeout D] [--interval D]`.
#include "context.hpp"
#include "exit_codes.hpp"
#include "metrics_listen.hpp"
#include "supervisor.hpp"

#include <redcoord/core/detail/refusal.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/core/keys.hpp>
#include <redcoord/core/pool.hpp>
#include <redcoord/election/election_options.hpp>
#include <redcoord/election/leader_elector.hpp>

#include <algorithm>
#include <atomic>
#include <memory>
#include <optional>
#include <thread>

namespace redcoord::cli {
namespace {

using std::chrono::milliseconds;

struct elect_args {
    std::string name;
    std::vector<std::string> command;
    std::string identity;
    milliseconds term{20000};
    milliseconds wait_value{0};
    std::optional<milliseconds> wait;
    milliseconds grace{5000};
    std::string metrics_listen;
};

// The elector campaigns on the runtime's threads, where a failed round goes unseen: without
// this, a refused password or an unreachable server left `elect` waiting silently forever.
// Returns why the latest round failed, or nullopt after a round that got an answer. A refused
// password or ACL permission is rethrown: retrying cannot cure it.
struct trouble {
    std::string why;
    int code = connection;  // the exit status should the wait end on it
    bool operator==(const trouble&) const = default;
};

std::optional<trouble> campaign_trouble(const leader_elector& e) {
    const auto err = e.last_error();
    if (!err) return std::nullopt;
    try {
        std::rethrow_exception(err);
    } catch (const auth_error&) {
        throw;
    } catch (const permission_error&) {
        throw;
    } catch (const std::exception& x) {
        return trouble{x.what(), exit_code_for(x)};
    } catch (...) {
        return trouble{"unknown error", internal};
    }
}

int run_elect(context& ctx, const elect_args& a) {
    // The library allows shorter terms (4 ms with its defaults), but under a supervised CMD
    // they are lost before their first renewal; its message would also name options the CLI
    // does not have.
    if (a.term < min_lease)
        throw invalid_argument("--term must be at least " + format_duration(min_lease) +
                               " (renewed every term/3 and CMD is stopped when less than "
                               "term/4 is left: shorter is lost before it is renewed)");
    signal_source signals;
    wakeup wake;
    const auto ep = ctx.single_endpoint("elect");
    const auto metrics = start_metrics_listen(ctx, a.metrics_listen, {ep});
    connection_pool pool(ep);
    election_options o;
    o.identity = a.identity;
    o.term = a.term;
    o.prefix = ctx.opts.prefix;
    leader_elector elector(pool, a.name, o);
    std::atomic<bool> revoked{false};
    std::atomic<int> revoke_why{-1};
    const auto elected_slot = elector.on_elected([&](std::uint64_t) { wake.notify(); });
    const auto revoked_slot = elector.on_revoked([&](revoke_reason why) {
        revoke_why = static_cast<int>(why);
        revoked = true;
        wake.notify();
    });
    elector.start();

    // Campaign until elected. Without --wait a server outage is waited out (a standby stays a
    // candidate), but said once per new reason, so the wait is never silent.
    const auto started = std::chrono::steady_clock::now();
    const auto deadline = started + a.wait.value_or(forever);
    // A short --wait still lets the first round reach a healthy server, so "not elected" and
    // "no answer" are told apart; well inside the half second a deadline may be overrun.
    const auto first_answer_by = started + milliseconds(250);
    std::optional<trouble> reported;
    while (!elector.is_leader()) {
        const auto trouble = campaign_trouble(elector);
        if (trouble && trouble != reported) {
            print_note("waiting: " + trouble->why);
            emit_event(ctx, json_object()
                                .add("event", "waiting")
                                .add("name", a.name)
                                .add("reason", trouble->why));
        }
        reported = trouble;
        const auto now = std::chrono::steady_clock::now();
        const auto left = std::chrono::duration_cast<milliseconds>(deadline - now);
        const bool unanswered = elector.rounds() == 0;
        if (left <= milliseconds(0) && !(unanswered && now < first_answer_by)) {
            elector.stop();
            const std::string within = format_duration(a.wait.value_or(forever));
            if (trouble || unanswered) {
                std::string why;
                if (trouble) {
                    why = trouble->why;
                } else {
                    why = "no answer from ";
                    why += pool.where().to_string();
                    why += " yet";
                }
                std::string note = "error: not elected leader of '" + a.name + "' within ";
                note += within;
                note += ": ";
                note += why;
                print_note(note);
                emit_event(ctx, json_object()
                                    .add("event", "not_elected")
                                    .add("name", a.name)
                                    .add("reason", why));
                return trouble ? trouble->code : connection;
            }
            print_note("not elected leader of '" + a.name + "' within " + within);
            emit_event(ctx, json_object().add("event", "not_elected").add("name", a.name));
            return timed_out;
        }
        const auto slice = std::clamp(left, milliseconds(1), milliseconds(100));
        if (auto sig = signals.wait_termination(slice, wake.fd())) {
            elector.stop();
            return signal_exit(*sig);
        }
        wake.drain();
    }
    revoked = false;  // any revocation from before this leadership does not count
    const std::uint64_t epoch = elector.epoch();
    emit_event(ctx, json_object()
                        .add("event", "elected")
                        .add("name", a.name)
                        .add("identity", elector.identity())
                        .add("epoch", epoch));

    supervise_result r;
    try {
        supervise_options so;
        so.grace = a.grace;
        so.early_window = std::min(a.grace, elector.options().term / 4);
        r = supervise(
            a.command,
            {"REDCOORD_ELECTION=" + a.name, "REDCOORD_IDENTITY=" + elector.identity(),
             "REDCOORD_EPOCH=" + std::to_string(epoch)},
            &signals, wake,
            [&] {
                hold_state st;
                st.lost = revoked.load() || !elector.is_leader() || elector.epoch() != epoch;
                st.valid_until = elector.deadline();
                return st;
            },
            so);
    } catch (const exec_failure& e) {
        elector.stop();
        print_note(e.what());
        return e.code();
    }
    elector.stop();  // resigns if still leading, so a follower takes over at once
    switch (r.reason) {
        case stop_reason::exited:
            emit_event(
                ctx,
                json_object().add("event", "resigned").add("name", a.name).add("status", r.status));
            return r.status;
        case stop_reason::lost: {
            const int why = revoke_why.load();
            const std::string reason =
                why >= 0 ? std::string(to_string(static_cast<revoke_reason>(why))) : "expiring";
            print_note("leadership of '" + a.name + "' revoked (" + reason +
                       "); CMD was stopped (its status " + std::to_string(r.status) + ")");
            emit_event(ctx, json_object()
                                .add("event", "revoked")
                                .add("name", a.name)
                                .add("reason", reason)
                                .add("status", r.status));
            return lost;
        }
        case stop_reason::signal: return interrupted_exit(ctx, a.name, r.signo, r.status);
    }
    return internal;
}

/// The current holder, epoch and remaining term, read without campaigning.
struct leader_info {
    std::optional<std::string> identity;
    std::uint64_t epoch = 0;
    std::int64_t ttl_ms = -2;
};

leader_info read_leader(connection_pool& pool, const std::string& prefix, const std::string& name) {
    validate_name(name, "election name");
    // The selector hash as master_selector writes it: fields `holder` and `epoch`.
    const election_keys keys = make_election_keys(prefix, name);
    auto c = pool.borrow();
    const reply r = c->command({"HMGET", keys.selector, "holder", "epoch"});
    if (r.is_error()) detail::throw_reply_error(r.text(), "HMGET");
    leader_info info;
    const auto& e = r.elements();
    if (e.size() == 2 && !e[0].is_nil()) {
        info.identity = e[0].text();
        if (!e[1].is_nil()) info.epoch = std::stoull(e[1].text());
        const reply t = c->command({"PTTL", keys.selector});
        if (t.is_integer()) info.ttl_ms = t.integer();
    }
    return info;
}

std::string leader_json(const std::string& name, const leader_info& i) {
    json_object o;
    o.add("name", name).add("leader", i.identity);
    if (i.identity)
        o.add("epoch", i.epoch).add("ttl_ms", i.ttl_ms);
    else
        o.add_raw("epoch", "null");
    return o.str();
}

std::string leader_text(const leader_info& i) {
    return i.identity ? *i.identity + " " + std::to_string(i.epoch) : std::string("none");
}

int run_leader(context& ctx, const std::string& name) {
    exit_on_termination_signal();
    connection_pool pool(ctx.single_endpoint("leader"));
    const leader_info i = read_leader(pool, ctx.opts.prefix, name);
    print_line(ctx.opts.json ? leader_json(name, i) : leader_text(i));
    return i.identity ? ok : no;
}

int run_observe(context& ctx, const std::string& name, std::optional<milliseconds> timeout,
                milliseconds interval) {
    exit_on_termination_signal();
    connection_pool pool(ctx.single_endpoint("observe"));
    const auto deadline = std::chrono::steady_clock::now() + timeout.value_or(forever);
    std::optional<std::pair<std::optional<std::string>, std::uint64_t>> last;
    for (;;) {
        const leader_info i = read_leader(pool, ctx.opts.prefix, name);
        const auto now_seen = std::make_pair(i.identity, i.epoch);
        if (!last || *last != now_seen) {
            last = now_seen;
            print_line(ctx.opts.json ? leader_json(name, i) : leader_text(i));
        }
        const auto left = deadline - std::chrono::steady_clock::now();
        if (left <= std::chrono::steady_clock::duration::zero()) return ok;
        std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(left, interval));
    }
}

}  // namespace

void add_election_commands(CLI::App& app, context& ctx) {
    auto a = std::make_shared<elect_args>();
    auto* elect = app.add_subcommand("elect", "Campaign for leadership; run CMD while leader");
    elect->footer(
        "Waits until elected, then runs CMD in its own process group. When leadership is revoked "
        "(or its\n"
        "local deadline, sent_at + term - drift, comes within min(--grace, term/4)), CMD's group "
        "gets\n"
        "SIGTERM, then SIGKILL after --grace (at the latest at the deadline), and redcoord exits "
        "125.\n"
        "When CMD exits, redcoord resigns (a follower takes over at once) and exits with CMD's "
        "status.\n"
        "A reaper process started before CMD enforces the same deadline while redcoord is paused "
        "or\n"
        "stuck, and stops CMD at once if redcoord dies. CMD sees REDCOORD_ELECTION, "
        "REDCOORD_IDENTITY,\n"
        "REDCOORD_EPOCH (fencing token) and REDCOORD_DEADLINE_MS (leadership left at its start). "
        "With\n"
        "--json, events are JSON lines on stderr (never waited for: dropped and counted when "
        "nobody reads).\n"
        "A refused password (exit 121) or ACL permission (122) ends it at once. An unreachable "
        "server is\n"
        "waited out: 'waiting: REASON' on stderr ({\"event\":\"waiting\"} with --json) when it "
        "starts and\n"
        "whenever the reason changes; with --wait, exit 120 and the reason when --wait passes "
        "without an\n"
        "answer (124 only when the server answered and another candidate leads).");
    elect->add_option("name", a->name, "Election name")->required();
    elect->add_option("command", a->command, "CMD ARGS... (after --)")->required();
    elect->add_option("--identity", a->identity,
                      "This candidate's identity (default: host:pid:random)");
    add_duration(*elect, "--term", a->term,
                 "Leadership term (renewed every term/3; at least 200ms)");
    add_duration(*elect, "--wait", a->wait_value,
                 "Give up when not elected within this: exit 124, or 120 when the server did not "
                 "answer (default: forever, waiting out outages)",
                 false);
    add_duration(*elect, "--grace", a->grace, "Time between SIGTERM and SIGKILL when stopping CMD");
    add_metrics_listen(*elect, a->metrics_listen);
    elect->callback([a, &ctx, elect] {
        if (elect->count("--wait") > 0) a->wait = a->wait_value;
        ctx.run = [a, &ctx] { return run_elect(ctx, *a); };
    });

    auto name = std::make_shared<std::string>();
    auto* leader =
        app.add_subcommand("leader", "Print the current leader and epoch (exit 1: no leader)");
    leader->footer(
        "Output: 'IDENTITY EPOCH', or 'none'. JSON: {\"name\",\"leader\",\"epoch\",\"ttl_ms\"}.");
    leader->add_option("name", *name, "Election name")->required();
    leader->callback([name, &ctx] { ctx.run = [name, &ctx] { return run_leader(ctx, *name); }; });

    struct observe_args {
        std::string name;
        milliseconds timeout{0};
        milliseconds interval{100};
    };
    auto o = std::make_shared<observe_args>();
    auto* observe = app.add_subcommand("observe", "Print leadership changes as they happen");
    observe->footer(
        "One line per change: 'IDENTITY EPOCH' or 'none' (JSON as for 'leader'). Exits 0 after "
        "--timeout.");
    observe->add_option("name", o->name, "Election name")->required();
    add_duration(*observe, "--timeout", o->timeout,
                 "Stop after this long (default: run until interrupted)", false);
    add_duration(*observe, "--interval", o->interval, "Polling interval");
    observe->callback([o, &ctx, observe] {
        std::optional<milliseconds> t;
        if (observe->count("--timeout") > 0) t = o->timeout;
        if (o->interval <= milliseconds(0)) throw CLI::ValidationError("--interval", "must be > 0");
        ctx.run = [o, t, &ctx] { return run_observe(ctx, o->name, t, o->interval); };
    });
}

}  // namespace redcoord::cli
