// The main job (./scripts/demo): starts 5 local masters and a replica (or uses --redis URLs),
// then drives 4 worker processes through the four use cases and checks what they did:
//   (a) leader-only scheduled task, leader SIGKILLed midway;
//   (b) barrier, three generations;
//   (c) reliable work queue of 2,000 jobs, one consumer SIGKILLed while holding jobs;
//   (d) Redlock over the 5 masters guarding a read-modify-write counter.
// --metrics-port N serves the demo's metrics on http://127.0.0.1:N/metrics (its pools, and the
// work queue's gauges sampled at each scrape) and worker i's on port N+1+i while its phase runs.
// Ends with "demo: ok", or "demo: FAILED <why>" and exit status 1.
// --faults (own servers only) injects faults while the same checks run: the replica is
// SIGSTOPped for 1 s during (b); during (d) one Redlock master is SIGKILLed and another
// SIGSTOPped for 0.6 s, and the killed one is restarted only after the lock's TTL has passed
// (a delayed restart, as the Redlock page asks of a node that restarts without its keys).
#include "demo_keys.hpp"

#include <redcoord/core/errors.hpp>
#include <redcoord/core/pool.hpp>
#include <redcoord/core/runtime.hpp>
#include <redcoord/core/token.hpp>
#include <redcoord/election/leader_elector.hpp>
#include <redcoord/http/metrics_server.hpp>
#include <redcoord/queue/reliable_queue.hpp>
#include <redcoord/testing/local_server.hpp>
#include <redcoord/testing/process.hpp>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <thread>
#include <unistd.h>

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;
using redcoord::testing::process;

namespace {

struct failure : std::runtime_error {
    using std::runtime_error::runtime_error;
};

void check(bool ok, const std::string& why) {
    if (!ok) throw failure(why);
}

std::int64_t steady_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               clock_type::now().time_since_epoch())
        .count();
}

std::vector<std::vector<std::int64_t>> read_records(redcoord::connection_pool& main,
                                                    const std::string& key) {
    std::vector<std::vector<std::int64_t>> out;
    const auto list = main.command({"LRANGE", key, "0", "-1"});
    for (auto& e : list.elements()) {
        std::istringstream in(e.text());
        std::vector<std::int64_t> fields;
        for (std::int64_t v; in >> v;) fields.push_back(v);
        out.push_back(std::move(fields));
    }
    return out;
}

// Runs timed fault actions on its own thread while a phase runs, printing each one with its
// time since the demo started. Joined (after the remaining actions ran) by finish().
class fault_schedule {
public:
    explicit fault_schedule(clock_type::time_point demo_start) : demo_start_(demo_start) {}
    ~fault_schedule() { finish(); }

    void at(std::chrono::milliseconds after, std::string what, std::function<void()> action) {
        steps_.push_back({clock_type::now() + after, std::move(what), std::move(action)});
    }
    void start() {
        runner_ = std::thread([this] {
            for (auto& s : steps_) {
                std::this_thread::sleep_until(s.when);
                s.action();
                std::printf("demo: fault at +%.2f s: %s\n",
                            std::chrono::duration<double>(clock_type::now() - demo_start_).count(),
                            s.what.c_str());
                std::fflush(stdout);
            }
        });
    }
    void finish() {
        if (runner_.joinable()) runner_.join();
    }

private:
    struct step {
        clock_type::time_point when;
        std::string what;
        std::function<void()> action;
    };
    clock_type::time_point demo_start_;
    std::vector<step> steps_;
    std::thread runner_;
};

// The demo's own servers, for --faults.
struct fault_targets {
    std::vector<redcoord::testing::local_server*> masters;
    redcoord::testing::local_server* replica = nullptr;
    clock_type::time_point demo_start;
};

std::string port_of(const redcoord::testing::local_server& s) {
    return "port " + std::to_string(s.port());
}

class demo_run {
public:
    demo_run(std::vector<std::string> urls, std::vector<std::string> replicas,
             std::optional<fault_targets> faults, int metrics_port)
        : urls_(std::move(urls)), replicas_(std::move(replicas)),
          main_(redcoord::parse_endpoint(urls_.front())), faults_(std::move(faults)),
          metrics_port_(metrics_port) {
        keys_.run = redcoord::random_token().substr(0, 10);
        worker_ =
            (std::filesystem::read_symlink("/proc/self/exe").parent_path() / "worker").string();
        check(::access(worker_.c_str(), X_OK) == 0, "worker binary not found at " + worker_);
    }

    ~demo_run() { cleanup(); }

