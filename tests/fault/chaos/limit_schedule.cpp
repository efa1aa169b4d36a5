#include "limit_schedule.hpp"

#include <redcoord/core/keys.hpp>
#include <redcoord/testing/clock_skew.hpp>
#include <redcoord/testing/local_network.hpp>

#include <random>
#include <thread>

namespace chaos {

namespace history = redcoord::testing::history;
using redcoord::testing::local_network;
using namespace std::chrono_literals;

namespace {

// Deletes the semaphore permits whose token carries holder label ARGV[1] (members
// `<hex>/<label>:<i>`, holder_label.hpp) and wakes the waiters as a release does: what a
// semaphore that releases a dead holder's permits at once, before their TTL, would do.
// KEYS[1]: the holders' sorted set.
constexpr const char* forget_leases = R"lua(
local gone = 0
for _, m in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  if string.find(m, '/' .. ARGV[1] .. ':', 1, true) then
    gone = gone + redis.call('ZREM', KEYS[1], m)
  end
end
if gone > 0 then redis.call('PUBLISH', KEYS[1] .. ':released', 'released') end
return gone
)lua";

const char* client_kind(limiter k) {
    switch (k) {
        case limiter::semaphore: return "semaphore";
        case limiter::rw_lock: return "rwlock";
        case limiter::rate: return "rate";
    }
    return "";
}

}  // namespace

std::string limit_outcome::summary() const {
    std::string s = faults();
    if (kills) s += ", " + std::to_string(kills) + " kills";
    return s + ", " + std::to_string(holds) + " holdings, " + std::to_string(allowed) +
           " allowed, " + std::to_string(refused) + " refused, " +
           std::to_string(violations.size()) + " violations";
}

limit_outcome run(const limit_schedule& s, const std::string& client_path) {
    std::mt19937 rng(s.seed);
    local_network net;
    const auto server = net.add_host();
    // More clients than permits, so a permit given back early is taken at once.
    const std::size_t clients = s.kind == limiter::rate ? 3 : 4;
    std::vector<std::size_t> cs;
    for (std::size_t i = 0; i < clients; ++i) cs.push_back(net.add_client());
    const run_dir dir("limit", s.seed);
    if (s.clock_skew)  // an hour ahead, an hour behind, true; wall_clock_jumps() moves them
        for (std::size_t i = 0; i < clients; ++i)
            redcoord::testing::write_clock_offset(dir.file("clock" + std::to_string(i)),
                                                  std::chrono::hours(i % 3 == 0   ? 1
                                                                     : i % 3 == 1 ? -1
                                                                                  : 0));
    std::vector<redcoord::testing::process> procs;
    std::vector<std::string> names;
    const auto began = std::chrono::steady_clock::now();
    // A client started late (a killed client's successor) stops with the others.
    auto start = [&](std::size_t i, const std::string& name) {
        const auto ran = std::chrono::duration_cast<std::chrono::seconds>(
            std::chrono::steady_clock::now() - began);
        std::vector<std::string> argv{
            client_path,
            client_kind(s.kind),
            name,
            dir.file("history.log"),
            std::to_string(std::max<long long>(1, s.seconds - ran.count())),
            std::to_string(limit_ttl.count()),
            net.url(cs[i], server)};
        if (s.clock_skew) {
            auto launcher = jumping_clock(dir, i);
            argv.insert(argv.begin(), launcher.begin(), launcher.end());
        }
        redcoord::testing::process_options po;
        po.output_file = dir.file(name + ".out");
        po.env = {"CHAOS_MODE=" + s.mode};
        return net.start(cs[i], argv, po);
    };
    for (std::size_t i = 0; i < clients; ++i) {
        names.push_back("c" + std::to_string(i));
        procs.push_back(start(i, names[i]));
    }

    limit_outcome out;
    std::vector<history::event> faults;
    auto between = [&](int lo, int hi) {
        return std::chrono::milliseconds(std::uniform_int_distribution<int>(lo, hi)(rng));
    };
    const auto end = began + std::chrono::seconds(s.seconds - 1);
    if (s.partitions_and_pauses)
        partitions_and_pauses(net, procs, cs, {server}, rng, end, fault_timing{200, 500, 300, 800},
                              out);
    if (s.clock_skew) wall_clock_jumps(dir, clients, rng, end, out);
    const auto holders = redcoord::make_key(redcoord::default_prefix, "semaphore", "chaos");
    while (s.kills && std::chrono::steady_clock::now() < end) {
        std::this_thread::sleep_for(between(300, 700));
        const auto c = std::uniform_int_distribution<std::size_t>(0, clients - 1)(rng);
        const auto at = history::monotonic_ns();
        procs[c].kill();
        faults.push_back({names[c], "killed", at, at, true, 0, 0, ""});
        if (s.forget_killed_leases)
            (void)net.host(server).command({"EVAL", forget_leases, "1", holders, names[c]});
        ++out.kills;
        names[c] = "c" + std::to_string(c) + "k" + std::to_string(out.kills);
        procs[c] = start(c, names[c]);
    }
    auto h = finish(procs, dir, 20s, out);
    record(dir, faults);
    for (const auto& e : h) {
        if (e.op == "hold") ++out.holds;
        if (e.op == "request") ++(e.ok ? out.allowed : out.refused);
    }
    switch (s.kind) {
        case limiter::semaphore: out.violations = history::check_semaphore(h, limit_permits); break;
        case limiter::rw_lock: out.violations = history::check_rw_lock(h); break;
        case limiter::rate: out.violations = history::check_rate(h, limit_rate, limit_burst); break;
    }
    return out;
}

