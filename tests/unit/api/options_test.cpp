// Issue 39 item 3: one set of option groups. The lock timing and the replication settings are
// one type each, with one default, in every primitive that has them; their checks name the
// field the same way everywhere; the option checks are not declared in public headers.

#include <redcoord/core/errors.hpp>
#include <redcoord/core/options.hpp>
#include <redcoord/election/election_options.hpp>
#include <redcoord/limit/rw_lock.hpp>
#include <redcoord/limit/semaphore.hpp>
#include <redcoord/lock/distributed_lock.hpp>
#include <redcoord/lock/fair_lock.hpp>
#include <redcoord/lock/redlock.hpp>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

using namespace std::chrono_literals;
using namespace redcoord;

namespace {

void expect_default_timing(const lock_timing& t, const char* owner) {
    const lock_timing d;
    EXPECT_EQ(t.ttl, d.ttl) << owner;
    EXPECT_DOUBLE_EQ(t.drift_factor, d.drift_factor) << owner;
    EXPECT_EQ(t.max_retry_interval, d.max_retry_interval) << owner;
    EXPECT_EQ(t.retry_jitter, d.retry_jitter) << owner;
    EXPECT_EQ(t.wake_jitter, d.wake_jitter) << owner;
}

void expect_default_replication(const replication_options& r, const char* owner) {
    EXPECT_EQ(r.replicas, 0u) << owner;
    EXPECT_EQ(r.timeout, 100ms) << owner;
}

// The message of the invalid_argument `make` throws.
template <class F>
std::string refusal(F make) {
    try {
        make();
    } catch (const invalid_argument& e) {
        return e.what();
    }
    return "(nothing thrown)";
}

}  // namespace

TEST(OptionTypes, I39_OneLockTimingWithOneDefaultInEveryLock) {
    // The retry jitter used to be 5 ms in lock_options and 10 ms in redlock_options.
    EXPECT_EQ(lock_timing{}.retry_jitter, 10ms);
    EXPECT_EQ(lock_timing{}.ttl, 30s);
    EXPECT_DOUBLE_EQ(lock_timing{}.drift_factor, 0.01);
    expect_default_timing(lock_options{}.timing, "lock_options");
    expect_default_timing(redlock_options{}.timing, "redlock_options");
    expect_default_timing(fair_lock_options{}.timing, "fair_lock_options");
    expect_default_timing(semaphore_options{}.timing, "semaphore_options");
    expect_default_timing(rw_lock_options{}.timing, "rw_lock_options");
}

TEST(OptionTypes, I39_OneReplicationOptionsWithOneDefault) {
    expect_default_replication(lock_options{}.replication, "lock_options");
    expect_default_replication(fair_lock_options{}.replication, "fair_lock_options");
    expect_default_replication(semaphore_options{}.replication, "semaphore_options");
    expect_default_replication(election_options{}.replication, "election_options");
}

TEST(OptionTypes, I39_DesignatedInitializersReadAsTheGroups) {
    const lock_options o{.timing = {.ttl = 5s, .retry_jitter = 0ms},
                         .replication = {.replicas = 1, .timeout = 50ms}};
    EXPECT_EQ(o.timing.ttl, 5s);
    EXPECT_EQ(o.timing.retry_jitter, 0ms);
    EXPECT_EQ(o.timing.max_retry_interval, 500ms);
    EXPECT_EQ(o.replication.replicas, 1u);
}

TEST(OptionTypes, I39_EveryPartNamesTheSharedFieldTheSameWay) {
    connection_pool pool(endpoint{});
    const auto names = [](auto make, const std::string& field) {
        const auto what = refusal(make);
        EXPECT_NE(what.find(field), std::string::npos) << what;
    };
    const lock_timing bad_ttl{.ttl = 0ms};
    names([&] { distributed_lock l(pool, "r", {.timing = bad_ttl}); }, "lock_options::timing.ttl");
    names([&] { redlock l({&pool}, "r", {.timing = bad_ttl}); }, "redlock_options::timing.ttl");
    names([&] { fair_lock l(pool, "r", {.timing = bad_ttl}); }, "fair_lock_options::timing.ttl");
    names([&] { semaphore s(pool, "r", {.timing = bad_ttl}); }, "semaphore_options::timing.ttl");
    names([&] { rw_lock l(pool, "r", {.timing = bad_ttl}); }, "rw_lock_options::timing.ttl");
    const lock_timing bad_drift{.drift_factor = 0.5};
    names([&] { semaphore s(pool, "r", {.timing = bad_drift}); },
          "semaphore_options::timing.drift_factor");
    const replication_options bad_wait{.replicas = 1, .timeout = 0ms};
    names([&] { distributed_lock l(pool, "r", {.replication = bad_wait}); },
          "lock_options::replication.timeout");
    names([&] { semaphore s(pool, "r", {.replication = bad_wait}); },
          "semaphore_options::replication.timeout");
    names([&] { (void)resolve("e", {.replication = bad_wait}); }, "replication.timeout");
}

// The option checks are implementation: no public header declares one.
TEST(OptionTypes, I39_NoOptionCheckInAPublicHeader) {
    namespace fs = std::filesystem;
    int headers = 0;
    for (const char* part : {"core", "lock", "limit", "election"}) {
        const fs::path dir = fs::path(REDCOORD_SOURCE_DIR) / part / "include";
        for (const auto& f : fs::recursive_directory_iterator(dir)) {
            if (f.path().extension() != ".hpp") continue;
            ++headers;
            std::ifstream in(f.path());
            std::stringstream text;
            text << in.rdbuf();
            EXPECT_EQ(text.str().find("void validate("), std::string::npos) << f.path();
        }
    }
    EXPECT_GT(headers, 20);
}
