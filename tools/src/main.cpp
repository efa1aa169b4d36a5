// redcoord: coordination primitives on Redis from the shell.
#include "context.hpp"
#include "exit_codes.hpp"
#include "os_signals.hpp"

#include <redcoord/version.hpp>

#include <CLI/CLI.hpp>

#include <exception>
#include <functional>
#include <string>

namespace {

int run(int argc, char** argv) {
    using namespace redcoord::cli;
    // Before any thread exists, so every thread inherits the mask (see os_signals.hpp).
    block_signals();

    CLI::App app{
        "redcoord: locks, leader election, signals, barriers, queues and jobs on Redis, from the "
        "shell.",
        "redcoord"};
    app.require_subcommand(1);
    app.fallthrough();
    // The linked library's number (redcoord::version()), which is what a bug report needs.
    app.set_version_flag("--version", std::string("redcoord ") + redcoord::version());

    context ctx;
    // One value per --redis: a vector option would otherwise take every word that follows,
    // and after a subcommand those are its positional arguments.
    app.add_option("--redis", ctx.opts.urls, "Redis URL (repeatable: --redis A --redis B)")
        ->type_name("URL")
        ->expected(1)
        ->allow_extra_args(false)
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    app.add_flag("--json", ctx.opts.json, "Machine-readable output: one JSON object per line");
    add_optional_duration(app, "--connect-timeout", ctx.opts.connect_timeout,
                          "Connect deadline per server; overrides the URL's connect_timeout "
                          "(default: the URL's, else 1s)");
    add_optional_duration(app, "--command-timeout", ctx.opts.command_timeout,
                          "Reply deadline per command, 0 waits forever; overrides the URL's "
                          "command_timeout (default: the URL's, else 2s)");
    app.add_option("--prefix", ctx.opts.prefix, "Key prefix of every primitive")
        ->capture_default_str();

    add_lock_command(app, ctx);
    add_rwlock_command(app, ctx);
    add_limit_command(app, ctx);
    add_election_commands(app, ctx);
    add_signal_commands(app, ctx);
    add_queue_commands(app, ctx);
    add_jobs_commands(app, ctx);
    add_acl_command(app, ctx);
    add_inspect_command(app, ctx);
    add_dashboard_command(app, ctx);

    // Set after the subcommands exist, so none inherits it (CLI11 copies a parent's footer into
    // each new subcommand); each page ends with the same short list of the global options.
    app.footer(
        "Servers: --redis URL (one URL each, repeatable; several masters make 'lock' use "
        "Redlock), else $REDCOORD_REDIS\n"
        "(comma-separated), else redis://127.0.0.1:6379. URLs: "
        "redis://[[user]:password@]host[:port][/db],\n"
        "rediss://... (TLS; ?ca_file=, cert_file=, key_file=...), unix:///path.sock[?db=N],\n"
        "redis-sentinel://h1:p1,h2:p2/service, redis-cluster://h1:p1,h2:p2 (Redis Cluster seed "
        "nodes),\n"
        "rediss-cluster://h1:p1,h2:p2 (Cluster over TLS). A password missing from the URL\n"
        "is taken from $REDCOORD_PASSWORD (keeps it out of ps); the sentinels' own password from\n"
        "$REDCOORD_SENTINEL_PASSWORD. Passwords are never printed.\n"
        "Global options go before or after the subcommand. --connect-timeout/--command-timeout "
        "override\n"
        "the URL's connect_timeout/command_timeout only when given.\n"
        "Durations: 500ms, 20s, 2m, 1h, 1m30s.\n\n" +
        exit_code_table());
    const std::function<void(CLI::App&)> add_global_footer = [&](CLI::App& a) {
        for (CLI::App* sub : a.get_subcommands({})) {
            const std::string own = sub->get_footer();
            sub->footer(own.empty() ? global_options_footer()
                                    : own + "\n\n" + global_options_footer());
            add_global_footer(*sub);
        }
    };
    add_global_footer(app);

    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
        return app.exit(e);
    } catch (const CLI::Success& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        app.exit(e);
        return usage;
    }
    if (!ctx.run) return usage;
    try {
        return ctx.run();
    } catch (const std::exception& e) {
        print_note(std::string("error: ") + e.what());
        return exit_code_for(e);
    }
}

}  // namespace

// A failure while setting up (the CLI's own construction errors, a signal mask that cannot be
// set) ends with the internal-error exit code and a message, not std::terminate's abort.
int main(int argc, char** argv) {
    try {
        return run(argc, argv);
    } catch (const std::exception& e) {
        redcoord::cli::print_note(std::string("error: ") + e.what());
        return redcoord::cli::exit_code_for(e);
    } catch (...) {
        redcoord::cli::print_note("error: unknown exception");
        return static_cast<int>(redcoord::cli::exit_code::internal);
    }
}
