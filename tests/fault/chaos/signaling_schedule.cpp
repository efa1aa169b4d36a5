#include "signaling_schedule.hpp"

#include <redcoord/testing/local_network.hpp>

#include <algorithm>
#include <map>
#include <random>
#include <thread>

namespace chaos {

namespace history = redcoord::testing::history;
using redcoord::testing::local_network;
using namespace std::chrono_literals;

std::string signaling_outcome::summary() const {
    return faults() + ", " + std::to_string(signals) + " signals, " + std::to_string(receipts) +
           " receipts, " + std::to_string(covered) + " owed (" + std::to_string(via_replica) +
           " while cut from the master), " + std::to_string(passes) + " barrier passes, " +
           std::to_string(violations.size()) + " violations";
}

namespace {

constexpr std::size_t members = 3;

// Link-up intervals are derived by the schedule, not read from the hub: a silently cut link
// looks up to the hub until its health check gives up, and connected_links() is a sampled
// count, so neither can say that a signal was sure to arrive. The schedule knows every fault
// it applied. A member's link is up from its `subscribed` (both links confirmed) until the
// last signal, except over these windows:
// - a pause, and 1 s after: a pause shorter than the links' health window (3 x 1 s) keeps
//   both links and the kernel holds what arrives meanwhile; the second is slack for the
//   reader to catch up;
// - a master restart, from the kill until 2 s after the master is back: the master link drops
//   and the replica only forwards what the master publishes; the link redials within its
//   back-off (at most 1 s, plus jitter of up to half) and resubscribes.
// A member cut from one host keeps its interval: the other link carries every signal, which
// is what the hub promises by subscribing on the master and on every replica.
constexpr auto after_pause = 1s;
constexpr auto after_restart = 2s;

struct window {
    std::int64_t from, to;
};

std::vector<history::event> link_intervals(const std::string& member, std::int64_t from,
                                           std::int64_t to, std::vector<window> down) {
    std::sort(down.begin(), down.end(),
              [](const window& a, const window& b) { return a.from < b.from; });
    std::vector<history::event> up;
    auto add = [&](std::int64_t a, std::int64_t b) {
        if (a < b) up.push_back({member, "link", a, b, true, 0, 0, ""});
    };
    for (const auto& w : down) {
        add(from, std::min(w.from, to));
        from = std::max(from, w.to);
    }
    add(from, to);
    return up;
}

std::int64_t ns(std::chrono::steady_clock::time_point t, std::chrono::nanoseconds plus = {}) {
    return history_ns(t) + plus.count();
}

}  // namespace

signaling_outcome run(const signaling_schedule& s, const std::string& client_path) {
    std::mt19937 rng(s.seed);
    local_network net;
    redcoord::testing::server_options so;
    so.appendonly = true;  // the barrier's state survives a restart
    so.appendfsync = "always";
    const auto master = net.add_host(so);
    const auto replica = net.add_host();
    net.link_hosts(master, replica);
    net.host(replica).command(
        {"REPLICAOF", *net.address(replica, master), std::to_string(net.host(master).port())});
    net.host(replica).wait_synced();
    std::vector<std::size_t> cs;
    for (std::size_t i = 0; i <= members; ++i) cs.push_back(net.add_client());
    const run_dir dir("signaling", s.seed);
    // procs[0..2] are the members (cs[0..2]), the faults' targets; procs[3] the publisher.
    std::vector<redcoord::testing::process> procs;
    std::vector<std::string> names;
    for (std::size_t i = 0; i <= members; ++i) {
        const bool publisher = i == members;
        names.push_back(publisher ? "pub" : "m" + std::to_string(i));
        redcoord::testing::process_options po;
        po.output_file = dir.file(names[i] + ".out");
        po.env = {"CHAOS_MODE=" + s.mode};
        procs.push_back(
            net.start(cs[i],
                      {client_path, publisher ? "publisher" : "member", names[i],
                       dir.file("history.log"), std::to_string(s.seconds),
                       std::to_string(s.parties), net.url(cs[i], master), net.url(cs[i], replica)},
                      po));
    }
    const std::vector<std::size_t> member_nodes(cs.begin(), cs.begin() + members);

    signaling_outcome out;
    std::map<std::string, std::vector<window>> down, master_cut;
    auto between = [&](int lo, int hi) {
        return std::chrono::milliseconds(std::uniform_int_distribution<int>(lo, hi)(rng));
    };
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(s.seconds - 1);
    while (std::chrono::steady_clock::now() < end) {
        if (s.partitions_and_pauses) {
            const auto w = partition_or_pause(net, procs, member_nodes, {master, replica}, rng,
                                              fault_timing{800, 1500, 300, 900}, out);
            if (w.paused) down[names[w.client]].push_back({ns(w.from), ns(w.to, after_pause)});
            if (!w.paused && w.target == master)
                master_cut[names[w.client]].push_back({ns(w.from), ns(w.to)});
        } else if (s.restarts) {
            std::this_thread::sleep_for(between(2500, 3500));
            const auto killed = std::chrono::steady_clock::now();
            net.restart(master, 0ms);
            ++out.restarts;
            const auto back = std::chrono::steady_clock::now();
            for (std::size_t i = 0; i < members; ++i)
                down[names[i]].push_back({ns(killed), ns(back, after_restart)});
        } else {
            std::this_thread::sleep_until(end);
        }
    }
    auto h = finish(procs, dir, 30s, out);
    std::int64_t last_signal = 0;
    std::map<std::string, std::int64_t> subscribed;
    for (const auto& e : h) {
        if (e.op == "signal" && e.ok) {
            ++out.signals;
            last_signal = std::max(last_signal, e.end_ns);
        }
        if (e.op == "receive") ++out.receipts;
        if (e.op == "pass") ++out.passes;
        if (e.op == "subscribed") subscribed[e.client] = e.start_ns;
    }
    std::vector<history::event> links;
    for (const auto& [member, from] : subscribed) {
        const auto up = link_intervals(member, from, last_signal, down[member]);
        links.insert(links.end(), up.begin(), up.end());
    }
    auto inside = [](const history::event& e, std::int64_t from, std::int64_t to) {
        return from <= e.start_ns && e.end_ns <= to;
    };
    for (const auto& e : h)
        if (e.op == "signal" && e.ok)
            for (const auto& l : links) {
                if (!inside(e, l.start_ns, l.end_ns)) continue;
                ++out.covered;
                for (const auto& w : master_cut[l.client])
                    out.via_replica += inside(e, w.from, w.to);
            }
    h.insert(h.end(), links.begin(), links.end());
    record(dir, links);
    out.violations = history::check_signaling(h, members);
    return out;
}

signaling_schedule safe_signaling_schedule(unsigned seed, int seconds) {
    signaling_schedule s;
    s.seed = seed;
    s.seconds = seconds;
    if (seed % 2 == 0) {
        s.id = "signaling/cut-or-paused";
        s.family = "members cut from the master or the replica, or paused";
        s.partitions_and_pauses = true;
    } else {
        s.id = "signaling/aof-restart";
        s.family = "master restarts with AOF (appendfsync always); members arrive again at once";
        s.restarts = true;
    }
    return s;
}

std::vector<signaling_schedule> signaling_demonstrations(unsigned seed, int seconds) {
    std::vector<signaling_schedule> d(2);
    // The hub de-duplicates what carries its envelope; a plain PUBLISH arrives once per link.
    d[0].id = "signaling/unenveloped";
    d[0].family = "signals published without the hub's envelope";
    d[0].mode = "plain";
    // `parties` must be the number of members that rely on the barrier; with fewer, a
    // generation passes before every member arrived.
    d[1].id = "signaling/too-few-parties";
    d[1].family = "a barrier of 2 parties for 3 members";
    d[1].parties = 2;
    for (std::size_t i = 0; i < d.size(); ++i) {
        d[i].seed = seed + static_cast<unsigned>(i);
        d[i].seconds = seconds;
        d[i].broken_on_purpose = true;
    }
    return d;
}

}  // namespace chaos
