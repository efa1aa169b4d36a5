#include "queue_schedule.hpp"

#include <redcoord/queue/envelope.hpp>
#include <redcoord/testing/local_network.hpp>

#include <random>
#include <thread>

namespace chaos {

namespace history = redcoord::testing::history;
using redcoord::testing::local_network;
using namespace std::chrono_literals;

std::string queue_outcome::summary() const {
    return faults() + ", " + std::to_string(kills) + " kills, " + std::to_string(pushed) +
           " pushes, " + std::to_string(delivered) + " deliveries, " + std::to_string(acked) +
           " acks, " + std::to_string(left) + " left, " +
           (parents_run > 0 ? std::to_string(parents_run) + " parents run, " : std::string()) +
           (group_runs > 0 ? std::to_string(group_runs) + " grouped runs, " : std::string()) +
           std::to_string(violations.size()) + " violations";
}

namespace {

// What the queue's lists hold at the end (ready, dead letters and every consumer's processing
// list, also those of killed and retired consumers), as `left` events, read through the
// host's control socket. Elements are named by their payload, as the clients log them.
std::vector<history::event> drain(redcoord::testing::local_server& server) {
    std::vector<history::event> left;
    const auto now = history::monotonic_ns();
    const auto keys = server.command({"KEYS", "redcoord:queue:{chaos}*"});
    for (const auto& key : keys.elements()) {
        if (server.command({"TYPE", key.text()}).text() != "list") continue;
        const auto elements = server.command({"LRANGE", key.text(), "0", "-1"});
        for (const auto& el : elements.elements()) {
            const auto env = redcoord::decode_envelope(el.text());
            left.push_back({"drain", "left", now, now, true, 0, 0, env ? env->payload : el.text()});
        }
    }
    return left;
}

}  // namespace

queue_outcome run_work(const queue_schedule& s, const std::string& part,
                       const std::string& client_path, const end_state_reader& end_state) {
    std::mt19937 rng(s.seed);
    local_network net;
    redcoord::testing::server_options so;
    so.appendonly = s.persistence;
    so.appendfsync = "always";
    const auto server = net.add_host(so);
    const std::size_t consumers = 3;
    std::vector<std::size_t> cs;
    for (std::size_t i = 0; i <= consumers; ++i) cs.push_back(net.add_client());
    const run_dir dir(part, s.seed);
    // procs[0..2] are the consumers (cs[0..2]), the faults' targets; procs[3] the producer.
    std::vector<redcoord::testing::process> procs;
    std::vector<std::string> names;
    const auto began = std::chrono::steady_clock::now();
    // A client started late (a killed consumer's successor) stops with the others.
    auto start = [&](std::size_t i, const std::string& role, const std::string& name) {
        const auto ran = std::chrono::duration_cast<std::chrono::seconds>(
            std::chrono::steady_clock::now() - began);
        redcoord::testing::process_options po;
        po.output_file = dir.file(name + ".out");
        std::vector<std::string> argv{
            client_path,
            role,
            name,
            dir.file("history.log"),
            std::to_string(std::max<long long>(1, s.seconds - ran.count())),
            std::to_string(queue_lease.count()),
            net.url(cs[i], server)};
        argv.insert(argv.end(), s.client_args.begin(), s.client_args.end());
        return net.start(cs[i], argv, po);
    };
    for (std::size_t i = 0; i < consumers; ++i) {
        names.push_back("c" + std::to_string(i));
        procs.push_back(start(i, "consumer", names[i]));
    }
    procs.push_back(start(consumers, "producer", "p"));
    const std::vector<std::size_t> consumer_nodes(cs.begin(), cs.begin() + consumers);

    queue_outcome out;
    std::vector<history::event> faults;
    auto between = [&](int lo, int hi) {
        return std::chrono::milliseconds(std::uniform_int_distribution<int>(lo, hi)(rng));
    };
    const auto end = began + std::chrono::seconds(s.seconds - 1);
    while (std::chrono::steady_clock::now() < end) {
        // With both, each fault is one or the other by the schedule's coin.
        const bool cut = s.partitions_and_pauses &&
                         (!s.kills || std::uniform_int_distribution<int>(0, 1)(rng) == 0);
        if (cut) {
            // Cut or paused for longer than the lease: others recover what it holds.
            const auto w = partition_or_pause(net, procs, consumer_nodes, {server}, rng,
                                              fault_timing{300, 700, 700, 1200}, out);
            faults.push_back({names[w.client], w.paused ? "paused" : "cut", history_ns(w.from),
                              history_ns(w.to), true, 0, 0, ""});
        } else if (s.kills) {
            std::this_thread::sleep_for(between(400, 900));
            const auto c = std::uniform_int_distribution<std::size_t>(0, consumers - 1)(rng);
            const auto at = history::monotonic_ns();
            procs[c].kill();
            faults.push_back({names[c], "killed", at, at, true, 0, 0, ""});
            ++out.kills;
            names[c] = "c" + std::to_string(c) + "r" + std::to_string(out.kills);
            // Its seconds count from now; finish() waits for it.
            procs[c] = start(c, "consumer", names[c]);
        } else if (s.restarts) {
            std::this_thread::sleep_for(between(700, 1500));
            // Every consumer loses its link with the server: the restart cuts them all, from
            // the kill until the server is back.
            const auto at = history::monotonic_ns();
            net.restart(server, 0ms);
            const auto back = history::monotonic_ns();
            for (const auto& n : names) faults.push_back({n, "cut", at, back, true, 0, 0, ""});
            ++out.restarts;
        } else {
            std::this_thread::sleep_until(end);
        }
    }
    auto h = finish(procs, dir, 30s, out);
    auto state = end_state(net.host(server), h);
    h.insert(h.end(), state.events.begin(), state.events.end());
    h.insert(h.end(), faults.begin(), faults.end());
    record(dir, state.events);
    record(dir, faults);
    for (const auto& e : h) {
        if (e.op == "push" && e.ok) ++out.pushed;
        if (e.op == "deliver") ++out.delivered;
        if (e.op == "ack" && e.ok) ++out.acked;
        if (e.op == "left") ++out.left;
        if (e.op == "parent") ++out.parents_run;
        if (e.op == "gstart") ++out.group_runs;
    }
    out.violations = history::check_queue(h);
    out.violations.insert(out.violations.end(), state.violations.begin(), state.violations.end());
    return out;
}

queue_outcome run(const queue_schedule& s, const std::string& client_path) {
    return run_work(s, "queue", client_path,
                    [](redcoord::testing::local_server& server, const auto&) {
                        return work_end{drain(server), {}};
                    });
}

queue_schedule safe_work_schedule(const std::string& part, unsigned seed, int seconds) {
    queue_schedule s;
    s.seed = seed;
    s.seconds = seconds;
    switch (seed % 3) {
        case 0:
            s.id = part + "/cut-or-paused";
            s.family = "consumers cut off and paused past their lease";
            s.partitions_and_pauses = true;
            break;
        case 1:
            s.id = part + "/killed";
            s.family = "consumers SIGKILLed, restarted under new names";
            s.kills = true;
            break;
        default:
            s.id = part + "/aof-restart";
            s.family = "server restarts with AOF (appendfsync always)";
            s.restarts = true;
            break;
    }
    return s;
}

queue_schedule work_demonstration(const std::string& part, unsigned seed, int seconds) {
    queue_schedule s;
    s.id = part + "/restart-at-once";
    s.family = "server restarts without persistence, at once";
    s.seed = seed;
    s.seconds = seconds;
    s.restarts = true;
    s.persistence = false;
    s.broken_on_purpose = true;
    return s;
}

queue_schedule safe_queue_schedule(unsigned seed, int seconds) {
    return safe_work_schedule("queue", seed, seconds);
}

queue_schedule queue_demonstration(unsigned seed, int seconds) {
    return work_demonstration("queue", seed, seconds);
}

}  // namespace chaos
