#include "contended.hpp"

#include "raw_clients.hpp"

#include <redcoord/core/token.hpp>
#include <redcoord/lock/distributed_lock.hpp>
#include <redcoord/lock/fair_lock.hpp>
#include <redcoord/lock/redlock.hpp>

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <new>
#include <numeric>
#include <thread>

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

namespace lock_bench {

std::uint64_t contended_result::sections() const {
    return std::accumulate(per_process.begin(), per_process.end(), std::uint64_t{0});
}

double contended_result::per_second() const {
    return seconds > 0 ? static_cast<double>(sections()) / seconds : 0.0;
}

double contended_result::min_share() const {
    const auto total = sections();
    if (total == 0 || per_process.empty()) return 0.0;
    const auto least = *std::min_element(per_process.begin(), per_process.end());
    return static_cast<double>(least) * static_cast<double>(per_process.size()) /
           static_cast<double>(total);
}

contended_result& contended_result::operator+=(const contended_result& o) {
    seconds += o.seconds;
    if (per_process.size() < o.per_process.size()) per_process.resize(o.per_process.size(), 0);
    for (std::size_t i = 0; i < o.per_process.size(); ++i) per_process[i] += o.per_process[i];
    return *this;
}

namespace {

constexpr int max_procs = 16;
// Wait histogram: 10 us buckets up to 2 s, then one overflow bucket.
constexpr std::size_t buckets = 200000;
constexpr double bucket_us = 10.0;

// State the contending processes share (an anonymous shared mapping; these atomics are
// lock-free, so they work across processes).
struct shared_state {
    std::atomic<bool> stop{false};
    std::atomic<int> inside{0};  // holders in the critical section right now
    std::array<std::atomic<std::uint64_t>, max_procs> sections{};
    std::array<std::array<std::atomic<std::uint64_t>, buckets + 1>, 5> waits{};
};
static_assert(std::atomic<std::uint64_t>::is_always_lock_free &&
              std::atomic<int>::is_always_lock_free);

shared_state& shared() {
    static shared_state* s = [] {
        void* p = ::mmap(nullptr, sizeof(shared_state), PROT_READ | PROT_WRITE,
                         MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) std::abort();
        return new (p) shared_state;
    }();
    return *s;
}

void backoff() {  // 5 +- 5 ms
    std::this_thread::sleep_for(std::chrono::microseconds(redcoord::random_between(0, 10000)));
}

void record_wait(waits which, clock_type::duration d) {
    const auto us = std::chrono::duration<double, std::micro>(d).count();
    const auto b = std::min<std::size_t>(buckets, static_cast<std::size_t>(us / bucket_us));
    ++shared().waits[static_cast<std::size_t>(which)][b];
}

// One contending process's view: its index, its connection for the critical section.
class contender {
public:
    contender(int index, std::uint16_t cs_port) : index_(index), c_(raw_connect(cs_port)) {}
    ~contender() { redisFree(c_); }
    contender(const contender&) = delete;
    contender& operator=(const contender&) = delete;

    [[nodiscard]] bool stopping() const { return shared().stop.load(); }

