#include "election_schedule.hpp"

#include "sentinel_faults.hpp"

#include <redcoord/testing/local_network.hpp>

#include <csignal>
#include <random>
#include <thread>

namespace chaos {

namespace history = redcoord::testing::history;
using redcoord::testing::local_network;
using namespace std::chrono_literals;

std::string election_outcome::summary() const {
    return faults() + ", " + std::to_string(terms) + " terms, " + std::to_string(accepted) +
           " work accepted, " + std::to_string(rejected) + " rejected, " +
           std::to_string(violations.size()) + " violations";
}

namespace {

// The index of the candidate that leads now (the selector's holder, "n<i>"), read through the
// server's control socket; nullopt when none does or the server does not answer.
std::optional<std::size_t> current_leader(local_network& net, std::size_t server,
                                          std::size_t clients) {
    try {
        const auto holder =
            net.host(server).command({"HGET", "redcoord:election:{chaos}", "holder"}).maybe_text();
        if (holder && holder->size() > 1 && (*holder)[0] == 'n') {
            const auto i = std::stoul(holder->substr(1));
            if (i < clients) return i;
        }
    } catch (const std::exception&) {
        // Down or restarting: no leader known.
    }
    return std::nullopt;
}

}  // namespace

election_outcome run(const election_schedule& s, const std::string& client_path) {
    std::mt19937 rng(s.seed);
    local_network net;
    redcoord::testing::server_options so;
    if (s.appendonly) {
        so.appendonly = true;
        so.appendfsync = "always";
    }
    std::optional<sentinel_group> group;
    if (s.sentinel) group = add_sentinel_group(net);
    // The one election server; with Sentinel, the first master (the failover loop moves on).
    const auto server = group ? group->master : net.add_host(so);
    const auto resource = net.add_host();
    const std::size_t clients = 3;
    std::vector<std::size_t> cs;
    for (std::size_t i = 0; i < clients; ++i) cs.push_back(net.add_client());
    const run_dir dir("election", s.seed);
    std::vector<redcoord::testing::process> procs;
    for (std::size_t i = 0; i < clients; ++i) {
        redcoord::testing::process_options po;
        po.output_file = dir.file("client" + std::to_string(i) + ".out");
        po.env = {"CHAOS_REPLICAS=" + std::to_string(s.replicas)};
        const std::string election_url =
            group ? net.sentinel_url(group->sentinels, chaos_service) : net.url(cs[i], server);
        std::vector<std::string> argv;
        if (s.client_clock_jumps) argv = jumping_clock(dir, i);
        argv.insert(argv.end(), {client_path, "n" + std::to_string(i), dir.file("history.log"),
                                 std::to_string(s.seconds), std::to_string(chaos_term.count()),
                                 net.url(cs[i], resource), election_url});
        procs.push_back(net.start(cs[i], argv, po));
    }
    election_outcome out;
    auto between = [&](int lo, int hi) {
        return std::chrono::milliseconds(std::uniform_int_distribution<int>(lo, hi)(rng));
    };
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(s.seconds - 1);
    // Each restart also pauses the leader for 200 ms from just before it (a collection pause
    // while the server goes down), so the other candidates reach the restarted server first.
    // Restarted after a term, the server forgets only what had expired anyway; restarted at
    // once, it forgets a leadership its leader still counts on.
    while (s.restart_after && std::chrono::steady_clock::now() < end) {
        std::this_thread::sleep_for(between(700, 1500));
        const auto leader = current_leader(net, server, clients);
        if (leader) procs[*leader].signal(SIGSTOP);
        net.restart(server, *s.restart_after);
        ++out.restarts;
        std::this_thread::sleep_for(200ms);
        if (leader) procs[*leader].signal(SIGCONT);
    }
    // Every 0.5-1 s one fault, undone 0.3-1.5 s later (often past the 600 ms term): one
    // candidate (or the leader) cut from the election server while it keeps reaching the
    // resource, or paused.
    if (s.partitions_and_pauses) {
        fault_plan plan;
        plan.timing = {500, 1000, 300, 1500};
        if (s.at_leader) plan.victim = [&] { return current_leader(net, server, clients); };
        partitions_and_pauses(net, procs, cs, {server}, rng, end, plan, out);
    }
    if (group) sentinel_failovers(net, *group, rng, end, out);
    if (s.client_clock_jumps) wall_clock_jumps(dir, clients, rng, end, out);
    const auto h = finish(procs, dir, 30s, out);
    for (const auto& e : h) {
        if (e.op == "term") ++out.terms;
        if (e.op == "work") ++(e.ok ? out.accepted : out.rejected);
    }
    out.violations = history::check_election(h);
    return out;
}

election_schedule safe_election_schedule(election_family family, unsigned seed, int seconds) {
    election_schedule s;
    s.seed = seed;
    s.seconds = seconds;
    switch (family) {
        case election_family::candidates_cut_or_paused:
            s.id = "election/candidates";
            s.family = "candidates cut from the server or paused past the term";
            s.partitions_and_pauses = true;
            break;
        case election_family::leader_cut_or_paused:
            s.id = "election/leader";
            s.family = "the leader cut from the server or paused past the term";
            s.partitions_and_pauses = true;
            s.at_leader = true;
            break;
        case election_family::delayed_restarts:
            s.id = "election/delayed-restart";
            s.family = "server restarts without persistence, delayed by a term";
            s.restart_after = chaos_term + 100ms;
            break;
        case election_family::aof_restarts:
            s.id = "election/aof-restart";
            s.family = "server restarts at once with AOF appendfsync always";
            s.restart_after = 0ms;
            s.appendonly = true;
            break;
        case election_family::sentinel_failovers:
            s.id = "election/sentinel";
            s.family =
                "Sentinel failovers (master killed, or cut from the sentinels), replicas = 2 "
                "(every one)";
            s.sentinel = true;
            s.replicas = sentinel_replicas;
            break;
        case election_family::client_clock_jumps:
            s.id = "election/clock-jumps";
            s.family = "candidates' wall clocks jumping an hour to a day, either way";
            s.client_clock_jumps = true;
            break;
    }
    return s;
}

election_schedule safe_election_schedule(unsigned seed, int seconds) {
    return safe_election_schedule(static_cast<election_family>(seed % election_families), seed,
                                  seconds);
}

election_schedule election_demonstration(unsigned seed, int seconds) {
    election_schedule s;
    s.id = "election/restart-at-once";
    s.family = "server restarts without persistence, at once";
    s.seed = seed;
    s.seconds = seconds;
    s.restart_after = 0ms;
    s.broken_on_purpose = true;
    return s;
}

election_schedule election_unreplicated_failovers(unsigned seed, int seconds) {
    election_schedule s;
    s.id = "election/sentinel-unreplicated";
    s.family = "Sentinel failovers, replicas = 0 (a grant not yet replicated can be lost)";
    s.seed = seed;
    s.seconds = seconds;
    s.sentinel = true;
    s.broken_on_purpose = true;
    s.must_catch = false;
    return s;
}

}  // namespace chaos
