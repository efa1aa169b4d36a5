// A full local connection pool is not a node failure (README: node_outcome::busy, retried,
// never a loss): many lock objects sharing tiny pools, as 1,000 waiters woken together share
// the default ones (bench/runtime). Nothing was sent to a busy node, so a release resends to
// it, an unlock() waits briefly for a connection, and a wait outlasts busy rounds.

#include <redcoord/lock/distributed_lock.hpp>
#include <redcoord/lock/redlock.hpp>
#include <redcoord/testing/local_server.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using namespace redcoord;
using redcoord::testing::local_server;

namespace {

using clock_type = std::chrono::steady_clock;

struct small_pools {
    std::vector<std::unique_ptr<local_server>> servers;
    std::vector<std::unique_ptr<connection_pool>> pools;
    std::vector<connection_pool*> nodes;
    small_pools(std::size_t n, pool_options po) : servers(redcoord::testing::start_masters(n)) {
        for (auto& s : servers) {
            pools.push_back(std::make_unique<connection_pool>(s->endpoint(), po));
            nodes.push_back(pools.back().get());
            (void)pools.back()->command({"PING"});  // connected up front
        }
    }
    // Lock keys left on any node.
    long long keys_left(const std::vector<std::string>& keys) {
        long long n = 0;
        for (auto& s : servers)
            for (const auto& k : keys) n += s->command({"EXISTS", k}).integer();
        return n;
    }
};

// Runs `body(i)` on `threads` threads, each looping until `run_for` passed; collects what
// went wrong (an exception or a failed expectation) and counts loops.
struct stampede {
    std::mutex mu;
    std::vector<std::string> failures;
    std::atomic<long> loops{0};

    void fail(std::string why) {
        std::lock_guard l(mu);
        failures.push_back(std::move(why));
    }
    void run(int threads, clock_type::duration run_for,
             const std::function<void(int, stampede&)>& setup_and_loop) {
        std::vector<std::thread> ts;
        for (int i = 0; i < threads; ++i)
            ts.emplace_back([&, i] {
                try {
                    setup_and_loop(i, *this);
                } catch (const std::exception& e) {
                    fail(e.what());
                }
            });
        (void)run_for;
        for (auto& t : ts) t.join();
    }
    std::string report() {
        std::string s = std::to_string(failures.size()) + " failures";
        for (std::size_t i = 0; i < failures.size() && i < 5; ++i) s += "\n  " + failures[i];
        return s;
    }
};

constexpr int threads = 50;
// Lock TTLs of 60 s: a release resends to unsent nodes for up to a quarter of it (15 s), so
// even a machine at load 150 decides every release. Node timeouts long enough that a loaded
// machine's round trip is not a timeout (a sent release whose reply
// is late is a true outcome_unknown): these tests are about the pools, which stay full.

// What each node did in the object's last round, for a failure's message.
std::string outcomes(const redlock& l) {
    static const char* names[] = {"yes",         "no",         "error", "timeout",
                                  "unreachable", "not_waited", "busy",  "connecting"};
    std::string s;
    for (const auto& o : l.last_outcomes())
        s += std::string(" ") + names[static_cast<int>(o.state)] +
             (o.detail.empty() ? "" : "(" + o.detail + ")");
    return s;
}

// Acquires with `wait` and releases, again and again until `until`: every acquire must get the
// lock and every release must be decided (true); anything else is a failure of the stampede.
void acquire_release_until(redlock& l, std::chrono::milliseconds wait, clock_type::time_point until,
                           stampede& st, const std::string& not_acquired) {
    while (clock_type::now() < until) {
        try {
            if (!l.acquire(wait)) {
                st.fail(not_acquired);
                continue;
            }
            if (!l.release()) st.fail("release() of a held lock: false");
            ++st.loops;
        } catch (const std::exception& e) {
            st.fail(e.what() + outcomes(l));
        }
    }
}

}  // namespace

// The stampede of bench/runtime in small: each release must be decided (true), never
// outcome_unknown because nodes were left unsent by a busy pool; each acquire(wait) on a free
// resource must get it, never quorum_unreachable for busy or connecting rounds.
TEST(BusyPool, RedlockReleaseResendsToNodesItsPoolsLeftUnsent) {
    small_pools f(5, {.max_size = 1, .max_idle = 1});
    stampede s;
    const auto until = clock_type::now() + 3s;
    s.run(threads, 3s, [&](int i, stampede& st) {
        redlock l(f.nodes, "busy:r" + std::to_string(i),
                  {.timing = {.ttl = 60s}, .node_timeout = 500ms});
        acquire_release_until(l, 20s, until, st, "acquire(20s) of a free resource: not acquired");
    });
    EXPECT_TRUE(s.failures.empty()) << s.report();
    EXPECT_GT(s.loops.load(), threads);
}