    std::vector<process> spawn(const std::string& phase, double seconds) {
        std::vector<process> ws;
        for (int id = 0; id < demo::workers; ++id) {
            std::vector<std::string> argv{worker_,   "--phase",          phase,
                                          "--id",    std::to_string(id), "--run",
                                          keys_.run, "--seconds",        std::to_string(seconds)};
            if (metrics_port_ > 0)
                argv.insert(argv.end(), {"--metrics-port", std::to_string(metrics_port_ + 1 + id)});
            for (auto& u : urls_) argv.insert(argv.end(), {"--redis", u});
            for (auto& r : replicas_) argv.insert(argv.end(), {"--replica", r});
            ws.emplace_back(argv);
        }
        return ws;
    }

    static void join(std::vector<process>& ws, std::chrono::milliseconds timeout, int skip = -1) {
        auto deadline = clock_type::now() + timeout;
        for (int i = 0; i < static_cast<int>(ws.size()); ++i) {
            if (i == skip) continue;
            auto left =
                std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_type::now());
            auto st = ws[i].wait_for(std::max(left, 1ms));
            check(st.has_value(), "worker " + std::to_string(i) + " did not finish in time");
            check(*st == 0,
                  "worker " + std::to_string(i) + " exited with status " + std::to_string(*st));
        }
    }

    // (a) Exactly one worker at a time runs the 200 ms tick; the leader is SIGKILLed midway.
    std::string leader_task() {
        auto ws = spawn("leader", 6.0);
        redcoord::election_options eo;
        eo.identity = "demo-observer";
        eo.term = 1000ms;
        redcoord::leader_elector observer(main_, keys_.election(),
                                          eo);  // never started: reads only
        std::this_thread::sleep_for(2500ms);
        auto leader = observer.leader();
        check(leader && leader->rfind("worker-", 0) == 0, "no leader after 2.5 s");
        int victim = std::stoi(leader->substr(7));
        auto killed_at = steady_ns();
        ws[victim].kill();
        join(ws, 10s, victim);

        auto ticks = read_records(main_, keys_.ticks());  // id epoch start end
        check(ticks.size() >= 10, "only " + std::to_string(ticks.size()) + " ticks");
        std::sort(ticks.begin(), ticks.end(), [](auto& a, auto& b) { return a[2] < b[2]; });
        std::vector<std::pair<std::int64_t, std::int64_t>> terms;  // (worker, epoch) in order
        std::int64_t takeover_ns = -1;
        for (std::size_t i = 0; i < ticks.size(); ++i) {
            auto& t = ticks[i];
            if (i > 0) {
                auto& p = ticks[i - 1];
                check(t[2] >= p[3], "ticks of worker " + std::to_string(p[0]) + " and " +
                                        std::to_string(t[0]) + " overlapped");
                check(t[1] >= p[1], "epoch went backwards");
            }
            if (terms.empty() || terms.back() != std::make_pair(t[0], t[1]))
                terms.emplace_back(t[0], t[1]);
            if (t[0] == victim)
                check(t[3] <= killed_at, "the killed leader ticked after its death");
            if (takeover_ns < 0 && t[2] > killed_at) takeover_ns = t[2] - killed_at;
        }
        check(takeover_ns >= 0, "no worker took over after the leader was killed");
        std::set<std::int64_t> leaders;
        std::string chain;
        for (auto& [w, e] : terms) {
            leaders.insert(w);
            chain += (chain.empty() ? "" : " -> ") + std::string("worker-") + std::to_string(w) +
                     " epoch " + std::to_string(e);
        }
        check(leaders.size() >= 2, "the same worker led before and after the kill");
        char buf[512];
        std::snprintf(
            buf, sizeof buf,
            "%zu ticks, never two at once; %s; leader worker-%d SIGKILLed, next tick %.0f ms later",
            ticks.size(), chain.c_str(), victim, static_cast<double>(takeover_ns) / 1e6);
        return buf;
    }

    // (b) All four wait on the barrier and pass together, three times.
    std::string barrier() {
        auto ws = spawn("barrier", 0);
        std::optional<fault_schedule> f;
        if (faults_ && faults_->replica) {
            auto* r = faults_->replica;
            f.emplace(faults_->demo_start);
            f->at(50ms, "SIGSTOP the replica (" + port_of(*r) + ") during the barrier",
                  [r] { r->pause(); });
            f->at(1050ms, "SIGCONT the replica after 1 s", [r] { r->resume(); });
            f->start();
        }
        join(ws, 30s);
        if (f) f->finish();
        auto log = read_records(main_, keys_.barrier_log());  // id generation arrived passed
        check(log.size() == static_cast<std::size_t>(demo::workers * demo::barrier_rounds),
              "barrier log has " + std::to_string(log.size()) + " entries");
        std::map<std::int64_t, std::vector<std::vector<std::int64_t>>> by_gen;
        for (auto& r : log) by_gen[r[1]].push_back(r);
        check(by_gen.size() == static_cast<std::size_t>(demo::barrier_rounds),
              "wrong number of generations");
        double worst_ms = 0;
        for (auto& [gen, rs] : by_gen) {
            check(rs.size() == static_cast<std::size_t>(demo::workers),
                  "generation " + std::to_string(gen) + " incomplete");
            std::int64_t last_arrival = 0, first_pass = LLONG_MAX, last_pass = 0;
            for (auto& r : rs) {
                last_arrival = std::max(last_arrival, r[2]);
                first_pass = std::min(first_pass, r[3]);
                last_pass = std::max(last_pass, r[3]);
            }
            check(first_pass >= last_arrival, "a worker passed before everyone arrived");
            worst_ms = std::max(worst_ms, static_cast<double>(last_pass - last_arrival) / 1e6);
        }
        char buf[256];
        std::snprintf(buf, sizeof buf,
                      "%d generations x %d workers, nobody passed early; last arrival to last pass "
                      "<= %.1f ms",
                      demo::barrier_rounds, demo::workers, worst_ms);
        return buf;
    }

    // (c) 2,000 jobs; worker 1 is SIGKILLed while it holds jobs; nothing may be lost.
    std::string work_queue() {
        redcoord::reliable_queue producer(
            main_, keys_.queue(),
            {.consumer_id = "demo-producer-" + keys_.run, .recover_on_start = false});
        std::vector<std::string> jobs;
        for (int i = 0; i < demo::jobs; ++i) jobs.push_back("job-" + std::to_string(i));
        producer.push_batch(jobs);
        auto ws = spawn("queue", 40.0);
        const std::string victim_id = "demo-worker-1-" + keys_.run;
        std::size_t held = 0;
        auto deadline = clock_type::now() + 20s;
        while (clock_type::now() < deadline) {
            auto st = producer.stats();
            auto it = st.in_flight.find(victim_id);
            if (it != st.in_flight.end() && it->second > 0 &&
                main_.command({"SCARD", keys_.done()}).integer() >= demo::jobs / 4) {
                ws[1].kill();
                held = producer.stats().in_flight[victim_id];
                break;
            }
            std::this_thread::sleep_for(1ms);
        }
        check(!ws[1].running(), "worker 1 never held jobs to be killed with");
        join(ws, 40s, 1);
        auto done = main_.command({"SCARD", keys_.done()}).integer();
        check(done == demo::jobs,
              "only " + std::to_string(done) + " of " + std::to_string(demo::jobs) + " jobs done");
        std::int64_t executions = 0;
        auto counts = main_.command({"HVALS", keys_.done_count()});
        for (auto& c : counts.elements()) executions += std::stoll(c.text());
        auto st = producer.stats();
        check(st.ready == 0 && st.dead == 0, "jobs left behind in the queue");
        char buf[256];
        std::snprintf(buf, sizeof buf,
                      "%lld/%d jobs completed, none lost; worker-1 SIGKILLed holding %zu jobs, "
                      "recovered by the others; %lld jobs ran twice",
                      static_cast<long long>(done), demo::jobs, held,
                      static_cast<long long>(executions - done));
        return buf;
    }

    // (d) 4 x 500 increments under Redlock over every master.
    std::string redlock() {
        auto ws = spawn("redlock", 0);
        std::optional<fault_schedule> f;
        if (faults_ && faults_->masters.size() >= 5) {
            // Never the first master: it also holds the counter the workers check.
            auto* killed = faults_->masters[3];
            auto* paused = faults_->masters[4];
            f.emplace(faults_->demo_start);
            f->at(100ms,
                  "SIGKILL Redlock master " + port_of(*killed) + " and SIGSTOP master " +
                      port_of(*paused),
                  [killed, paused] {
                      killed->kill();
                      paused->pause();
                  });
            f->at(700ms, "SIGCONT master " + port_of(*paused) + " after 0.6 s",
                  [paused] { paused->resume(); });
            // Delayed restart: it comes back empty, so it stays down longer than the TTL
            // (2 s) of any key it held.
            f->at(100ms + demo::redlock_ttl + 500ms,
                  "restart master " + port_of(*killed) + " (delayed restart: down for TTL + 0.5 s)",
                  [killed] { killed->restart(); });
            f->start();
        }
        join(ws, 45s);
        if (f) f->finish();
        auto counter = main_.command({"GET", keys_.counter()}).maybe_text();
        auto overlaps = main_.command({"GET", keys_.overlaps()}).maybe_text();
        const long long want = static_cast<long long>(demo::workers) * demo::increments_per_worker;
        check(counter && std::stoll(*counter) == want,
              "counter is " + counter.value_or("missing") + ", expected " + std::to_string(want));
        check(!overlaps, "critical sections overlapped " + overlaps.value_or("0") + " times");
        return "counter " + *counter + "/" + std::to_string(want) + " over " +
               std::to_string(urls_.size()) + " masters, no two critical sections overlapped";
    }

