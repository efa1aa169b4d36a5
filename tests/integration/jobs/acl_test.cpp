// The jobs part as a least-privilege ACL user: a user created from exactly jobs_acl_needs()
// adds, inspects, cancels, retries, removes and cleans jobs, runs them with a job_worker
// (progress, failures and retries, heartbeats, batched claims, rate and concurrency limits),
// hears their events and lets a job_scheduler add repeat ticks; a user missing one command the
// jobs part itself needs gets permission_error naming it, thrown or kept in last_error().

#include <redcoord/core/errors.hpp>
#include <redcoord/election/acl.hpp>
#include <redcoord/jobs/acl.hpp>
#include <redcoord/jobs/inspect.hpp>
#include <redcoord/jobs/job_events.hpp>
#include <redcoord/jobs/job_queue.hpp>
#include <redcoord/jobs/job_scheduler.hpp>
#include <redcoord/jobs/job_worker.hpp>
#include <redcoord/signaling/signal_hub.hpp>
#include <redcoord/testing/local_server.hpp>
#include <redcoord/testing/wait.hpp>

#include "../acl_support.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <stdexcept>

using namespace std::chrono_literals;
using namespace redcoord;
using redcoord::testing::eventually;
using redcoord::testing::expect_refused;
using redcoord::testing::local_server;
using redcoord::testing::make_acl_user;
using redcoord::testing::without_command;

namespace {

void expect_true(bool ok, const char* what) {
    if (!ok) throw std::runtime_error(what);
}

// Waits for `done`, rethrowing what the worker or the scheduler keeps in last_error().
template <class Done>
void wait_for(Done done, const job_worker* w, const job_scheduler* s, const char* what) {
    const auto until = std::chrono::steady_clock::now() + 10s;
    while (std::chrono::steady_clock::now() < until) {
        if (w && w->last_error()) std::rethrow_exception(w->last_error());
        if (s && s->last_error()) std::rethrow_exception(s->last_error());
        if (done()) return;
        std::this_thread::sleep_for(5ms);
    }
    throw std::runtime_error(what);
}

void producer_scenario(connection_pool& pool, const std::string& prefix, const std::string& tag) {
    job_queue_options o;
    o.prefix = prefix;
    job_queue q(pool, "ops" + tag, o);
    (void)q.add("a", {.id = "a"});
    (void)q.add_batch({{"b", {.id = "b"}}, {"c", {.id = "c", .delay = 1h}}});
    expect_true(q.get("a")->state == job_state::waiting, "get");
    expect_true(q.list(job_state::waiting).size() == 2, "list");
    expect_true(q.counts().delayed == 1, "counts");
    expect_true(q.cancel("a") == job_state::waiting, "cancel");
    expect_true(q.retry("a"), "retry");
    expect_true(q.remove("c") == job_state::delayed, "remove");
    expect_true(q.cancel("b") == job_state::waiting, "cancel b");
    expect_true(q.clean(job_state::failed, 0ms) == 1, "clean");
    const auto seen = inspect_jobs(pool, "ops" + tag, prefix);
    expect_true(seen.counts.waiting == 1, "inspect");
    repeat_options r;
    r.every = 1h;
    q.repeat("hourly", "h", r);
    expect_true(q.remove_repeat("hourly"), "remove_repeat");
    // Flows: a parent and its child in one add, their sets read back, a cancel that cascades.
    flow_job root{"p", {.id = "p"}, {}};
    root.children.push_back({"k", {.id = "k"}, {}});
    expect_true(q.add_flow(root).back().state == job_state::waiting_children, "add_flow");
    expect_true(q.get("k")->dependents.size() == 1, "dependents");
    expect_true(q.cancel("p") == job_state::waiting_children, "cancel flow");
    expect_true(q.get("k")->state == job_state::failed, "cancel cascade");
    // Groups, dedupe windows and debounce (format 2): a limit, grouped adds, a cancel out of a
    // group's index, the per-group counts, a debounce and a replaced finished job.
    expect_true(q.set_group_limit("t1", 2) == 0, "set_group_limit");
    job_options g;
    g.group = "t1";
    (void)q.add("g1", g);
    g.id = "g2";
    (void)q.add("g2", g);
    expect_true(q.cancel("g2") == job_state::waiting, "cancel grouped");
    expect_true(q.groups().size() == 1 && q.groups()[0].waiting == 1, "groups");
    job_options d;
    d.id = "deb";
    d.debounce = 1h;
    d.dedupe_for = 1ms;
    (void)q.add("d1", d);
    expect_true(q.add("d2", d).debounced, "debounce");
    expect_true(q.cancel("deb") == job_state::delayed, "cancel debounced");
    std::this_thread::sleep_for(5ms);
    d.debounce = 0ms;
    expect_true(q.add("d3", d).added, "dedupe window passed");
}

void worker_scenario(connection_pool& pool, const std::string& prefix, const std::string& tag) {
    job_queue_options o;
    o.prefix = prefix;
    job_queue q(pool, "work" + tag, o);
    signal_hub hub(pool);
    job_events events(q, hub);
    std::atomic<int> heard{0};
    auto slot = events.on([&](const job_event&) { ++heard; });
    for (int i = 0; i < 12; ++i)
        (void)q.add("job", {.id = "j" + std::to_string(i), .backoff = backoff_policy::fixed(0ms)});
    (void)q.add("slow", {.id = "slow"});
    // A flow's parent, released by its child's completion (in the settle script).
    (void)q.add("parent", {.id = "fp", .depends_on = {"j2"}});
    // Grouped jobs: claimed in turns, their group's active count kept by claim and settle.
    (void)q.set_group_limit("w1", 1);
    for (int i = 0; i < 2; ++i)
        (void)q.add("grouped", {.id = "g" + std::to_string(i), .group = "w1"});
    repeat_options r;
    r.every = 100ms;
    q.repeat("tick", "t", r);
    std::atomic<int> done{0};
    job_worker w(q,
                 [&](job_context& j) -> std::string {
                     if (j.id() == "j0" && j.attempt() == 1) throw std::runtime_error("once");
                     if (j.id() == "j1") expect_true(j.report_progress("half"), "progress");
                     // Held past a heartbeat (every lease / 3).
                     if (j.id() == "slow") std::this_thread::sleep_for(250ms);
                     ++done;
                     return "ok";
                 },
                 {.threads = 2, .lease = 300ms, .poll_timeout = 50ms, .prefetch = 4});
    job_scheduler s(q, {.term = 900ms});
    w.start();
    s.start();
    wait_for([&] { return done.load() >= 16 && s.ticks_added() > 0; }, &w, &s, "jobs and ticks");
    wait_for([&] { return heard.load() > 0; }, &w, &s, "events");
    s.stop();
    w.stop();
    if (w.last_error()) std::rethrow_exception(w.last_error());

    // A rate limit (its window's PTTL) and a concurrency limit (ZCARD in the claim).
    job_queue_options lo = o;
    lo.rate_limit = 1;
    lo.rate_interval = 10s;
    lo.concurrency = 1;
    job_queue limited(pool, "limited" + tag, lo);
    (void)limited.add("x");
    (void)limited.add("y");
    std::atomic<int> ran{0};
    job_worker lw(limited, [&](job_context&) {
        ++ran;
        return std::string();
    });
    lw.start();
    wait_for([&] { return ran.load() == 1; }, &lw, nullptr, "limited");
    std::this_thread::sleep_for(100ms);
    lw.stop();
    if (lw.last_error()) std::rethrow_exception(lw.last_error());
    expect_true(ran.load() == 1, "rate limit");
}

}  // namespace