limit_schedule safe_limit_schedule(limit_family family, unsigned seed, int seconds) {
    limit_schedule s;
    s.seed = seed;
    s.seconds = seconds;
    switch (family) {
        case limit_family::semaphore_cut_or_paused:
            s.id = "semaphore/cut-or-paused";
            s.family = "semaphore holders cut from the server or paused past their TTL";
            s.partitions_and_pauses = true;
            break;
        case limit_family::semaphore_killed:
            s.id = "semaphore/killed";
            s.family = "semaphore holders killed: their permits return after the TTL";
            s.kills = true;
            break;
        case limit_family::rw_lock_cut_or_paused:
            s.id = "rwlock/cut-or-paused";
            s.family = "rw_lock readers and writers cut off or paused past their TTL";
            s.kind = limiter::rw_lock;
            s.partitions_and_pauses = true;
            break;
        case limit_family::rate_clock_skew:
            s.id = "limit/clock-skew";
            s.family = "rate limiter, clients' wall clocks 1 h off and jumping up to a day";
            s.kind = limiter::rate;
            s.clock_skew = true;
            break;
    }
    return s;
}

limit_schedule safe_limit_schedule(unsigned seed, int seconds) {
    return safe_limit_schedule(static_cast<limit_family>(seed % limit_families), seed, seconds);
}

std::vector<limit_schedule> limit_demonstrations(unsigned seed, int seconds) {
    std::vector<limit_schedule> d;
    for (unsigned f = 0; f < limit_families; ++f)
        d.push_back(safe_limit_schedule(static_cast<limit_family>(f), seed + f, seconds));
    d[0].id = "semaphore/overrun";
    d[0].family = "semaphore holders outliving their validity";
    d[0].mode = "overrun";
    d[1].id = "semaphore/forgotten-leases";
    d[1].family = "a semaphore releasing killed holders' permits before their TTL";
    d[1].forget_killed_leases = true;
    d[1].mode = "long";  // a client killed at random most likely dies holding
    d[2].id = "rwlock/overrun";
    d[2].family = "rw_lock holders outliving their validity";
    d[2].mode = "overrun";
    d[3].id = "limit/client-clock-window";
    d[3].family = "a fixed-window counter keyed by the clients' skewed clocks";
    d[3].mode = "fixed-window";
    for (auto& s : d) s.broken_on_purpose = true;
    return d;
}

}  // namespace chaos