private:
    void cleanup() noexcept {
        try {
            // Only this run's keys: the demo may be running against someone's servers.
            std::string cursor = "0";
            do {
                auto r = main_.command(
                    {"SCAN", cursor, "MATCH", "*demo:" + keys_.run + ":*", "COUNT", "1000"});
                cursor = r.elements()[0].text();
                for (auto& k : r.elements()[1].elements()) main_.command({"DEL", k.text()});
            } while (cursor != "0");
        } catch (...) {}
    }

    std::vector<std::string> urls_, replicas_;
    redcoord::connection_pool main_;
    std::optional<fault_targets> faults_;
    demo::keys keys_;
    std::string worker_;
    int metrics_port_ = 0;  // > 0: worker i serves its metrics on metrics_port_ + 1 + i
};

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"redcoord demo: the four use cases on real Redis servers"};
    std::vector<std::string> urls;
    app.add_option(
        "--redis", urls,
        "Use this existing server (repeatable; the first is the main one, all are Redlock nodes)");
    bool faults = false;
    app.add_flag("--faults", faults,
                 "Inject faults into the demo's own servers: SIGSTOP the replica during the "
                 "barrier; SIGKILL one "
                 "Redlock master and SIGSTOP another for 0.6 s during the Redlock phase, restart "
                 "the killed one "
                 "after the TTL");
    int metrics_port = -1;
    app.add_option("--metrics-port", metrics_port,
                   "Serve this process's metrics at http://127.0.0.1:N/metrics while the demo runs "
                   "(0: any free "
                   "port), and worker i's at port N+1+i while its phase runs (N > 0 only)")
        ->check(CLI::Range(0, 65530));
    CLI11_PARSE(app, argc, argv);
    // Before the first pool: objects resolve their metric series when constructed.
    std::unique_ptr<redcoord::metrics_server> metrics;
    if (metrics_port >= 0) {
        auto registry = std::make_shared<redcoord::metrics_registry>();
        redcoord::runtime::shared()->set_metrics(registry);
        metrics = std::make_unique<redcoord::metrics_server>(
            registry,
            redcoord::metrics_server_options{.port = static_cast<std::uint16_t>(metrics_port)});
        std::printf("demo: metrics at %s", metrics->url().c_str());
        if (metrics_port > 0)
            std::printf(" (worker i's at port %d+i while its phase runs)", metrics_port + 1);
        std::printf("\n");
        std::fflush(stdout);
    }
    if (faults && !urls.empty()) {
        std::printf(
            "demo: FAILED --faults needs the demo's own servers (it signals them by PID); drop "
            "--redis\n");
        return 1;
    }

    auto started = clock_type::now();
    std::vector<std::unique_ptr<redcoord::testing::local_server>> servers;
    std::unique_ptr<redcoord::testing::local_server> replica;
    std::vector<std::string> replicas;
    try {
        if (urls.empty()) {
            servers = redcoord::testing::start_masters(5);
            replica = redcoord::testing::local_server::replica_of(*servers.front());
            for (auto& s : servers) urls.push_back(s->url());
            replicas.push_back(replica->url());
            std::printf("demo: started 5 masters (ports");
            for (auto& s : servers) std::printf(" %u", s->port());
            std::printf(") and a replica of the first (port %u)\n", replica->port());
        }
        std::optional<fault_targets> targets;
        if (faults) {
            targets.emplace();
            for (auto& m : servers) targets->masters.push_back(m.get());
            targets->replica = replica.get();
            targets->demo_start = started;
            std::printf(
                "demo: --faults: the replica is paused during (b); in (d) a master is killed and "
                "another "
                "paused, the killed one restarted after the TTL\n");
        }
        demo_run run(urls, replicas, targets, metrics_port);
        const std::pair<const char*, std::string (demo_run::*)()> cases[] = {
            {"(a) leader-only task", &demo_run::leader_task},
            {"(b) barrier", &demo_run::barrier},
            {"(c) work queue", &demo_run::work_queue},
            {"(d) redlock", &demo_run::redlock},
        };
        for (auto& [name, fn] : cases) {
            auto t0 = clock_type::now();
            auto report = (run.*fn)();
            std::printf("%s: %s [%.1f s]\n", name, report.c_str(),
                        std::chrono::duration<double>(clock_type::now() - t0).count());
            std::fflush(stdout);
        }
    } catch (const std::exception& e) {
        std::printf("demo: FAILED %s\n", e.what());
        return 1;
    }
    std::printf("demo: ok (%.1f s)\n",
                std::chrono::duration<double>(clock_type::now() - started).count());
    return 0;
}
