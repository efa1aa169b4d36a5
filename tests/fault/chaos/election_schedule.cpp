#include "election_schedule.hpp"

#include <redcoord/testing/local_network.hpp>

#include <random>
#include <signal.h>
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

election_outcome run(const election_schedule& s, const std::string& client_path) {
    std::mt19937 rng(s.seed);
    local_network net;
    const auto server = net.add_host();
    const auto resource = net.add_host();
    const std::size_t clients = 3;
    std::vector<std::size_t> cs;
    for (std::size_t i = 0; i < clients; ++i) cs.push_back(net.add_client());
    const run_dir dir("election", s.seed);
    std::vector<redcoord::testing::process> procs;
    for (std::size_t i = 0; i < clients; ++i) {
        redcoord::testing::process_options po;
        po.output_file = dir.file("client" + std::to_string(i) + ".out");
        procs.push_back(net.start(cs[i],
                                  {client_path, "n" + std::to_string(i), dir.file("history.log"),
                                   std::to_string(s.seconds), std::to_string(chaos_term.count()),
                                   net.url(cs[i], resource), net.url(cs[i], server)},
                                  po));
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
        std::optional<std::size_t> leader;
        try {
            const auto holder = net.host(server)
                                    .command({"HGET", "redcoord:election:{chaos}", "holder"})
                                    .maybe_text();
            if (holder && holder->size() > 1 && (*holder)[0] == 'n')
                leader = std::stoul(holder->substr(1));
        } catch (const std::exception&) {
            // No leader known: restart without a pause.
        }
        if (leader && *leader < clients) procs[*leader].signal(SIGSTOP);
        net.restart(server, *s.restart_after);
        ++out.restarts;
        std::this_thread::sleep_for(200ms);
        if (leader && *leader < clients) procs[*leader].signal(SIGCONT);
    }
    // Every 0.5-1 s one fault, undone 0.3-1.5 s later (often past the 600 ms term): one
    // candidate cut from the election server (it keeps reaching the resource), or paused.
    if (s.partitions_and_pauses)
        partitions_and_pauses(net, procs, cs, {server}, rng, end, {500, 1000, 300, 1500}, out);
    const auto h = finish(procs, dir, 30s, out);
    for (const auto& e : h) {
        if (e.op == "term") ++out.terms;
        if (e.op == "work") ++(e.ok ? out.accepted : out.rejected);
    }
    out.violations = history::check_election(h);
    return out;
}

election_schedule safe_election_schedule(unsigned seed, int seconds) {
    election_schedule s;
    s.seed = seed;
    s.seconds = seconds;
    if (seed % 2 == 0) {
        s.family = "candidates cut from the server or paused past the term";
        s.partitions_and_pauses = true;
    } else {
        s.family = "server restarts without persistence, delayed by a term";
        s.restart_after = chaos_term + 100ms;
    }
    return s;
}

election_schedule election_demonstration(unsigned seed, int seconds) {
    election_schedule s;
    s.family = "server restarts without persistence, at once";
    s.seed = seed;
    s.seconds = seconds;
    s.restart_after = 0ms;
    s.broken_on_purpose = true;
    return s;
}

}  // namespace chaos
