#include "chaos_common.hpp"

#include <redcoord/core/script.hpp>
#include <redcoord/testing/clock_skew.hpp>

#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <thread>

namespace chaos {

bool outcome_base::broke(const std::string& rule) const {
    for (const auto& v : violations)
        if (v.rule == rule) return true;
    return false;
}

std::string outcome_base::report() const {
    std::string s;
    for (const auto& v : violations) s += v.rule + ": " + v.what + "\n";
    return s;
}

std::string outcome_base::faults() const {
    return std::to_string(partitions) + " partitions, " + std::to_string(pauses) + " pauses, " +
           std::to_string(restarts) + " restarts" +
           (failovers ? ", " + std::to_string(failovers) + " failovers" : "") +
           (clock_jumps ? ", " + std::to_string(clock_jumps) + " clock jumps" : "");
}

run_dir::run_dir(const std::string& part, unsigned seed)
    : path_(std::filesystem::temp_directory_path() /
            ("rc-chaos-" + part + "-" + std::to_string(::getpid()) + "-" + std::to_string(seed))) {
    std::filesystem::create_directories(path_);
}

run_dir::~run_dir() {
    if (std::getenv("CHAOS_KEEP_RUNS")) {
        std::fprintf(stderr, "chaos: kept %s\n", path_.c_str());
        return;
    }
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
}

namespace {

// The links one partition of shape `shape` cuts, with client `c` (an index into `clients`) as
// its first victim.
std::vector<redcoord::testing::local_network::link> cut_links(
    cut shape, std::size_t c, const std::vector<std::size_t>& clients,
    const std::vector<std::size_t>& targets, const std::function<std::size_t(std::size_t)>& pick) {
    std::vector<redcoord::testing::local_network::link> links;
    const std::size_t kept = pick(targets.size());
    switch (shape) {
        case cut::minority: links.push_back({clients[c], targets[kept]}); break;
        case cut::majority:
            for (std::size_t t = 0; t < targets.size(); ++t)
                if (t != kept || targets.size() == 1) links.push_back({clients[c], targets[t]});
            break;
        case cut::split: {
            links.push_back({clients[c], targets[kept]});
            if (clients.size() < 2 || targets.size() < 2) break;
            const std::size_t other = (c + 1 + pick(clients.size() - 1)) % clients.size();
            const std::size_t elsewhere = (kept + 1 + pick(targets.size() - 1)) % targets.size();
            links.push_back({clients[other], targets[elsewhere]});
            break;
        }
    }
    return links;
}

}  // namespace

fault_window partition_or_pause(redcoord::testing::local_network& net,
                                std::vector<redcoord::testing::process>& procs,
                                const std::vector<std::size_t>& clients,
                                const std::vector<std::size_t>& targets, std::mt19937& rng,
                                const fault_plan& plan, outcome_base& out) {
    auto pick = [&](std::size_t n) {
        return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng);
    };
    auto between = [&](int lo, int hi) {
        return std::chrono::milliseconds(std::uniform_int_distribution<int>(lo, hi)(rng));
    };
    const auto& t = plan.timing;
    std::this_thread::sleep_for(between(t.every_min, t.every_max));
    fault_window w;
    std::optional<std::size_t> aimed;
    if (plan.victim) aimed = plan.victim();
    w.client = aimed && *aimed < clients.size() ? *aimed : pick(clients.size());
    const auto undo_after = between(t.undo_min, t.undo_max);
    w.paused = plan.pauses && pick(2) != 0;
    if (!w.paused) {
        w.links = cut_links(plan.cuts[pick(plan.cuts.size())], w.client, clients, targets, pick);
        w.target = w.links.front().b;
        w.from = std::chrono::steady_clock::now();
        net.partition(w.links);
        ++out.partitions;
        std::this_thread::sleep_for(undo_after);
        net.heal();
    } else {
        w.from = std::chrono::steady_clock::now();
        procs[w.client].signal(SIGSTOP);
        ++out.pauses;
        std::this_thread::sleep_for(undo_after);
        procs[w.client].signal(SIGCONT);
    }
    w.to = std::chrono::steady_clock::now();
    return w;
}

fault_window partition_or_pause(redcoord::testing::local_network& net,
                                std::vector<redcoord::testing::process>& procs,
                                const std::vector<std::size_t>& clients,
                                const std::vector<std::size_t>& targets, std::mt19937& rng,
                                fault_timing timing, outcome_base& out) {
    fault_plan plan;
    plan.timing = timing;
    return partition_or_pause(net, procs, clients, targets, rng, plan, out);
}

void partitions_and_pauses(redcoord::testing::local_network& net,
                           std::vector<redcoord::testing::process>& procs,
                           const std::vector<std::size_t>& clients,
                           const std::vector<std::size_t>& targets, std::mt19937& rng,
                           std::chrono::steady_clock::time_point end, const fault_plan& plan,
                           outcome_base& out) {
    while (std::chrono::steady_clock::now() < end)
        (void)partition_or_pause(net, procs, clients, targets, rng, plan, out);
}