TEST(JobsAcl, EverythingRunsAsUserWithExactlyTheJobsRules) {
    local_server server;
    for (const std::string prefix : {std::string(default_prefix), std::string("app1:")}) {
        SCOPED_TRACE(prefix);
        connection_pool pool(
            make_acl_user(server, "jobs_" + std::to_string(prefix.size()), jobs_acl_needs(prefix)));
        producer_scenario(pool, prefix, "");
        worker_scenario(pool, prefix, "");
    }
}

TEST(JobsAcl, ConfirmedAddsRunAsTheUser) {
    local_server master;
    auto replica = local_server::acknowledging_replica_of(master);
    connection_pool pool(make_acl_user(master, "jobs_replicated", jobs_acl_needs()));
    job_queue_options o;
    o.replication.replicas = 1;
    o.replication.timeout = 2s;
    job_queue q(pool, "rep", o);
    EXPECT_TRUE(q.add("x").added);
}

// Every command the jobs part needs of its own, removed in turn; those it needs only for its
// scheduler's election are the election's (tests/integration/election/acl_test.cpp).
TEST(JobsAcl, MissingAnyNeededCommandIsPermissionErrorNamingIt) {
    local_server server;
    const auto needs = jobs_acl_needs();
    const auto election = election_acl_needs();
    acl_needs own = needs;
    std::erase_if(own.commands, [&](const std::string& c) {
        return std::count(election.commands.begin(), election.commands.end(), c) > 0;
    });
    ASSERT_GE(own.commands.size(), 15U);
    int n = 0;
    for (const auto& cmd : needs.commands) {
        SCOPED_TRACE(cmd);
        const bool jobs_own = std::count(own.commands.begin(), own.commands.end(), cmd) > 0;
        const bool in_scripts = cmd != "role" && cmd != "unsubscribe" && cmd != "wait";
        if (!jobs_own && !in_scripts) continue;
        connection_pool pool(
            make_acl_user(server, "jobs_no_" + std::to_string(n++), without_command(needs, cmd)));
        const std::string tag = "-" + std::to_string(n);
        if (cmd == "role" || cmd == "unsubscribe") {
            // Replica discovery and the last listener's goodbye: nothing depends on them here.
            producer_scenario(pool, std::string(default_prefix), tag);
            continue;
        }
        if (cmd == "wait") {
            job_queue_options o;
            o.replication.replicas = 1;
            o.replication.timeout = 5s;
            job_queue q(pool, "rep" + tag, o);
            expect_refused(cmd, 2s, [&] { (void)q.add("x"); });
            continue;
        }
        // Commands the election needs too are needed by the jobs' own scripts as well
        // (TIME, HSET, PUBLISH, ...): the scenarios reach them.
        expect_refused(cmd, 12s, [&] {
            producer_scenario(pool, std::string(default_prefix), tag);
            worker_scenario(pool, std::string(default_prefix), tag);
        });
    }
}

TEST(JobsAcl, MissingKeyOrChannelPatternIsPermissionError) {
    local_server server;
    auto no_keys = jobs_acl_needs();
    std::erase(no_keys.key_patterns, prefixed_pattern(default_prefix, "jobs:*"));
    connection_pool keyless(make_acl_user(server, "jobs_no_keys", no_keys));
    job_queue q(keyless, "k");
    redcoord::testing::expect_refused_any({"eval", "evalsha"}, 2s, [&] { (void)q.add("x"); });

    auto no_channels = jobs_acl_needs();
    std::erase(no_channels.channel_patterns, prefixed_pattern(default_prefix, "jobs:*"));
    connection_pool deaf(make_acl_user(server, "jobs_no_channels", no_channels));
    job_queue d(deaf, "c");
    job_worker w(d, [](job_context&) { return std::string(); });
    expect_refused("subscribe", 2s, [&] { w.start(); });
}