// Ten lock objects per resource over the same tiny pools: every acquire(wait) ends holding
// the lock (the holders release within milliseconds), whatever the pools did meanwhile.
TEST(BusyPool, RedlockWaitOutlastsBusyPools) {
    small_pools f(5, {.max_size = 2, .max_idle = 2});
    stampede s;
    const auto until = clock_type::now() + 3s;
    s.run(threads, 3s, [&](int i, stampede& st) {
        redlock l(f.nodes, "busy:w" + std::to_string(i % 5),
                  {.timing = {.ttl = 60s}, .node_timeout = 500ms});
        acquire_release_until(l, 30s, until, st, "acquire(30s): not acquired");
    });
    EXPECT_TRUE(s.failures.empty()) << s.report();
    EXPECT_GT(s.loops.load(), 5);
}

// unlock() is fire-and-forget, but a busy pool must not drop it: every key is gone shortly
// after the last unlock (a dropped one would stay for its TTL). A gentler stampede than above
// (20 objects, two connections per node): a short wait must be able to get a connection. With
// 50 objects on one connection a resend can lose every race for a pooled connection for longer
// than its window (the pool is not fair, and a fan-out holds its leases while it waits for the
// next pool), and then the key stays until its TTL.
// It failed in about 1 of 7 runs (disabled as an open defect until issue 16) and in 3 of 5
// once unlock() could hold releases back: a key left with the token of the last holding. The
// cause was not the pool's fairness but ordering: a round decided at a majority leaves slow
// nodes in flight, and the release, sent on another pooled connection, could reach such a
// node before the acquire did (seen: states yes,yes,yes,in-flight,in-flight at the grant, the
// release sent to all five). Releases now leave a tombstone that the late acquire honours.
// With defer_release it also failed once in three runs of the landed tree (issue 33): a
// re-lock round (T2 renewing T1) left a node in flight, the next one (T3 renewing T2) overtook
// it there and found T1, and the late T2 attempt then brought back a holding whose release had
// already happened. A re-lock now leaves a tombstone where it does not find its previous
// holding (Redlock.ALateReLockOfAReleasedHoldingTakesNothing shows it on one node).
class BusyPoolRelease : public ::testing::TestWithParam<bool> {};

TEST_P(BusyPoolRelease, RedlockUnlockWaitsBrieflyForABusyPool) {
    constexpr int users = 20;
    const bool defer = GetParam();
    small_pools f(5, {.max_size = 2, .max_idle = 2});
    stampede s;
    std::vector<std::string> keys(users), last_token(users);
    const auto until = clock_type::now() + 2s;
    s.run(users, 2s, [&](int i, stampede& st) {
        redlock l(f.nodes, "busy:u" + std::to_string(i),
                  {.timing = {.ttl = 60s}, .node_timeout = 500ms, .defer_release = defer});
        keys[static_cast<std::size_t>(i)] = l.key();
        while (clock_type::now() < until) {
            if (!l.try_lock_for(20s)) {
                st.fail("try_lock_for(20s) of a resource only this object uses: not acquired:" +
                        outcomes(l));
                continue;
            }
            last_token[static_cast<std::size_t>(i)] = l.current()->token;
            l.unlock();
            ++st.loops;
        }
    });
    EXPECT_TRUE(s.failures.empty()) << s.report();
    // The last detached releases land within a round trip or two.
    long long left = 0;
    for (int k = 0; k < 50 && (left = f.keys_left(keys)) > 0; ++k)
        std::this_thread::sleep_for(20ms);
    EXPECT_EQ(left, 0) << "lock keys left behind by unlock() calls their busy pools dropped";
    for (std::size_t k = 0; k < keys.size(); ++k)
        for (std::size_t n = 0; n < f.servers.size(); ++n) {
            auto v = f.servers[n]->command({"GET", keys[k]});
            if (!v.is_nil())
                ADD_FAILURE() << keys[k] << " on node " << n << ": " << v.text().substr(0, 8)
                              << (v.text().rfind(last_token[k], 0) == 0 ? " (its last unlock)"
                                                                        : " (an earlier token)");
        }
}

INSTANTIATE_TEST_SUITE_P(BusyPool, BusyPoolRelease, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& i) {
                             return i.param ? "DeferRelease" : "Plain";
                         });

// The single-instance lock under the same stampede: one pool of one connection whose borrow
// gives up after 5 ms. pool_exhausted must escape neither acquire(wait) nor release().
TEST(BusyPool, SingleLockNeitherWaitNorReleaseFailsOnABusyPool) {
    small_pools f(1, {.max_size = 1, .max_idle = 1, .borrow_timeout = 5ms});
    stampede s;
    const auto until = clock_type::now() + 3s;
    s.run(threads, 3s, [&](int i, stampede& st) {
        distributed_lock l(*f.nodes[0], "busy:s" + std::to_string(i), {.timing = {.ttl = 60s}});
        while (clock_type::now() < until) {
            try {
                if (!l.acquire(20s)) {
                    st.fail("acquire(20s) of a free resource: not acquired");
                    continue;
                }
                if (!l.release()) st.fail("release() of a held lock: false");
                ++st.loops;
            } catch (const std::exception& e) {
                st.fail(e.what());
            }
        }
    });
    EXPECT_TRUE(s.failures.empty()) << s.report();
    EXPECT_GT(s.loops.load(), threads);
}
