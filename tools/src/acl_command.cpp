// `redcoord acl-rules [--part lock|election|signaling|queue|jobs|all] [--cluster] [--user NAME]
// [--channel P]... [--db N]`: prints the ACL SETUSER line that lets a Redis user do exactly what the part needs.
// Prints only; it never connects.
#include "context.hpp"
#include "exit_codes.hpp"

#include <redcoord/core/acl.hpp>
#include <redcoord/election/acl.hpp>
#include <redcoord/http/dashboard.hpp>
#include <redcoord/jobs/acl.hpp>
#include <redcoord/limit/acl.hpp>
#include <redcoord/lock/acl.hpp>
#include <redcoord/queue/acl.hpp>
#include <redcoord/signaling/acl.hpp>

#include <memory>

namespace redcoord::cli {
namespace {

struct acl_args {
    std::string part = "all";
    std::string user = "redcoord";
    std::vector<std::string> channels;
    int db = 0;
    bool cluster = false;
    bool inspect = false;
};

// The read-only profile: what `redcoord inspect` of every kind and the dashboard's page and
// api/ routes read (dashboard_acl_needs(), the inspect needs of every part and SCAN).
acl_needs inspect_needs(const acl_args& a, const std::string& prefix) {
    acl_needs n = dashboard_acl_needs(prefix, a.db);
    return a.cluster ? cluster_acl_needs(std::move(n)) : n;
}

acl_needs needs_of(const acl_args& a, const std::string& prefix) {
    if (a.inspect) return inspect_needs(a, prefix);
    acl_needs n;
    const bool all = a.part == "all";
    if (all || a.part == "lock") n.merge(lock_acl_needs(prefix, a.db));
    if (all || a.part == "election") n.merge(election_acl_needs(prefix, a.db));
    if (all || a.part == "signaling") n.merge(signaling_acl_needs(prefix, a.channels, a.db));
    if (all || a.part == "queue") n.merge(queue_acl_needs(prefix, a.db));
    if (all || a.part == "jobs") n.merge(jobs_acl_needs(prefix, a.db));
    if (all || a.part == "limit") n.merge(limit_acl_needs(prefix, a.db));
    return a.cluster ? cluster_acl_needs(std::move(n)) : n;
}

std::string json_strings(const std::vector<std::string>& v) {
    std::vector<std::string> encoded;
    encoded.reserve(v.size());
    for (const auto& s : v) encoded.push_back(json_quote(s));
    return json_array(encoded);
}

int run_acl_rules(const context& ctx, const acl_args& a) {
    const auto n = needs_of(a, ctx.opts.prefix);
    const auto line = format_acl_setuser(a.user, n);
    if (!ctx.opts.json) {
        print_line(line);
        return ok;
    }
    print_line(json_object()
                   .add("user", a.user)
                   .add("part", a.inspect ? std::string("inspect") : a.part)
                   .add("cluster", a.cluster)
                   .add_raw("commands", json_strings(n.commands))
                   .add_raw("keys", json_strings(n.key_patterns))
                   .add_raw("channels", json_strings(n.channel_patterns))
                   .add("rule", line)
                   .str());
    return ok;
}

}  // namespace

void add_acl_command(CLI::App& app, context& ctx) {
    auto a = std::make_shared<acl_args>();
    auto* sub = app.add_subcommand("acl-rules",
                                   "Print the ACL SETUSER line for a least-privilege Redis user");
    sub->footer(
        "Prints one line for redis-cli: ACL SETUSER USER on resetkeys resetchannels -@all +CMD... "
        "~KEYS... &CHANNELS...\n"
        "granting exactly the commands, key patterns (under --prefix) and channel patterns the "
        "part needs.\n"
        "It sets no password: add '>PASSWORD' to the line, or run 'ACL SETUSER USER >PASSWORD' "
        "once (running the\n"
        "line again keeps the password). Create the user on every server used: masters, the "
        "replicas pub/sub\n"
        "listens on, every Redlock node (ACL users are not replicated). Broadcast channels are "
        "used verbatim:\n"
        "name their patterns with --channel. A user missing a permission gets an error naming the "
        "command\n"
        "(exit 122). Never connects to Redis.\n"
        "--inspect prints a read-only user for 'redcoord inspect' (every kind) and 'redcoord "
        "dashboard'\n"
        "(every page and api/ route, without actions): it can read the parts' keys and change "
        "nothing.");
    auto* part =
        sub->add_option("--part", a->part, "lock, election, signaling, queue, jobs, limit or all")
            ->check(
                CLI::IsMember({"lock", "election", "signaling", "queue", "jobs", "limit", "all"}))
            ->capture_default_str();
    sub->add_flag("--inspect", a->inspect,
                  "A read-only user for 'redcoord inspect' and 'redcoord dashboard' instead of a "
                  "part's user")
        ->excludes(part);
    sub->add_option("--user", a->user, "ACL user name")->capture_default_str();
    sub->add_option("--channel", a->channels,
                    "Broadcast channel pattern for signaling (repeatable), e.g. 'orders*'")
        ->type_name("PATTERN");
    sub->add_flag("--cluster", a->cluster,
                  "For a Redis Cluster: the slot map, ASKING and the sharded pub/sub commands too");
    sub->add_option("--db", a->db, "Database number of the URLs (not 0: SELECT is allowed too)")
        ->check(CLI::NonNegativeNumber)
        ->capture_default_str();
    sub->callback([a, &ctx] { ctx.run = [a, &ctx] { return run_acl_rules(ctx, *a); }; });
}

}  // namespace redcoord::cli