void partitions_and_pauses(redcoord::testing::local_network& net,
                           std::vector<redcoord::testing::process>& procs,
                           const std::vector<std::size_t>& clients,
                           const std::vector<std::size_t>& targets, std::mt19937& rng,
                           std::chrono::steady_clock::time_point end, fault_timing timing,
                           outcome_base& out) {
    fault_plan plan;
    plan.timing = timing;
    partitions_and_pauses(net, procs, clients, targets, rng, end, plan, out);
}

std::vector<redcoord::testing::history::event> finish(
    std::vector<redcoord::testing::process>& procs, const run_dir& dir, std::chrono::seconds wait,
    outcome_base& out) {
    for (auto& p : procs) out.clients_finished &= p.wait_for(wait) == std::optional<int>(0);
    return redcoord::testing::history::read_log(dir.file("history.log"));
}

void record(const run_dir& dir, const std::vector<redcoord::testing::history::event>& events) {
    history_log log(dir.file("history.log"));
    if (log.open())
        for (const auto& e : events) log.write(e);
}

std::vector<std::string> jumping_clock(const run_dir& dir, std::size_t i) {
    return redcoord::testing::wall_clock_jump_launcher(dir.file("clock" + std::to_string(i)));
}

void wall_clock_jumps(const run_dir& dir, std::size_t clients, std::mt19937& rng,
                      std::chrono::steady_clock::time_point end, outcome_base& out) {
    auto between = [&](long lo, long hi) {
        return std::uniform_int_distribution<long>(lo, hi)(rng);
    };
    while (std::chrono::steady_clock::now() < end) {
        std::this_thread::sleep_for(std::chrono::milliseconds(between(200, 500)));
        const auto c = static_cast<std::size_t>(between(0, static_cast<long>(clients) - 1));
        const auto by = std::chrono::seconds(between(3600, 86400) * (between(0, 1) ? 1 : -1));
        redcoord::testing::write_clock_offset(dir.file("clock" + std::to_string(c)), by);
        ++out.clock_jumps;
    }
}

namespace {

// KEYS: the newest accepted token, the decision counter. ARGV: the token, the rule.
const redcoord::script resource_fence(R"lua(
local seq = redis.call('INCR', KEYS[2])
local last = tonumber(redis.call('GET', KEYS[1]) or '0')
local token = tonumber(ARGV[1])
local rule = ARGV[2]
if rule == 'none' or (rule == 'above' and token > last) or (rule == 'at_least' and token >= last) then
  redis.call('SET', KEYS[1], ARGV[1])
  return {1, seq}
end
return {0, seq}
)lua");

}  // namespace

void guarded_write(redcoord::connection_pool& resource, fence rule,
                   redcoord::testing::history::event& e) {
    const char* rule_name = rule == fence::above      ? "above"
                            : rule == fence::at_least ? "at_least"
                                                      : "none";
    try {
        const auto r =
            resource_fence.run(resource, {"resource:{chaos}:token", "resource:{chaos}:seq"},
                               {std::to_string(e.token), rule_name});
        e.ok = r.elements().at(0).integer() == 1;
        e.seq = static_cast<std::uint64_t>(r.elements().at(1).integer());
    } catch (const std::exception&) {
        e.op += "-unknown";
    }
}

redcoord::endpoint quick_endpoint(const std::string& url) {
    auto ep = redcoord::parse_endpoint(url);
    ep.connect_timeout = std::chrono::milliseconds(200);
    ep.command_timeout = std::chrono::milliseconds(300);
    return ep;
}

std::int64_t history_ns(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

history_log::history_log(const std::string& path) : file_(std::fopen(path.c_str(), "a")) {}

history_log::~history_log() {
    if (file_) std::fclose(file_);
}

void history_log::write(const redcoord::testing::history::event& e) {
    const std::string line = redcoord::testing::history::to_log_line(e);
    std::fwrite(line.data(), 1, line.size(), file_);
    std::fflush(file_);
}

void numbered_writes(history_log& log, const std::string& name, const std::string& what,
                     std::chrono::steady_clock::time_point until,
                     std::chrono::milliseconds pause_min, std::chrono::milliseconds pause_max,
                     const std::function<void(const std::string& id)>& op) {
    namespace h = redcoord::testing::history;
    std::mt19937 rng(std::random_device{}());
    std::uniform_int_distribution<long long> pause(pause_min.count(), pause_max.count());
    for (std::uint64_t n = 1; std::chrono::steady_clock::now() < until; ++n) {
        const std::string id = name + "-" + std::to_string(n);
        h::event e{name, what, h::monotonic_ns(), 0, false, 0, 0, id};
        try {
            op(id);
            e.ok = true;
        } catch (const std::exception&) {
            std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the server is away
        }
        e.end_ns = h::monotonic_ns();
        log.write(e);
        std::this_thread::sleep_for(std::chrono::milliseconds(pause(rng)));
    }
}

}  // namespace chaos
