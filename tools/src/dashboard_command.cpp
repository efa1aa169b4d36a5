// `redcoord dashboard`: the web dashboard of the http part (read-only unless --allow-actions
// with --token-file), served with /metrics, /healthz and /readyz until SIGINT or SIGTERM.
#include "context.hpp"
#include "exit_codes.hpp"
#include "listen_address.hpp"
#include "os_signals.hpp"

#include <redcoord/core/errors.hpp>
#include <redcoord/core/log.hpp>
#include <redcoord/core/pool.hpp>
#include <redcoord/core/runtime.hpp>
#include <redcoord/http/dashboard.hpp>
#include <redcoord/http/metrics_server.hpp>

#include <cerrno>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

namespace redcoord::cli {
namespace {

struct dashboard_args {
    std::string listen = "127.0.0.1:8080";
    std::chrono::milliseconds refresh{2000};
    std::vector<std::string> allowed_hosts;
    bool allow_actions = false;
    std::string token_file;
};

// The action token: the file's first line, surrounding blanks dropped (an editor's final
// newline is not part of it).
std::string read_token(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f)
        throw invalid_argument("cannot read --token-file '" + path +
                               "': " + std::generic_category().message(errno));
    std::string line;
    std::getline(f, line);
    const auto first = line.find_first_not_of(" \t\r");
    const auto last = line.find_last_not_of(" \t\r");
    line = first == std::string::npos ? "" : line.substr(first, last - first + 1);
    if (line.size() < 16)
        throw invalid_argument("--token-file '" + path +
                               "': the token must be at least 16 characters");
    return line;
}

// The dashboard's action records (and any other record of the runtime) as stderr lines.
class stderr_sink : public log_sink {
public:
    void write(const log_record& r) override {
        print_note(std::string(to_string(r.level)) + ": " + std::string(r.component) + ": " +
                   std::string(r.message) + format_fields(r.fields));
    }
};

int run_dashboard(context& ctx, const dashboard_args& a) {
    signal_source signals;
    const auto where = parse_listen_address(a.listen, "--listen");
    const auto ep = ctx.single_endpoint("dashboard");
    if (a.allow_actions && a.token_file.empty())
        throw invalid_argument("--allow-actions needs --token-file");
    if (!a.allow_actions && !a.token_file.empty())
        throw invalid_argument("--token-file is only used with --allow-actions");
    const auto token = a.allow_actions ? read_token(a.token_file) : std::string();
    auto pool = std::make_shared<connection_pool>(ep);
    pool->runtime()->set_log_sink(std::make_shared<stderr_sink>());
    (void)pool->borrow();  // a wrong password or an unreachable server ends it at once
    dashboard_options d;
    d.prefix = ctx.opts.prefix;
    d.refresh = a.refresh;
    d.allowed_hosts = a.allowed_hosts;
    d.allow_actions = a.allow_actions;
    d.action_token = token;
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
               " (also /metrics, /healthz, /readyz); " +
               (a.allow_actions ? "actions allowed with the token; " : "read-only; ") +
               "Ctrl-C stops it");
    emit_event(ctx, json_object().add("event", "dashboard").add("url", base));
    while (!signals.wait_termination(std::chrono::milliseconds(60000))) {}
    server.stop();
    return ok;
}

}  // namespace

void add_dashboard_command(CLI::App& app, context& ctx) {
    auto a = std::make_shared<dashboard_args>();
    auto* sub = app.add_subcommand("dashboard",
                                   "Serve a web page of the locks, elections, queues and jobs");
    sub->footer(
        "Shows every primitive under --prefix on one server (or cluster), found by SCAN (never "
        "KEYS)\n"
        "and read with the same code as 'inspect'; the page refreshes itself. Lock tokens are "
        "never\n"
        "shown (fingerprints only) and every value is shown as text, cut at 512 bytes. Binds to\n"
        "127.0.0.1 unless --listen names another address. Also serves /metrics, /healthz and "
        "/readyz.\n"
        "Read-only unless --allow-actions and --token-file: then POST api/actions/... retry, "
        "cancel\n"
        "or remove a job, clean a job state, pause or resume a job queue and requeue dead "
        "messages,\n"
        "each with 'Authorization: Bearer TOKEN' and the page's CSRF header; every action is "
        "logged\n"
        "to stderr. Runs until SIGINT or SIGTERM (exit 0).");
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
    sub->add_flag("--allow-actions", a->allow_actions,
                  "Serve the actions (POST only, with the token of --token-file)");
    sub->add_option("--token-file", a->token_file,
                    "File whose first line is the action token (16 characters or more); the "
                    "page asks for it and keeps it in the tab's sessionStorage")
        ->type_name("FILE");
    sub->callback([a, &ctx] { ctx.run = [a, &ctx] { return run_dashboard(ctx, *a); }; });
}

}  // namespace redcoord::cli
