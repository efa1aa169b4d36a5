// `redcoord inspect semaphore|rwlock|limit`: holders with their TTLs and fingerprints (never
// tokens), waiters, permits and units left, in text and JSON.
#include "cli_harness.hpp"

#include <redcoord/core/detail/sha1.hpp>
#include <redcoord/core/holder_label.hpp>
#include <redcoord/core/pool.hpp>
#include <redcoord/limit/rate_limiter.hpp>
#include <redcoord/limit/rw_lock.hpp>
#include <redcoord/limit/semaphore.hpp>
#include <redcoord/limit/sliding_window_limiter.hpp>

#include <future>

using namespace cli_test;

namespace {

struct InspectLimitCli : ::testing::Test {
    redcoord::testing::local_server server;
    temp_dir dir;
    std::string url = server.url();
    redcoord::connection_pool pool{server.endpoint()};

    result inspect(std::vector<std::string> args, bool json = false) {
        args.insert(args.begin(), "inspect");
        if (json) args.insert(args.begin(), "--json");
        args.insert(args.begin(), {"--redis", url});
        return run(dir, args);
    }
};

std::string fingerprint(const std::string& token) {
    return redcoord::detail::sha1_hex(token).substr(0, 16);
}

}  // namespace

TEST_F(InspectLimitCli, SemaphoreShowsHoldersWaitersAndPermitsLeft) {
    redcoord::semaphore sem(pool, "slots", {.permits = 3, .timing = {.ttl = 30s}});
    auto two = sem.try_acquire(2);
    ASSERT_TRUE(two);
    const auto t = inspect({"semaphore", "slots", "--permits", "3"});
    EXPECT_EQ(t.status, code::ok) << t.output;
    EXPECT_TRUE(contains(t.output, "semaphore 'slots': 2 held of 3, 1 left, 0 waiting"))
        << t.output;
    // The holder is its fingerprint and its label (this process's <host>:<pid> by default).
    EXPECT_TRUE(contains(
        t.output, fingerprint(two->token()) + " " + redcoord::default_holder_label() + " x2 (ttl "))
        << t.output;
    EXPECT_FALSE(contains(t.output, two->token())) << t.output;  // never the token itself
    // A waiter for two permits queues.
    auto waiter = std::async(std::launch::async, [&] { return sem.try_acquire_for(2, 20s); });
    ASSERT_TRUE(eventually([&] {
        return contains(inspect({"semaphore", "slots"}).output, "1 waiting");
    }));
    const auto j = inspect({"semaphore", "slots"}, true);
    // Without --permits, N as the latest acquisition stored it.
    EXPECT_TRUE(
        contains(j.output, R"("kind":"semaphore","name":"slots","held":2,"permits":3,"left":1,)"))
        << j.output;
    EXPECT_TRUE(contains(j.output, R"("holders":[{"holder":")" + fingerprint(two->token()) +
                                       R"(","label":")" + redcoord::default_holder_label() +
                                       R"(","count":2,"ttl_ms":)"))
        << j.output;
    EXPECT_TRUE(contains(j.output, R"("waiters":1)")) << j.output;
    EXPECT_FALSE(contains(j.output, R"("fencing_counter":null)")) << j.output;
    two->release();
    EXPECT_TRUE(waiter.get());
}

