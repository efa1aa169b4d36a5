#include "fair.hpp"

#include "raw_clients.hpp"

#include <redcoord/lock/fair_lock.hpp>

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <new>
#include <thread>

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

namespace lock_bench {
namespace {

// A small copy of contended.cpp's shared state, with per-process counts (the lead folds the
// two into one helper later).
constexpr int max_procs = 64;
struct fair_shared {
    std::atomic<bool> stop{false};
    std::atomic<int> inside{0};  // holders in the critical section right now
    std::atomic<std::uint64_t> counts[max_procs];
};
static_assert(std::atomic<std::uint64_t>::is_always_lock_free && std::atomic<int>::is_always_lock_free);

fair_shared& shared() {
    static fair_shared* s = [] {
        void* p = ::mmap(nullptr, sizeof(fair_shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) std::abort();
        return new (p) fair_shared;
    }();
    return *s;
}

redcoord::endpoint local(std::uint16_t port) {
    redcoord::endpoint e;
    e.port = port;
    return e;
}

void must(redisContext* c, const char* cmd, const char* key) {
    auto* r = static_cast<redisReply*>(redisCommand(c, cmd, key));
    if (!r || r->type != REDIS_REPLY_INTEGER) std::abort();
    freeReplyObject(r);
}

// The critical section: INCR and DECR on the server, and the exclusion check.
void critical_section(redisContext* c, std::atomic<std::uint64_t>& mine) {
    auto& inside = shared().inside;
    if (inside.fetch_add(1) != 0) std::abort();
    must(c, "INCR %s", "bench:fair:counter");
    must(c, "DECR %s", "bench:fair:counter");
    ++mine;
    inside.fetch_sub(1);
}

}  // namespace

std::uint64_t fair_contended_result::total() const {
    std::uint64_t t = 0;
    for (auto c : counts) t += c;
    return t;
}

double fair_contended_result::per_second() const { return seconds > 0 ? static_cast<double>(total()) / seconds : 0.0; }

double fair_contended_result::min_share() const {
    if (counts.empty() || total() == 0) return 0.0;
    const double even = static_cast<double>(total()) / static_cast<double>(counts.size());
    return static_cast<double>(*std::min_element(counts.begin(), counts.end())) / even;
}

std::vector<double> fair_handoffs_us(std::uint16_t port, std::chrono::milliseconds run) {
    std::mutex mu;
    std::vector<double> samples;
    std::atomic<std::int64_t> released_at{0};  // steady ns at the start of the last unlock()
    std::atomic<int> last_holder{-1};
    std::atomic<bool> stop{false};
    std::vector<std::thread> ts;
    for (int me = 0; me < 2; ++me)
        ts.emplace_back([&, me] {
            redcoord::connection_pool pool(local(port));
            redcoord::fair_lock lock(pool, "bench:fair:handoff", {.ttl = 10s});
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

fair_contended_result fair_contended(std::uint16_t port, int procs, std::chrono::milliseconds run) {
    if (procs < 1 || procs > max_procs) std::abort();
    auto& sh = shared();
    sh.stop = false;
    for (auto& c : sh.counts) c = 0;
    std::vector<pid_t> kids;
    const auto t0 = clock_type::now();
    for (int i = 0; i < procs; ++i) {
        const pid_t pid = ::fork();
        if (pid < 0) std::abort();
        if (pid == 0) {
            auto* c = raw_connect(port);
            {
                redcoord::connection_pool pool(local(port));
                redcoord::fair_lock lock(pool, "bench:fair:contended", {.ttl = 10s});
                while (!sh.stop) {
                    // A bounded wait so the process notices `stop` while others hold the lock.
                    if (!lock.acquire(200ms)) continue;
                    critical_section(c, sh.counts[i]);
                    lock.unlock();
                }
            }
            redisFree(c);
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
    fair_contended_result r;
    r.seconds = std::chrono::duration<double>(clock_type::now() - t0).count();
    for (int i = 0; i < procs; ++i) r.counts.push_back(sh.counts[i].load());
    return r;
}

}  // namespace lock_bench
