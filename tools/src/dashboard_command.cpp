// `redcoord dashboard`: the read-only web dashboard of the http part, served with /metrics,
// /healthz and /readyz until SIGINT or SIGTERM.
#include "context.hpp"
#include "exit_codes.hpp"
#include "listen_address.hpp"
#include "os_signals.hpp"

#include <redcoord/core/pool.hpp>
#include <redcoord/http/dashboard.hpp>
#include <redcoord/http/metrics_server.hpp>

#include <memory>
#include <string>
#include <vector>

namespace redcoord::cli {
namespace {

struct dashboard_args {
    std::string listen = "127.0.0.1:8080";
    std::chrono::milliseconds refresh{2000};
    std::vector<std::string> allowed_hosts;
};

int run_dashboard(context& ctx, const dashboard_args& a) {
    signal_source signals;
    const auto where = parse_listen_address(a.listen, "--listen");
    const auto ep = ctx.single_endpoint("dashboard");
    auto pool = std::make_shared<connection_pool>(ep);
    (void)pool->borrow();  // a wrong password or an unreachable server ends it at once
    dashboard_options d;
    d.prefix = ctx.opts.prefix;
    d.refresh = a.refresh;
    d.allowed_hosts = a.allowed_hosts;
    const dashboard board(pool, d);
    auto registry = std::make_shared<metrics_registry>();
    metrics_server_options o;
    o.address = where.host;
    o.port = where.port;
    o.ready_pools = {pool};
    o.handlers = {board.handler()};
    metrics_server server(registry, o);
    const auto url = server.url();
    const auto base = url.substr(0, url.size() - o.path.size()) + "/";
    print_note("dashboard of '" + ctx.opts.prefix + "' at " + base +
               " (also /metrics, /healthz, /readyz); Ctrl-C stops it");
    emit_event(ctx, json_object().add("event", "dashboard").add("url", base));
    while (!signals.wait_termination(std::chrono::milliseconds(60000))) {}
    server.stop();
    return ok;
}

}  // namespace

void add_dashboard_command(CLI::App& app, context& ctx) {
    auto a = std::make_shared<dashboard_args>();
    auto* sub = app.add_subcommand(
        "dashboard", "Serve a read-only web page of the locks, elections, queues and jobs");
    sub->footer(
        "Shows every primitive under --prefix on one server (or cluster), found by SCAN (never "
        "KEYS)\n"
        "and read with the same code as 'inspect'; the page refreshes itself. Lock tokens are "
        "never\n"
        "shown (fingerprints only) and every value is shown as text, cut at 512 bytes. Binds to\n"
        "127.0.0.1 unless --listen names another address. Also serves /metrics, /healthz and "
        "/readyz.\n"
        "Runs until SIGINT or SIGTERM (exit 0).");
    sub->add_option("--listen", a->listen,
                    "Where to listen: HOST:PORT, [IPV6]:PORT, or PORT for 127.0.0.1 (0: any free "
                    "port; the URL is printed)")
        ->capture_default_str();
    add_duration(*sub, "--refresh", a->refresh, "How often the page fetches fresh data");
    sub->add_option("--allow-host", a->allowed_hosts,
                    "A host name the page may be reached by (repeatable; localhost and IP "
                    "addresses always are; other names get 403, against DNS rebinding)")
        ->type_name("NAME")
        ->expected(1)
        ->allow_extra_args(false);
    sub->callback([a, &ctx] { ctx.run = [a, &ctx] { return run_dashboard(ctx, *a); }; });
}

}  // namespace redcoord::cli
