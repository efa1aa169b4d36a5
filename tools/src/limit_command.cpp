// `redcoord limit NAME --rate R [--burst N] [--cost C] [--wait D] [-- CMD ARGS...]`
//
// Asks a rate_limiter (GCRA on the server's clock) for `cost` units. Admitted: prints
// `allowed <remaining>` and exits 0, or, with CMD, replaces itself with CMD (so CMD's status,
// signals and terminal are its own: a rate limit is a gate, not a holding). Refused: prints
// `retry_after <duration>` and exits 1; with --wait it first sleeps retry_after and asks again
// while the wait covers it, and exits 124 when it does not.
#include "context.hpp"
#include "exit_codes.hpp"
#include "limit_options.hpp"

#include <redcoord/core/pool.hpp>
#include <redcoord/limit/rate_limiter.hpp>

#include <cerrno>
#include <memory>
#include <system_error>
#include <unistd.h>

namespace redcoord::cli {
namespace {

using std::chrono::milliseconds;

struct limit_args {
    std::string name;
    std::string rate;
    std::uint64_t burst = 1;
    std::uint64_t cost = 1;
    milliseconds wait{0};
    std::vector<std::string> command;
};

std::string retry_text(std::chrono::microseconds d) {
    // Rounded up: sleeping the printed time is always enough.
    return format_duration(std::chrono::ceil<milliseconds>(d));
}

[[noreturn]] void exec_command(const std::vector<std::string>& command) {
    std::vector<char*> argv;
    argv.reserve(command.size() + 1);
    for (const auto& a : command) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execvp(argv.front(), argv.data());
    const int err = errno;
    print_note("cannot run '" + command.front() + "': " + std::system_category().message(err));
    ::_exit(err == ENOENT ? not_found : cannot_execute);
}

int run_limit(context& ctx, const limit_args& a) {
    const auto o = limit_options(ctx, a.rate, a.burst);
    connection_pool pool(ctx.single_endpoint("limit"));
    rate_limiter limiter(pool, a.name, o);
    const auto r = a.wait > milliseconds::zero() ? limiter.acquire(a.cost, a.wait)
                                                 : limiter.try_acquire(a.cost);
    if (!r.allowed) {
        print_line("retry_after " + retry_text(r.retry_after));
        emit_event(ctx, json_object()
                            .add("event", "refused")
                            .add("name", a.name)
                            .add("retry_after_us", static_cast<std::int64_t>(r.retry_after.count()))
                            .add("remaining", r.remaining));
        return a.wait > milliseconds::zero() ? timed_out : no;
    }
    emit_event(
        ctx,
        json_object().add("event", "allowed").add("name", a.name).add("remaining", r.remaining));
    if (a.command.empty()) {
        print_line("allowed " + std::to_string(r.remaining));
        return ok;
    }
    exec_command(a.command);
}

}  // namespace

rate_limiter_options limit_options(const context& ctx, const std::string& rate,
                                   std::uint64_t burst) {
    const auto spec = parse_rate(rate);
    rate_limiter_options o;
    o.rate = spec.rate;
    o.period = spec.period;
    o.burst = burst;
    o.prefix = ctx.opts.prefix;
    return o;
}

void add_limit_command(CLI::App& app, context& ctx) {
    auto a = std::make_shared<limit_args>();
    auto* sub = app.add_subcommand(
        "limit", "Ask a rate limiter (GCRA) for COST units; with CMD, run it when admitted");
    sub->footer(
        "The limiter admits BURST units at once and RATE in the long run, on the Redis server's\n"
        "clock (client clocks never matter); every client of one NAME must use the same --rate\n"
        "and --burst. Admitted: prints 'allowed <remaining>' and exits 0, or with CMD execs it\n"
        "(redcoord's status is then CMD's). Refused: prints 'retry_after <duration>' and exits 1;\n"
        "with --wait it sleeps retry_after and asks again as long as the wait covers it, and\n"
        "exits 124 when it does not.");
    sub->add_option("name", a->name, "Limiter name")->required();
    sub->add_option("command", a->command, "CMD ARGS... (after --)");
    sub->add_option("--rate", a->rate, "Long-run rate: COUNT/PERIOD, e.g. 100/s, 5/m, 20/500ms")
        ->required();
    sub->add_option("--burst", a->burst, "Units admitted at once from idle (>= 1)")
        ->capture_default_str();
    sub->add_option("--cost", a->cost, "Units this request counts for (1..burst)")
        ->capture_default_str();
    add_duration(*sub, "--wait", a->wait,
                 "Wait up to this long for admission (sleeping exactly retry_after)");
    sub->callback([a, &ctx] { ctx.run = [a, &ctx] { return run_limit(ctx, *a); }; });
}

}  // namespace redcoord::cli
