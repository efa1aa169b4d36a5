// inspect_lock() against live locks: what it shows must be what the lock objects hold.

#include <redcoord/core/errors.hpp>
#include <redcoord/lock/distributed_lock.hpp>
#include <redcoord/lock/fair_lock.hpp>
#include <redcoord/lock/inspect.hpp>
#include <redcoord/lock/redlock.hpp>
#include <redcoord/testing/local_server.hpp>
#include <redcoord/testing/wait.hpp>

#include <gtest/gtest.h>

#include <future>
#include <memory>

using namespace std::chrono_literals;
using namespace redcoord;
using redcoord::testing::local_server;

TEST(InspectLock, FreeResourceShowsNothingHeld) {
    local_server s;
    connection_pool pool(s.endpoint());
    const auto v = inspect_lock(pool, "nobody");
    EXPECT_FALSE(v.held);
    EXPECT_TRUE(v.holder.empty());
    EXPECT_FALSE(v.ttl_left);
    EXPECT_FALSE(v.fencing_counter);
    EXPECT_FALSE(v.turn_owner);
    EXPECT_TRUE(v.fair_queue.empty());
}

TEST(InspectLock, HeldLockShowsFingerprintTtlAndFencingCounter) {
    local_server s;
    connection_pool pool(s.endpoint());
    distributed_lock l(pool, "jobs", {.timing = {.ttl = 10s}});
    auto got = l.acquire(1s);
    ASSERT_TRUE(got);
    const auto v = inspect_lock(pool, "jobs");
    EXPECT_TRUE(v.held);
    EXPECT_EQ(v.holder, lock_holder_fingerprint(got->token));
    EXPECT_EQ(v.holder.size(), 16u);
    EXPECT_EQ(v.holder.find(got->token.substr(0, 8)), std::string::npos);  // never the token itself
    ASSERT_TRUE(v.ttl_left);
    EXPECT_GT(*v.ttl_left, 8s);
    EXPECT_LE(*v.ttl_left, 10s);
    ASSERT_TRUE(v.fencing_counter);
    EXPECT_EQ(*v.fencing_counter, got->fencing_token);
    EXPECT_FALSE(v.release_notice);

    ASSERT_TRUE(l.release());
    const auto after = inspect_lock(pool, "jobs");
    EXPECT_FALSE(after.held);
    ASSERT_TRUE(after.fencing_counter);  // the counter outlives the holding
    EXPECT_EQ(*after.fencing_counter, got->fencing_token);
}

TEST(InspectLock, WaitingContenderShowsTheReleaseNotice) {
    local_server s;
    connection_pool pool(s.endpoint());
    distributed_lock holder(pool, "contended", {.timing = {.ttl = 10s}});
    ASSERT_TRUE(holder.try_lock());
    distributed_lock waiter(pool, "contended", {.timing = {.ttl = 10s}});
    auto waiting = std::async(std::launch::async, [&] { return waiter.acquire(5s).has_value(); });
    EXPECT_TRUE(redcoord::testing::eventually(
        [&] { return inspect_lock(pool, "contended").release_notice; }, 3s));
    const auto v = inspect_lock(pool, "contended");
    EXPECT_TRUE(v.held);
    holder.unlock();
    EXPECT_TRUE(waiting.get());
    // The new holder is the waiter: another fingerprint, a higher fencing counter.
    const auto w = inspect_lock(pool, "contended");
    EXPECT_TRUE(w.held);
    EXPECT_NE(w.holder, v.holder);
    EXPECT_GT(*w.fencing_counter, *v.fencing_counter);
    waiter.unlock();
}

TEST(InspectLock, FairLockQueueListsWaitersInOrder) {
    local_server s;
    connection_pool pool(s.endpoint());
    fair_lock holder(pool, "fifo", {.timing = {.ttl = 10s}});
    ASSERT_TRUE(holder.try_lock());
    std::vector<std::unique_ptr<fair_lock>> waiters;
    std::vector<std::future<bool>> waits;
    for (int i = 0; i < 3; ++i) {
        waiters.push_back(
            std::make_unique<fair_lock>(pool, "fifo", fair_lock_options{.timing = {.ttl = 10s}}));
        auto* w = waiters.back().get();
        waits.push_back(std::async(std::launch::async, [w] {
            if (!w->acquire(10s)) return false;
            w->unlock();
            return true;
        }));
        // One at a time, so the queue's order is known.
        const std::size_t want = static_cast<std::size_t>(i) + 1;
        ASSERT_TRUE(redcoord::testing::eventually(
            [&] { return inspect_lock(pool, "fifo").fair_queue.size() == want; }, 3s));
    }
    const auto v = inspect_lock(pool, "fifo");
    EXPECT_TRUE(v.held);
    EXPECT_EQ(v.fair_queue.size(), 3u);
    holder.unlock();
    for (auto& w : waits) EXPECT_TRUE(w.get());
    EXPECT_TRUE(redcoord::testing::eventually(
        [&] { return inspect_lock(pool, "fifo").fair_queue.empty(); }, 3s));
}

