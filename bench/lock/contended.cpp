#include "contended.hpp"

#include "raw_clients.hpp"

#include <redcoord/core/token.hpp>
#include <redcoord/lock/distributed_lock.hpp>
#include <redcoord/lock/redlock.hpp>

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <new>
#include <thread>

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

namespace lock_bench {
namespace {

void backoff() {  // 5 +- 5 ms
    std::this_thread::sleep_for(std::chrono::microseconds(redcoord::random_between(0, 10000)));
}

template <class Body>
contended_result run_threads(int threads, std::chrono::milliseconds run, Body body) {
    std::atomic<bool> stop{false};
    std::atomic<std::uint64_t> sections{0};
    std::vector<std::thread> ts;
    for (int i = 0; i < threads; ++i) ts.emplace_back([&, i] { body(i, stop, sections); });
    const auto t0 = clock_type::now();
    std::this_thread::sleep_for(run);
    stop = true;
    for (auto& t : ts) t.join();
    const double secs = std::chrono::duration<double>(clock_type::now() - t0).count();
    return {secs, sections.load()};
}

// State the contending processes share (an anonymous shared mapping; these atomics are
// lock-free, so they work across processes).
struct shared_state {
    std::atomic<bool> stop{false};
    std::atomic<std::uint64_t> sections{0};
    std::atomic<int> inside{0};  // holders in the critical section right now
    std::atomic<std::uint64_t> quorum_errors{0};
};
static_assert(std::atomic<std::uint64_t>::is_always_lock_free && std::atomic<int>::is_always_lock_free);

shared_state& shared() {
    static shared_state* s = [] {
        void* p = ::mmap(nullptr, sizeof(shared_state), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) std::abort();
        return new (p) shared_state;
    }();
    return *s;
}

// The critical section: checks exclusion across all contenders (two holders at once voids
// the bench).
void critical_section(std::atomic<std::uint64_t>& sections) {
    auto& inside = shared().inside;
    if (inside.fetch_add(1) != 0) std::abort();
    ++sections;
    inside.fetch_sub(1);
}

// The contenders: `procs` processes (forked, each with its own connections and lock
// object) looping on one resource until told to stop.
template <class Body>
contended_result run_processes(int procs, std::chrono::milliseconds run, Body body) {
    auto& sh = shared();
    sh.stop = false;
    sh.sections = 0;
    std::vector<pid_t> kids;
    const auto t0 = clock_type::now();
    for (int i = 0; i < procs; ++i) {
        const pid_t pid = ::fork();
        if (pid < 0) std::abort();
        if (pid == 0) {
            body(sh.stop, sh.sections);
            ::_exit(0);
        }
        kids.push_back(pid);
    }
    std::this_thread::sleep_for(run);
    sh.stop = true;
    for (auto pid : kids) {
        int status = 0;
        if (::waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) std::abort();
    }
    const double secs = std::chrono::duration<double>(clock_type::now() - t0).count();
    return {secs, sh.sections.load()};
}

redcoord::endpoint local(std::uint16_t port) {
    redcoord::endpoint e;
    e.port = port;
    return e;
}

}  // namespace

std::uint64_t quorum_errors() { return shared().quorum_errors.load(); }

contended_result raw_polling_single(std::uint16_t port, int procs, std::chrono::milliseconds run) {
    return run_processes(procs, run, [port](std::atomic<bool>& stop, std::atomic<std::uint64_t>& sections) {
        auto* c = raw_connect(port);
        const auto sha = raw_load_release(c);
        const std::string key = "bench:raw:contended1", token = redcoord::random_token(), ttl = "10000";
        while (!stop) {
            if (raw_try(c, key, token, ttl)) {
                critical_section(sections);
                raw_release(c, sha, key, token);
            } else {
                backoff();
            }
        }
        redisFree(c);
    });
}

contended_result lock_contended_single(std::uint16_t port, int procs, std::chrono::milliseconds run) {
    return run_processes(procs, run, [port](std::atomic<bool>& stop, std::atomic<std::uint64_t>& sections) {
        redcoord::connection_pool pool(local(port));
        redcoord::distributed_lock lock(pool, "bench:contended1", {.ttl = 10s});
        while (!stop) {
            // A bounded wait so the thread notices `stop` even while others hold the lock.
            if (!lock.acquire(200ms)) continue;
            critical_section(sections);
            lock.unlock();
        }
    });
}

contended_result raw_polling_quorum(const std::vector<std::uint16_t>& ports, int procs, std::chrono::milliseconds run) {
    return run_processes(procs, run, [&ports](std::atomic<bool>& stop, std::atomic<std::uint64_t>& sections) {
        raw_quorum q(ports);
        std::string sha;
        for (std::size_t i = 0; i < q.size(); ++i) sha = raw_load_release(q.node(i));
        const std::size_t quorum = ports.size() / 2 + 1;
        const std::string key = "bench:raw:contended5", token = redcoord::random_token();
        const std::vector<std::string> acquire{"SET", key, token, "NX", "PX", "10000"};
        const std::vector<std::string> release{"EVALSHA", sha, "1", key, token};
        while (!stop) {
            if (q.round(acquire, quorum) >= quorum) {
                critical_section(sections);
                (void)q.round(release, quorum);
            } else {
                (void)q.round(release, quorum);  // release partial locks at once
                backoff();
            }
        }
    });
}

contended_result redlock_contended(const std::vector<std::uint16_t>& ports, int procs, std::chrono::milliseconds run) {
    return run_processes(procs, run, [&ports](std::atomic<bool>& stop, std::atomic<std::uint64_t>& sections) {
        std::vector<std::unique_ptr<redcoord::connection_pool>> pools;
        std::vector<redcoord::connection_pool*> nodes;
        for (auto p : ports) {
            pools.push_back(std::make_unique<redcoord::connection_pool>(local(p)));
            nodes.push_back(pools.back().get());
        }
        redcoord::redlock lock(nodes, "bench:contended5", {.ttl = 10s});
        while (!stop) {
            try {
                if (!lock.acquire(200ms)) continue;
            } catch (const redcoord::quorum_unreachable&) {
                // Every node silent for node_timeout (50 ms): on this 2-core VM a fresh
                // slice's connects can stall that long. Counted and reported, not fatal.
                ++shared().quorum_errors;
                continue;
            }
            critical_section(sections);
            lock.unlock();
        }
    });
}

std::vector<double> single_handoffs_us(std::uint16_t port, std::chrono::milliseconds run) {
    std::mutex mu;
    std::vector<double> samples;
    std::atomic<std::int64_t> released_at{0};  // steady ns at the start of the last unlock()
    std::atomic<int> last_holder{-1};
    (void)run_threads(2, run, [&](int me, std::atomic<bool>& stop, std::atomic<std::uint64_t>&) {
        redcoord::connection_pool pool(local(port));
        redcoord::distributed_lock lock(pool, "bench:handoff", {.ttl = 10s});
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
    return samples;
}

}  // namespace lock_bench