    // The critical section: INCR must answer 1 (nobody else inside), then DECR; the shared
    // counter checks the same across processes without the server.
    void critical_section() {
        auto& inside = shared().inside;
        if (inside.fetch_add(1) != 0) std::abort();
        auto* r = static_cast<redisReply*>(redisCommand(c_, "INCR bench:contended:inside"));
        if (!r || r->type != REDIS_REPLY_INTEGER || r->integer != 1) std::abort();
        freeReplyObject(r);
        r = static_cast<redisReply*>(redisCommand(c_, "DECR bench:contended:inside"));
        if (!r) std::abort();
        freeReplyObject(r);
        ++shared().sections[static_cast<std::size_t>(index_)];
        inside.fetch_sub(1);
    }

private:
    int index_;
    redisContext* c_;
};

// The contenders: `procs` processes (forked, each with its own connections and lock
// object) looping on one resource until told to stop. body(contender&) runs in each child.
template <class Body>
contended_result run_processes(int procs, std::chrono::milliseconds run, std::uint16_t cs_port,
                               Body body) {
    if (procs > max_procs) std::abort();
    auto& sh = shared();
    sh.stop = false;
    for (auto& s : sh.sections) s = 0;
    std::vector<pid_t> kids;
    const auto t0 = clock_type::now();
    for (int i = 0; i < procs; ++i) {
        const pid_t pid = ::fork();
        if (pid < 0) std::abort();
        if (pid == 0) {
            {
                contender me(i, cs_port);
                body(me);
            }
            ::_exit(0);
        }
        kids.push_back(pid);
    }
    std::this_thread::sleep_for(run);
    sh.stop = true;
    const double secs = std::chrono::duration<double>(clock_type::now() - t0).count();
    for (auto pid : kids) {
        int status = 0;
        if (::waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
            std::abort();
    }
    contended_result out;
    out.seconds = secs;
    for (int i = 0; i < procs; ++i)
        out.per_process.push_back(sh.sections[static_cast<std::size_t>(i)].load());
    return out;
}

redcoord::endpoint local(std::uint16_t port) {
    redcoord::endpoint e;
    e.port = port;
    return e;
}

// Our lock in a contending process: lock(), the section unless the run is over, unlock().
template <class Lock>
void lock_loop(contender& me, Lock& lock, waits which) {
    while (!me.stopping()) {
        const auto t0 = clock_type::now();
        lock.lock();
        record_wait(which, clock_type::now() - t0);
        if (!me.stopping()) me.critical_section();
        lock.unlock();
    }
}

}  // namespace

double wait_percentile_ms(waits which, double p) {
    const auto& h = shared().waits[static_cast<std::size_t>(which)];
    const auto total = wait_count(which);
    if (total == 0) return 0.0;
    const auto rank = static_cast<std::uint64_t>(p / 100.0 * static_cast<double>(total));
    std::uint64_t seen = 0;
    for (std::size_t b = 0; b <= buckets; ++b) {
        seen += h[b].load();
        if (seen > rank)
            return (static_cast<double>(b) + 1.0) * bucket_us / 1000.0;  // the bucket's upper edge
    }
    return static_cast<double>(buckets) * bucket_us / 1000.0;
}

std::uint64_t wait_count(waits which) {
    const auto& h = shared().waits[static_cast<std::size_t>(which)];
    std::uint64_t n = 0;
    for (const auto& b : h) n += b.load();
    return n;
}

contended_result raw_polling_single(std::uint16_t port, int procs, std::chrono::milliseconds run) {
    return run_processes(procs, run, port, [port](contender& me) {
        auto* c = raw_connect(port);
        const auto sha = raw_load_release(c);
        const std::string key = "bench:raw:contended1", token = redcoord::random_token(),
                          ttl = "10000";
        while (!me.stopping()) {
            const auto t0 = clock_type::now();
            bool got = false;
            while (!me.stopping() && !(got = raw_try(c, key, token, ttl))) backoff();
            if (!got) break;
            record_wait(waits::raw1, clock_type::now() - t0);
            me.critical_section();
            raw_release(c, sha, key, token);
        }
        redisFree(c);
    });
}

contended_result lock_contended_single(std::uint16_t port, int procs, std::chrono::milliseconds run,
                                       bool defer_release) {
    return run_processes(procs, run, port, [port, defer_release](contender& me) {
        redcoord::connection_pool pool(local(port));
        redcoord::distributed_lock lock(pool, "bench:contended1",
                                        {.timing = {.ttl = 10s}, .defer_release = defer_release});
        lock_loop(me, lock, waits::ours1);
    });
}

contended_result raw_polling_quorum(const std::vector<std::uint16_t>& ports, int procs,
                                    std::chrono::milliseconds run) {
    return run_processes(procs, run, ports.front(), [&ports](contender& me) {
        raw_quorum q(ports);
        std::string sha;
        for (std::size_t i = 0; i < q.size(); ++i) sha = raw_load_release(q.node(i));
        const std::size_t quorum = ports.size() / 2 + 1;
        const std::string key = "bench:raw:contended5", token = redcoord::random_token();
        const std::vector<std::string> acquire{"SET", key, token, "NX", "PX", "10000"};
        const std::vector<std::string> release{"EVALSHA", sha, "1", key, token};
        while (!me.stopping()) {
            const auto t0 = clock_type::now();
            bool got = false;
            while (!me.stopping()) {
                if ((got = q.round(acquire, quorum) >= quorum)) break;
                (void)q.round(release, quorum);  // release partial locks at once
                backoff();
            }
            if (!got) break;
            record_wait(waits::raw5, clock_type::now() - t0);
            me.critical_section();
            (void)q.round(release, quorum);
        }
    });
}

contended_result redlock_contended(const std::vector<std::uint16_t>& ports, int procs,
                                   std::chrono::milliseconds run) {
    return run_processes(procs, run, ports.front(), [&ports](contender& me) {
        std::vector<std::unique_ptr<redcoord::connection_pool>> pools;
        std::vector<redcoord::connection_pool*> nodes;
        for (auto p : ports) {
            pools.push_back(std::make_unique<redcoord::connection_pool>(local(p)));
            nodes.push_back(pools.back().get());
        }
        redcoord::redlock lock(nodes, "bench:contended5", {.timing = {.ttl = 10s}});
        lock_loop(me, lock, waits::ours5);
    });
}

contended_result fair_contended(std::uint16_t port, int procs, std::chrono::milliseconds run) {
    return run_processes(procs, run, port, [port](contender& me) {
        redcoord::connection_pool pool(local(port));
        redcoord::fair_lock lock(pool, "bench:fair:contended", {.timing = {.ttl = 10s}});
        lock_loop(me, lock, waits::fair);
    });
}

namespace {

// Two holders (threads, each with its own pool and lock object) passing `Lock` back and forth.
template <class Lock, class Options>
std::vector<double> handoffs_us(std::uint16_t port, const std::string& resource, Options options,
                                std::chrono::milliseconds run) {
    std::mutex mu;
    std::vector<double> samples;
    std::atomic<std::int64_t> released_at{0};  // steady ns at the start of the last unlock()
    std::atomic<int> last_holder{-1};
    std::atomic<bool> stop{false};
    std::vector<std::thread> ts;
    for (int me = 0; me < 2; ++me)
        ts.emplace_back([&, me] {
            redcoord::connection_pool pool(local(port));
            Lock lock(pool, resource, options);
            std::vector<double> mine;
            while (!stop) {
                if (!lock.acquire(200ms)) continue;
                const auto now = clock_type::now().time_since_epoch().count();
                if (last_holder.load() != me && released_at.load() != 0)
                    mine.push_back(static_cast<double>(now - released_at.load()) / 1000.0);
                std::this_thread::sleep_for(200us);  // hold a little, so the other one is waiting
                last_holder = me;
                released_at = clock_type::now().time_since_epoch().count();
                lock.unlock();
                std::this_thread::sleep_for(1ms);  // let the waiter take over
            }
            std::lock_guard l(mu);
            samples.insert(samples.end(), mine.begin(), mine.end());
        });
    std::this_thread::sleep_for(run);
    stop = true;
    for (auto& t : ts) t.join();
    return samples;
}

}  // namespace

std::vector<double> single_handoffs_us(std::uint16_t port, std::chrono::milliseconds run) {
    return handoffs_us<redcoord::distributed_lock>(
        port, "bench:handoff", redcoord::lock_options{.timing = {.ttl = 10s}}, run);
}

std::vector<double> fair_handoffs_us(std::uint16_t port, std::chrono::milliseconds run) {
    return handoffs_us<redcoord::fair_lock>(
        port, "bench:fair:handoff", redcoord::fair_lock_options{.timing = {.ttl = 10s}}, run);
}

}  // namespace lock_bench