TEST(InspectLock, RedlockShowsTheHolderOnEveryMaster) {
    local_server a, b, c;
    connection_pool pa(a.endpoint()), pb(b.endpoint()), pc(c.endpoint());
    redlock l({&pa, &pb, &pc}, "across", {.timing = {.ttl = 10s}});
    auto got = l.acquire(1s);
    ASSERT_TRUE(got);
    std::size_t holding = 0;
    for (auto* p : {&pa, &pb, &pc}) {
        const auto v = inspect_lock(*p, "across");
        if (v.held && v.holder == lock_holder_fingerprint(got->token)) ++holding;
    }
    EXPECT_GE(holding, 2u);  // a quorum, normally all three
    l.unlock();
}

TEST(InspectLock, BadNamesAndForeignPrefixes) {
    local_server s;
    connection_pool pool(s.endpoint());
    EXPECT_THROW((void)inspect_lock(pool, ""), invalid_argument);
    distributed_lock l(pool, "p", {.prefix = "other:"});
    ASSERT_TRUE(l.try_lock());
    EXPECT_FALSE(inspect_lock(pool, "p").held);  // another prefix: other keys
    EXPECT_TRUE(inspect_lock(pool, "p", "other:").held);
    l.unlock();
}

TEST(InspectLock, ACorruptFencingCounterIsAProtocolError) {
    local_server s;
    connection_pool pool(s.endpoint());
    s.command({"SET", "redcoord:lock:{bad}:fence", "not-a-number"});
    EXPECT_THROW((void)inspect_lock(pool, "bad"), protocol_error);
}

// Holder labels (issue 38): inspect shows who holds a lock, for every lock kind, read from the
// holding's token; the default is this process's <host>:<pid>, an empty label shows none.
TEST(InspectLock, ShowsTheHoldersLabelForEveryLockKind) {
    local_server s1, s2, s3;
    connection_pool p1(s1.endpoint()), p2(s2.endpoint()), p3(s3.endpoint());
    {
        distributed_lock l(p1, "labelled", {.timing = {.ttl = 10s}, .label = "billing-worker-7"});
        auto got = l.acquire(1s);
        ASSERT_TRUE(got);
        const auto v = inspect_lock(p1, "labelled");
        EXPECT_EQ(v.label, "billing-worker-7");
        EXPECT_EQ(v.holder, lock_holder_fingerprint(got->token));
        EXPECT_EQ(v.label.find(got->token.substr(0, 8)), std::string::npos);
    }
    {
        distributed_lock l(p1, "by-default", {.timing = {.ttl = 10s}});
        ASSERT_TRUE(l.acquire(1s));
        EXPECT_EQ(inspect_lock(p1, "by-default").label, default_holder_label());
    }
    {
        distributed_lock l(p1, "unlabelled", {.timing = {.ttl = 10s}, .label = ""});
        ASSERT_TRUE(l.acquire(1s));
        const auto v = inspect_lock(p1, "unlabelled");
        EXPECT_TRUE(v.held);
        EXPECT_EQ(v.label, "");
    }
    {
        fair_lock l(p1, "fair-labelled", {.timing = {.ttl = 10s}, .label = "fair one"});
        ASSERT_TRUE(l.acquire(1s));
        EXPECT_EQ(inspect_lock(p1, "fair-labelled").label, "fair one");
    }
    {
        redlock l({&p1, &p2, &p3}, "red-labelled", {.timing = {.ttl = 10s}, .label = "red one"});
        ASSERT_TRUE(l.acquire(1s));
        for (auto* p : {&p1, &p2, &p3})
            EXPECT_EQ(inspect_lock(*p, "red-labelled").label, "red one");
    }
}

TEST(InspectLock, ABadLabelIsATypedErrorAndNothingIsWritten) {
    local_server s;
    connection_pool pool(s.endpoint());
    EXPECT_THROW(distributed_lock(pool, "x", {.label = std::string("a\nb")}), invalid_argument);
    EXPECT_THROW(fair_lock(pool, "x", {.label = std::string(max_holder_label + 1, 'l')}),
                 invalid_argument);
    EXPECT_EQ(s.command({"DBSIZE"}).integer(), 0);
}

// A holder of another client (SET NX PX with its own value) shows no label.
TEST(InspectLock, AForeignHoldersValueIsNotTakenForALabel) {
    local_server s;
    connection_pool pool(s.endpoint());
    (void)s.command({"SET", "redcoord:lock:{foreign}", "0123456789abcdef0123456789abcdef01234567/x",
                     "PX", "10000"});
    const auto v = inspect_lock(pool, "foreign");
    EXPECT_TRUE(v.held);
    EXPECT_EQ(v.label, "x");  // made the same way: indistinguishable, and only informative
    (void)s.command({"SET", "redcoord:lock:{foreign}", "someone else's token", "PX", "10000"});
    EXPECT_EQ(inspect_lock(pool, "foreign").label, "");
}
