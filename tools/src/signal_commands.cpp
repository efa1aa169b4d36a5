// `redcoord signal CHANNEL [PAYLOAD] [--unicast]`,
// `redcoord wait CHANNEL... [--any|--all|--unicast] [--timeout D]`,
// `redcoord barrier NAME --parties N [--timeout D]`.
#include "context.hpp"
#include "exit_codes.hpp"
#include "os_signals.hpp"

#include <redcoord/core/pool.hpp>
#include <redcoord/signaling/barrier.hpp>
#include <redcoord/signaling/signal_hub.hpp>

#include <algorithm>
#include <iostream>
#include <iterator>
#include <memory>

namespace redcoord::cli {
namespace {

using std::chrono::milliseconds;

signal_options hub_options(const context& ctx) {
    signal_options o;
    o.prefix = ctx.opts.prefix;
    return o;
}

// A waiter's hub throws only "no pub/sub link confirmed the subscription" when its link cannot
// connect or log in, after its own 3 s, whatever --timeout says. So the server is asked first,
// through the pool (its handshake is the one the link does): a refused password is then an
// auth error at once and an unreachable server says why, and every deadline is cut to
// --timeout so a server that does not answer ends the command in time.
signal_options waiter_options(const context& ctx, std::optional<milliseconds> timeout) {
    signal_options o = hub_options(ctx);
    // A zero or tiny --timeout still leaves a healthy server time to confirm the subscription.
    if (timeout) o.subscribe_timeout = std::clamp(*timeout, milliseconds(500), o.subscribe_timeout);
    return o;
}

endpoint waiter_endpoint(const context& ctx, std::string_view command,
                         std::optional<milliseconds> timeout) {
    endpoint ep = ctx.single_endpoint(command);
    if (timeout) {
        const auto bound = std::max(*timeout, milliseconds(1));
        ep.connect_timeout = std::min(ep.connect_timeout, bound);
        if (ep.command_timeout == milliseconds(0) || ep.command_timeout > bound)
            ep.command_timeout = bound;
    }
    return ep;
}

void check_server(connection_pool& pool) { (void)pool.borrow(); }

struct signal_args {
    std::string channel;
    std::optional<std::string> payload;
    bool unicast = false;
};

int run_signal(context& ctx, const signal_args& a) {
    exit_on_termination_signal();
    connection_pool pool(ctx.single_endpoint("signal"));
    signal_hub hub(pool, {}, hub_options(ctx));
    std::string payload;
    if (a.payload && *a.payload == "-") {
        payload.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
    } else if (a.payload) {
        payload = *a.payload;
    }
    if (a.unicast) {
        const bool delivered = hub.unicast(a.channel, payload);
        if (ctx.opts.json)
            print_line(json_object().add("channel", a.channel).add("delivered", delivered).str());
        else if (!delivered)
            print_note("no unicast waiter on '" + a.channel + "'");
        return delivered ? ok : no;
    }
    const std::size_t receivers = hub.broadcast(a.channel, payload);
    if (ctx.opts.json)
        print_line(json_object()
                       .add("channel", a.channel)
                       .add("receivers", static_cast<std::uint64_t>(receivers))
                       .str());
    else
        print_line(std::to_string(receivers));
    // Stdout keeps the bare count for scripts; a person is told what 0 means.
    if (!ctx.opts.json && receivers == 0)
        print_note("no receiver on '" + a.channel +
                   "': nobody was subscribed, so the signal is gone (pub/sub keeps nothing)");
    return ok;
}

struct wait_args {
    std::vector<std::string> channels;
    bool any = false;
    bool all = false;
    bool unicast = false;
    milliseconds timeout_value{0};
    std::optional<milliseconds> timeout;
};

std::string signal_json(const signal& s) {
    return json_object().add("channel", s.channel).add("payload", s.payload).str();
}

int run_wait(context& ctx, const wait_args& a) {
    exit_on_termination_signal();
    connection_pool pool(waiter_endpoint(ctx, "wait", a.timeout));
    check_server(pool);
    signal_hub hub(pool, {}, waiter_options(ctx, a.timeout));
    const milliseconds timeout = a.timeout.value_or(forever);
    std::vector<signal> got;
    if (a.unicast) {
        if (a.channels.size() != 1)
            throw invalid_argument("--unicast waits on exactly one channel");
        if (auto s = hub.wait_unicast(a.channels.front(), timeout)) got.push_back(std::move(*s));
    } else if (a.all && a.channels.size() > 1) {
        if (auto v = hub.wait_all(a.channels, timeout)) got = std::move(*v);
    } else {
        if (auto s = hub.wait_any(a.channels, timeout)) got.push_back(std::move(*s));
    }
    if (got.empty()) {
        print_note("no signal within " + format_duration(timeout));
        if (ctx.opts.json) print_line(json_object().add("timed_out", true).str());
        return timed_out;
    }
    // The channel a signal came on: the user's name (unicast signals arrive on the waiter's
    // own channel, so report the channel waited on).
    if (a.unicast) got.front().channel = a.channels.front();
    for (const auto& s : got) {
        if (ctx.opts.json)
            print_line(signal_json(s));
        else if (a.channels.size() == 1)
            print_line(s.payload);
        else
            print_line(s.channel + " " + s.payload);
    }
    return ok;
}

struct barrier_args {
    std::string name;
    std::optional<std::size_t> parties;
    bool reset = false;
    bool force = false;
    milliseconds timeout_value{0};
    std::optional<milliseconds> timeout;
};

std::string parties_text(std::size_t n) {
    return std::to_string(n) + (n == 1 ? " party is" : " parties are");
}

int run_barrier_reset(context& ctx, const barrier_args& a) {
    exit_on_termination_signal();
    connection_pool pool(ctx.single_endpoint("barrier --reset"));
    signal_hub hub(pool, {}, hub_options(ctx));
    barrier b(hub, a.name, 1);  // reset works whatever party count is stored
    std::size_t dropped = 0, waiting = 0;
    bool reset = true;
    if (a.force)
        dropped = b.force_reset();
    else if (!(reset = b.reset()))
        waiting = b.arrived();
    if (ctx.opts.json) {
        json_object o;
        o.add("name", a.name).add("reset", reset);
        if (a.force) o.add("dropped", static_cast<std::uint64_t>(dropped));
        if (!reset) o.add("waiting", static_cast<std::uint64_t>(waiting));
        print_line(o.str());
    } else if (!reset) {
        print_note("barrier '" + a.name + "' not reset: " + parties_text(waiting) +
                   " waiting; --force drops them (they exit 125)");
    } else {
        print_note(
            "barrier '" + a.name + "' reset" +
            (dropped ? "; dropped " + std::to_string(dropped) + " waiting (they exit 125)" : ""));
    }
    return reset ? ok : no;
}

int run_barrier(context& ctx, const barrier_args& a) {
    if (a.reset) return run_barrier_reset(ctx, a);
    exit_on_termination_signal();
    if (!a.parties) throw invalid_argument("--parties is required (or --reset)");
    if (*a.parties < 1) throw invalid_argument("--parties must be >= 1");
    connection_pool pool(waiter_endpoint(ctx, "barrier", a.timeout));
    check_server(pool);
    signal_hub hub(pool, {}, waiter_options(ctx, a.timeout));
    barrier b(hub, a.name, *a.parties);
    try {
        const std::uint64_t generation = b.arrive_and_wait(a.timeout.value_or(forever));
        if (ctx.opts.json)
            print_line(json_object().add("name", a.name).add("generation", generation).str());
        else
            print_line(std::to_string(generation));
        return ok;
    } catch (const barrier_timeout& e) {
        print_note(e.what());
        if (ctx.opts.json)
            print_line(json_object()
                           .add("name", a.name)
                           .add("timed_out", true)
                           .add("arrived", static_cast<std::uint64_t>(e.arrived()))
                           .add("parties", static_cast<std::uint64_t>(e.parties()))
                           .str());
        return timed_out;
    } catch (const barrier_lease_lost&) {
        print_note("barrier '" + a.name +
                   "' was reset (--reset --force), or this party stalled past its lease, while "
                   "waiting: it did not pass");
        if (ctx.opts.json) print_line(json_object().add("name", a.name).add("lost", true).str());
        return lost;
    } catch (const invalid_argument& e) {
        // The stored party count differs: say how to start over.
        throw invalid_argument(std::string(e.what()) +
                               "; if that count was a mistake: redcoord barrier '" + a.name +
                               "' --reset");
    }
}

}  // namespace

void add_signal_commands(CLI::App& app, context& ctx) {
    auto s = std::make_shared<signal_args>();
    auto* sig = app.add_subcommand("signal", "Broadcast (or --unicast) a signal on a channel");
    sig->footer(
        "Broadcast prints how many subscriptions received it. --unicast delivers to one random "
        "unicast\n"
        "waiter ('redcoord wait --unicast') and exits 1 when none listens. PAYLOAD '-' reads "
        "stdin.\n"
        "JSON: {\"channel\",\"receivers\"} or {\"channel\",\"delivered\"}.");
    sig->add_option("channel", s->channel, "Channel name")->required();
    sig->add_option("payload", s->payload, "Payload (default empty; '-' reads stdin)");
    sig->add_flag("--unicast", s->unicast, "Deliver to exactly one unicast waiter");
    sig->callback([s, &ctx] { ctx.run = [s, &ctx] { return run_signal(ctx, *s); }; });

    auto w = std::make_shared<wait_args>();
    auto* wait = app.add_subcommand("wait", "Wait for a signal and print its payload");
    wait->footer(
        "One channel: prints the payload. Several: --any (default) prints 'CHANNEL PAYLOAD' of the "
        "first\n"
        "signal; --all waits for one signal on each and prints a line per channel in the order "
        "given.\n"
        "Exit 124 on timeout. JSON: {\"channel\",\"payload\"} per signal, {\"timed_out\":true} on "
        "timeout.\n"
        "Pub/sub is fire-and-forget: a signal sent before the waiter subscribed is not seen.\n"
        "The server is checked first: a refused password exits 121 at once, an unreachable server "
        "120\n"
        "with the reason, within --timeout.");
    wait->add_option("channels", w->channels, "Channel names")->required();
    auto* any =
        wait->add_flag("--any", w->any, "Return on the first signal on any channel (default)");
    auto* all = wait->add_flag("--all", w->all, "Wait until every channel had a signal");
    any->excludes(all);
    wait->add_flag("--unicast", w->unicast, "Wait as a unicast waiter (one channel)")
        ->excludes(any)
        ->excludes(all);
    add_duration(*wait, "--timeout", w->timeout_value, "Give up after this long (default: forever)",
                 false);
    wait->callback([w, &ctx, wait] {
        if (wait->count("--timeout") > 0) w->timeout = w->timeout_value;
        ctx.run = [w, &ctx] { return run_wait(ctx, *w); };
    });

    auto b = std::make_shared<barrier_args>();
    auto* bar = app.add_subcommand("barrier", "Wait until N parties have arrived at a barrier");
    bar->footer(
        "Prints the generation that passed (0 first). Exit 124 on timeout (the arrival is "
        "withdrawn).\n"
        "JSON: {\"name\",\"generation\"}, or {\"name\",\"timed_out\",\"arrived\",\"parties\"}.\n"
        "--reset deletes the barrier (its stored party count too), refused with exit 1 while "
        "parties\n"
        "wait; --force drops them: they exit 125. JSON: {\"name\",\"reset\"[,\"waiting\"|"
        "\"dropped\"]}.\n"
        "A refused password exits 121 at once, an unreachable server 120 with the reason, within "
        "--timeout.");
    bar->add_option("name", b->name, "Barrier name")->required();
    bar->add_option("--parties", b->parties, "Parties that complete the barrier (>= 1)");
    auto* reset = bar->add_flag("--reset", b->reset,
                                "Delete the barrier (a mistyped party count) instead of arriving");
    bar->add_flag("--force", b->force, "With --reset: even while parties wait (they exit 125)")
        ->needs(reset);
    add_duration(*bar, "--timeout", b->timeout_value, "Give up after this long (default: forever)",
                 false);
    bar->callback([b, &ctx, bar] {
        if (bar->count("--timeout") > 0) b->timeout = b->timeout_value;
        ctx.run = [b, &ctx] { return run_barrier(ctx, *b); };
    });
}

}  // namespace redcoord::cli