TEST_F(InspectLimitCli, RwlockShowsTheWriterReadersAndWaitingWriters) {
    redcoord::rw_lock readers(pool, "doc", {.timing = {.ttl = 30s}}),
        writer(pool, "doc", {.timing = {.ttl = 30s}});
    ASSERT_TRUE(readers.try_lock_shared());
    ASSERT_TRUE(readers.try_lock_shared());
    auto w = std::async(std::launch::async, [&] { return writer.try_lock_for(20s); });
    ASSERT_TRUE(eventually([&] {
        return contains(inspect({"rwlock", "doc"}).output,
                        "rwlock 'doc': 2 readers, 1 writers and 0 readers waiting");
    }));
    const auto j = inspect({"rwlock", "doc"}, true);
    EXPECT_TRUE(contains(j.output, R"("kind":"rwlock","name":"doc","writer":null,"readers":[{)"))
        << j.output;
    EXPECT_TRUE(contains(j.output, R"("waiting_writers":1,"waiting_readers":0)")) << j.output;
    readers.unlock_shared();
    readers.unlock_shared();
    ASSERT_TRUE(w.get());
    const auto t = inspect({"rwlock", "doc"});
    EXPECT_TRUE(contains(t.output, "rwlock 'doc': held by a writer")) << t.output;
    EXPECT_TRUE(contains(t.output, "  writer            ")) << t.output;
    const auto held = inspect({"rwlock", "doc"}, true);
    EXPECT_TRUE(contains(held.output, R"("writer":{"holder":")")) << held.output;
    writer.unlock();
    const auto freed = inspect({"rwlock", "doc"});
    EXPECT_TRUE(contains(freed.output, "rwlock 'doc': free")) << freed.output;
}

TEST_F(InspectLimitCli, LimitShowsUnitsLeftAndTimeUntilFull) {
    const auto idle = inspect({"limit", "api", "--rate", "1/m", "--burst", "5"});
    EXPECT_EQ(idle.status, code::ok) << idle.output;
    EXPECT_TRUE(contains(idle.output, "limit 'api': 5 of 5 left (idle)")) << idle.output;
    redcoord::rate_limiter lim(pool, "api", {.rate = 1, .period = 60s, .burst = 5});
    ASSERT_TRUE(lim.try_acquire(2).allowed);
    const auto t = inspect({"limit", "api", "--rate", "1/m", "--burst", "5"});
    EXPECT_TRUE(contains(t.output, "limit 'api': 3 of 5 left, full again in ")) << t.output;
    const auto j = inspect({"limit", "api", "--rate", "1/m", "--burst", "5"}, true);
    EXPECT_TRUE(contains(j.output, R"("kind":"limit","name":"api","burst":5,"remaining":3,)"))
        << j.output;
    EXPECT_TRUE(contains(j.output, R"("idle":false)")) << j.output;
    // Without --rate, the rate and burst the latest admission stored with the state.
    const auto stored = inspect({"limit", "api"});
    EXPECT_TRUE(contains(stored.output, "limit 'api': 3 of 5 left, full again in "))
        << stored.output;
    const auto unknown = inspect({"limit", "never-used"}, true);
    EXPECT_TRUE(contains(unknown.output, R"("burst":null,"remaining":null,)")) << unknown.output;
    EXPECT_EQ(inspect({"limit", "api", "--rate", "fast"}).status, code::usage);
    EXPECT_EQ(inspect({"semaphore", "a}b"}).status, code::usage);
}

TEST_F(InspectLimitCli, WindowShowsUnitsUsedAndLeftWithTheStoredLimitAndWindow) {
    const auto idle = inspect({"limit", "logins", "--window"});
    EXPECT_EQ(idle.status, code::ok) << idle.output;
    EXPECT_TRUE(contains(idle.output, "window 'logins': 0 used (idle)")) << idle.output;
    redcoord::sliding_window_limiter lim(pool, "logins", {.limit = 10, .window = 60s});
    ASSERT_TRUE(lim.try_acquire(4).allowed);
    const auto t = inspect({"limit", "logins", "--window"});
    EXPECT_TRUE(contains(t.output, "window 'logins': 4 used of 10 per 1m, 6 left, empty again in "))
        << t.output;
    const auto j = inspect({"limit", "logins", "--window"}, true);
    EXPECT_TRUE(contains(j.output, R"("kind":"window","name":"logins","used":4,"limit":10,)"
                                   R"("remaining":6,"window_ms":60000,)"))
        << j.output;
    EXPECT_EQ(inspect({"limit", "logins", "--window", "--rate", "1/s"}).status, code::usage);
}
