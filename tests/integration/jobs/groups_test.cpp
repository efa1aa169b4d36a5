// Groups, dedupe windows and debounce (issue 37 items 3 and 4) on a real server: claims take
// turns between groups (and the ungrouped jobs) within one claim, no group runs more than its
// limit, a small tenant finishes early behind a large one, ids deduplicate for a window and
// then are accepted again, debounce replaces a waiting job's payload and delays it, and bad
// input (a group with a brace, debounce on a running job, negative windows) is a typed error
// that writes nothing.

#include "job_scripts.hpp"
#include "jobs_fixture.hpp"

#include <redcoord/core/errors.hpp>
#include <redcoord/jobs/inspect.hpp>
#include <redcoord/jobs/job_queue.hpp>
#include <redcoord/jobs/job_worker.hpp>
#include <redcoord/testing/wait.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

using namespace redcoord;
using namespace std::chrono_literals;
using redcoord::testing::eventually;

namespace {

class Groups : public jobs_test::fixture {
protected:
    // What one claim of up to `n` jobs by a worker that never settles hands out, in order.
    std::vector<std::string> claim(const std::string& queue, std::size_t n,
                                   const std::string& token = "t0",
                                   const std::string& lease_ms = "60000") {
        const std::string base = "redcoord:jobs:{" + queue + "}";
        const auto r = detail::job_claim_script().run(
            pool_, {base},
            {"w", lease_ms, token, "0.5", base + ":wake", "0", "0", "1000", std::to_string(n)});
        std::vector<std::string> ids;
        const auto& e = r.elements();
        for (std::size_t i = 3; i < e.size(); ++i) ids.push_back(e[i].elements().at(0).text());
        return ids;
    }
    // Completes `id` held under `token`.
    void complete(const std::string& queue, const std::string& id,
                  const std::string& token = "t0") {
        const std::string base = "redcoord:jobs:{" + queue + "}";
        const auto r =
            detail::job_settle_script().run(pool_, {base},
                                            {"1000", "60000", base + ":events", base + ":wake", "0",
                                             "1", "c", id, token, "", "x", ""});
        ASSERT_EQ(r.elements().at(0).elements().at(0).integer(), 1) << id;
    }
};

job_options in(const std::string& group, const std::string& id = {}) {
    job_options o;
    o.id = id;
    o.group = group;
    return o;
}

// The group of a job id "<group>-<n>" (and "u-<n>" for ungrouped ones).
std::string lane_of(const std::string& id) { return id.substr(0, id.find('-')); }

}  // namespace

TEST_F(Groups, OneClaimTakesTurnsBetweenGroupsAndTheUngroupedJobs) {
    job_queue q(pool_, "turns");
    for (int i = 0; i < 100; ++i) (void)q.add("a", in("big", "big-" + std::to_string(i)));
    for (int i = 0; i < 3; ++i) (void)q.add("b", in("small", "small-" + std::to_string(i)));
    for (int i = 0; i < 3; ++i) (void)q.add("u", {.id = "u-" + std::to_string(i)});
    EXPECT_EQ(q.counts().waiting, 106U);
    const auto got = claim("turns", 9);
    ASSERT_EQ(got.size(), 9U);
    std::map<std::string, int> per;
    for (const auto& id : got) ++per[lane_of(id)];
    EXPECT_EQ(per, (std::map<std::string, int>{{"big", 3}, {"small", 3}, {"u", 3}}));
    // Turns, not runs: no lane twice in a row while the others have jobs.
    for (std::size_t i = 1; i < got.size(); ++i)
        EXPECT_NE(lane_of(got[i]), lane_of(got[i - 1])) << "at " << i;
    // FIFO within a group.
    EXPECT_EQ(std::count(got.begin(), got.end(), "big-0"), 1);
    // Once the small lanes are empty the big group takes every turn.
    const auto rest = claim("turns", 5);
    EXPECT_EQ(rest, (std::vector<std::string>{"big-3", "big-4", "big-5", "big-6", "big-7"}));
}

TEST_F(Groups, PrioritiesOrderJobsWithinAGroup) {
    job_queue q(pool_, "prio");
    (void)q.add("low", in("g", "g-low"));
    job_options hi = in("g", "g-high");
    hi.priority = 9;
    (void)q.add("high", hi);
    EXPECT_EQ(claim("prio", 1), (std::vector<std::string>{"g-high"}));
}

TEST_F(Groups, AGroupNeverRunsMoreThanItsLimit) {
    job_queue q(pool_, "limits");
    EXPECT_EQ(q.set_group_limit("a", 2), 0U);
    for (int i = 0; i < 10; ++i) (void)q.add("a", in("a", "a-" + std::to_string(i)));
    for (int i = 0; i < 4; ++i) (void)q.add("b", in("b", "b-" + std::to_string(i)));
    auto got = claim("limits", 10);
    EXPECT_EQ(std::count_if(got.begin(), got.end(), [](auto& id) { return lane_of(id) == "a"; }),
              2);
    EXPECT_EQ(got.size(), 6U);  // 2 of a, all 4 of b
    EXPECT_TRUE(claim("limits", 10).empty()) << "a group went past its limit";
    auto gs = q.groups();
    ASSERT_EQ(gs.size(), 2U);
    EXPECT_EQ(gs[0].name, "a");
    EXPECT_EQ(gs[0].active, 2U);
    EXPECT_EQ(gs[0].waiting, 8U);
    EXPECT_EQ(gs[0].limit, 2U);
    // One of a's jobs ends: one more of a's may start, not two.
    complete("limits", "a-0");
    got = claim("limits", 10);
    EXPECT_EQ(got, (std::vector<std::string>{"a-2"}));
    // A raised limit applies at once; cleared, none.
    EXPECT_EQ(q.set_group_limit("a", 4), 2U);
    EXPECT_EQ(claim("limits", 10).size(), 2U);
    EXPECT_EQ(q.set_group_limit("a", 0), 4U);
    EXPECT_EQ(claim("limits", 10).size(), 5U);
}

TEST_F(Groups, WorkersKeepEveryGroupUnderItsLimit) {
    job_queue q(pool_, "workers");
    (void)q.set_group_limit("a", 2);
    (void)q.set_group_limit("b", 1);
    for (int i = 0; i < 30; ++i) {
        (void)q.add("a", in("a"));
        (void)q.add("b", in("b"));
    }
    std::mutex mu;
    std::map<std::string, int> running, most;
    std::atomic<int> done{0};
    const auto handler = [&](job_context& j) {
        const auto g = j.payload();
        {
            std::lock_guard lk(mu);
            most[g] = std::max(most[g], ++running[g]);
        }
        std::this_thread::sleep_for(2ms);
        {
            std::lock_guard lk(mu);
            --running[g];
        }
        ++done;
        return std::string();
    };
    job_worker w1(q, handler, {.threads = 4, .poll_timeout = 50ms});
    job_worker w2(q, handler, {.threads = 4, .poll_timeout = 50ms, .prefetch = 4});
    w1.start();
    w2.start();
    ASSERT_TRUE(eventually([&] { return done.load() == 60; }, 60s));
    w1.stop();
    w2.stop();
    EXPECT_LE(most["a"], 2);
    EXPECT_LE(most["b"], 1);
    EXPECT_EQ(q.counts().completed, 60U);
    // Idle, the groups are listed for their limits only.
    const auto gs = q.groups();
    ASSERT_EQ(gs.size(), 2U);
    for (const auto& g : gs) {
        EXPECT_EQ(g.waiting, 0U) << g.name;
        EXPECT_EQ(g.active, 0U) << g.name;
    }
}

TEST_F(Groups, ASmallTenantFinishesEarlyDespiteALargeOne) {
    job_queue q(pool_, "fair");
    std::vector<std::pair<std::string, job_options>> big;
    for (int i = 0; i < 1000; ++i) big.push_back({"big", in("big")});
    (void)q.add_batch(big);
    for (int i = 0; i < 10; ++i) (void)q.add("small", in("small"));
    std::mutex mu;
    std::vector<std::string> order;
    job_worker w(q,
                 [&](job_context& j) {
                     std::lock_guard lk(mu);
                     order.push_back(j.payload());
                     return std::string();
                 },
                 // Default options: with groups taking turns, a worker that batches by
                 // default claims one job at a time (an explicit prefetch of 16 let 24-56 big
                 // jobs in first: job_worker_options::prefetch).
                 {.threads = 2, .poll_timeout = 50ms});
    w.start();
    ASSERT_TRUE(eventually(
        [&] {
            std::lock_guard lk(mu);
            return std::count(order.begin(), order.end(), "small") == 10;
        },
        60s));
    w.stop();
    std::lock_guard lk(mu);
    // In turns the tenth small job runs about twentieth; FIFO would make it 1010th.
    const auto big_before = std::count(order.begin(), order.end(), "big");
    EXPECT_LE(big_before, 40) << "the small tenant waited behind " << big_before << " big jobs";
}

TEST_F(Groups, DelaysRetriesCancelAndRemoveKeepTheGroupsIndexes) {
    job_queue q(pool_, "life");
    job_options d = in("g", "g-delayed");
    d.delay = 200ms;
    (void)q.add("d", d);
    job_options f = in("g", "g-fails");
    f.max_attempts = 2;
    f.backoff = backoff_policy::fixed(0ms);
    (void)q.add("f", f);
    (void)q.add("c", in("g", "g-cancel"));
    (void)q.add("r", in("g", "g-remove"));
    EXPECT_EQ(q.cancel("g-cancel"), job_state::waiting);
    EXPECT_EQ(q.remove("g-remove"), job_state::waiting);
    EXPECT_EQ(q.counts().waiting, 1U);
    EXPECT_EQ(inspect_jobs(pool_, "life").groups.at(0).waiting, 1U);
    std::atomic<int> fails{0};
    job_worker w(q,
                 [&](job_context& j) {
                     if (j.id() == "g-fails" && fails++ == 0) throw std::runtime_error("once");
                     return std::string("ok");
                 },
                 {.poll_timeout = 50ms});
    w.start();
    ASSERT_TRUE(reaches(q, "g-delayed", job_state::completed));
    ASSERT_TRUE(reaches(q, "g-fails", job_state::completed));
    w.stop();
    EXPECT_EQ(fails.load(), 2);
    const auto n = q.counts();
    EXPECT_EQ(n.waiting, 0U);
    EXPECT_EQ(n.active, 0U);
    EXPECT_TRUE(q.groups().empty());
    // A failed grouped job retried goes back to its group.
    (void)q.add("x", in("g", "g-x"));
    EXPECT_EQ(q.cancel("g-x"), job_state::waiting);
    EXPECT_TRUE(q.retry("g-x"));
    EXPECT_EQ(claim("life", 5), (std::vector<std::string>{"g-x"}));
}

TEST_F(Groups, BadGroupNamesAreTypedErrorsThatWriteNothing) {
    job_queue q(pool_, "names");
    (void)q.add("x", {.id = "x"});
    const auto before = keys_of("names");
    EXPECT_THROW((void)q.add("p", in("a}b")), invalid_group);
    EXPECT_THROW((void)q.add("p", in("{tag}")), invalid_group);
    EXPECT_THROW((void)q.add("p", in("")), invalid_group);
    EXPECT_THROW((void)q.add("p", in(std::string(max_group_length + 1, 'g'))), invalid_group);
    EXPECT_THROW((void)q.add("p", in("a\nb")), invalid_group);
    // In a batch, a bad job anywhere stops the whole call.
    std::vector<std::pair<std::string, job_options>> batch{{"ok", in("fine")}, {"bad", in("}")}};
    EXPECT_THROW((void)q.add_batch(batch), invalid_group);
    EXPECT_THROW((void)q.set_group_limit("}", 1), invalid_group);
    EXPECT_THROW((void)q.add("p", in("}")), invalid_argument);  // an invalid_argument too
    EXPECT_EQ(keys_of("names"), before);
    EXPECT_NO_THROW((void)q.add("p", in(std::string(max_group_length, 'g'))));
}

TEST_F(Groups, InspectShowsPerGroupCounts) {
    job_queue q(pool_, "seen");
    (void)q.set_group_limit("a", 1);
    for (int i = 0; i < 3; ++i) (void)q.add("a", in("a"));
    (void)q.add("b", in("b"));
    (void)q.add("u");
    (void)claim("seen", 10);  // one of a, b, u
    const auto v = inspect_jobs(pool_, "seen");
    EXPECT_EQ(v.counts.waiting, 2U);
    EXPECT_EQ(v.counts.active, 3U);
    ASSERT_EQ(v.groups.size(), 2U);
    EXPECT_EQ(v.groups[0].name, "a");
    EXPECT_EQ(v.groups[0].waiting, 2U);
    EXPECT_EQ(v.groups[0].active, 1U);
    EXPECT_EQ(v.groups[0].limit, 1U);
    EXPECT_EQ(v.groups[1].name, "b");
    EXPECT_EQ(v.groups[1].waiting, 0U);
    EXPECT_EQ(v.groups[1].active, 1U);
    EXPECT_EQ(v.groups[1].limit, 0U);
}

TEST_F(Groups, AnIdIsDeduplicatedForItsWindowThenAcceptedAgain) {
    job_queue q(pool_, "dedupe");
    job_options o;
    o.id = "once";
    o.dedupe_for = 300ms;
    EXPECT_TRUE(q.add("first", o).added);
    EXPECT_FALSE(q.add("second", o).added);  // within the window
    ASSERT_EQ(claim("dedupe", 1), (std::vector<std::string>{"once"}));
    complete("dedupe", "once");
    EXPECT_FALSE(q.add("third", o).added);  // finished, but still within the window
    std::this_thread::sleep_for(400ms);
    const auto again = q.add("fourth", o);
    EXPECT_TRUE(again.added) << "the id was not accepted after its window";
    EXPECT_EQ(again.state, job_state::waiting);
    EXPECT_EQ(q.get("once")->payload, "fourth");
    EXPECT_EQ(q.counts().completed, 0U);  // the old one is forgotten
    // A job not finished when its window passed still deduplicates.
    std::this_thread::sleep_for(400ms);
    EXPECT_FALSE(q.add("fifth", o).added);
    EXPECT_EQ(q.get("once")->payload, "fourth");
    // Without a window, a finished id deduplicates as long as it is known.
    (void)q.add("p", {.id = "plain"});
    ASSERT_EQ(claim("dedupe", 5, "t1"), (std::vector<std::string>{"once", "plain"}));
    complete("dedupe", "plain", "t1");
    EXPECT_FALSE(q.add("p2", {.id = "plain"}).added);
}

TEST_F(Groups, DebounceReplacesAWaitingJobsPayloadAndDelaysIt) {
    job_queue q(pool_, "bounce");
    job_options o;
    o.id = "save";
    o.debounce = 400ms;
    const auto first = q.add("v1", o);
    EXPECT_TRUE(first.added);
    EXPECT_EQ(first.state, job_state::delayed);
    const auto due1 = q.get("save")->due_at;
    ASSERT_TRUE(due1);
    std::this_thread::sleep_for(50ms);
    const auto second = q.add("v2", o);
    EXPECT_FALSE(second.added);
    EXPECT_TRUE(second.debounced);
    EXPECT_EQ(second.state, job_state::delayed);
    const auto j = q.get("save");
    EXPECT_EQ(j->payload, "v2");
    ASSERT_TRUE(j->due_at);
    EXPECT_GT(*j->due_at, *due1) << "its due time was not pushed back";
    EXPECT_EQ(q.counts().delayed, 1U);
    // A waiting (ready) job is debounced too: back to delayed, with the new payload.
    (void)q.add("w1", {.id = "ready"});
    job_options r;
    r.id = "ready";
    r.debounce = 60000ms;
    r.group = "g";
    const auto bounced = q.add("w2", r);
    EXPECT_TRUE(bounced.debounced);
    EXPECT_EQ(state_of(q, "ready"), job_state::delayed);
    EXPECT_EQ(q.counts().waiting, 0U);
    EXPECT_TRUE(claim("bounce", 5).empty());  // nothing ready: both wait out their debounce
    // The first runs once its debounce passed, with the last payload.
    std::string ran;
    job_worker w(q, [&](job_context& c) { return ran = c.payload(), std::string("done"); },
                 {.poll_timeout = 50ms});
    w.start();
    ASSERT_TRUE(reaches(q, "save", job_state::completed));
    w.stop();
    EXPECT_EQ(q.get("save")->result, "done");
    EXPECT_EQ(ran, "v2");
}

TEST_F(Groups, DebounceOnARunningJobIsRefusedAndWritesNothing) {
    job_queue q(pool_, "running");
    (void)q.add("v1", {.id = "job"});
    ASSERT_EQ(claim("running", 1), (std::vector<std::string>{"job"}));
    const auto hash_before = pool_.command({"HGETALL", "redcoord:jobs:{running}:job:job"});
    const auto before = keys_of("running");
    job_options o;
    o.id = "job";
    o.debounce = 1000ms;
    try {
        std::vector<std::pair<std::string, job_options>> batch{{"new", {.id = "other"}}, {"v2", o}};
        (void)q.add_batch(batch);
        FAIL() << "debounce of a running job was accepted";
    } catch (const debounce_refused& e) {
        EXPECT_EQ(e.job(), "job");
        EXPECT_EQ(e.state(), job_state::active);
    }
    EXPECT_EQ(keys_of("running"), before);
    EXPECT_FALSE(q.get("other"));
    const auto hash_after = pool_.command({"HGETALL", "redcoord:jobs:{running}:job:job"});
    ASSERT_EQ(hash_after.elements().size(), hash_before.elements().size());
    for (std::size_t i = 0; i < hash_after.elements().size(); ++i)
        EXPECT_EQ(hash_after.elements()[i].text(), hash_before.elements()[i].text());
    EXPECT_EQ(q.get("job")->payload, "v1");
}

TEST_F(Groups, NegativeWindowsAndWindowsWithoutAnIdAreTypedErrors) {
    job_queue q(pool_, "windows");
    const auto before = keys_of("windows");
    job_options o;
    o.id = "x";
    o.dedupe_for = -1ms;
    EXPECT_THROW((void)q.add("p", o), invalid_argument);
    o.dedupe_for = 0ms;
    o.debounce = -5ms;
    EXPECT_THROW((void)q.add("p", o), invalid_argument);
    job_options no_id;
    no_id.debounce = 10ms;
    EXPECT_THROW((void)q.add("p", no_id), invalid_argument);
    no_id.debounce = 0ms;
    no_id.dedupe_for = 10ms;
    EXPECT_THROW((void)q.add("p", no_id), invalid_argument);
    job_options flow;
    flow.id = "f";
    flow.debounce = 10ms;
    flow.depends_on = {"x"};
    EXPECT_THROW((void)q.add("p", flow), invalid_argument);
    repeat_options rep;
    rep.every = 1000ms;
    rep.job.group = "g";
    EXPECT_THROW(q.repeat("r", "p", rep), invalid_argument);
    EXPECT_EQ(keys_of("windows"), before);
}

// A vanished worker's grouped job: its lapsed lease frees the group's slot in the same claim
// that retries it, so the group neither loses its slot nor runs past its limit.
TEST_F(Groups, AStalledGroupedJobFreesItsSlotWhenReclaimed) {
    job_queue q(pool_, "stalls");
    (void)q.set_group_limit("g", 1);
    job_options o = in("g", "g-a");
    o.backoff = backoff_policy::fixed(0ms);
    (void)q.add("a", o);
    o.id = "g-b";
    (void)q.add("b", o);
    ASSERT_EQ(claim("stalls", 5, "ghost", "150"), (std::vector<std::string>{"g-a"}));
    EXPECT_TRUE(claim("stalls", 5, "t1").empty());  // at its limit
    std::this_thread::sleep_for(300ms);
    // The lapsed g-a is retried at once (no back-off, behind g-b): one of them runs, not two.
    const auto next = claim("stalls", 5, "t2");
    ASSERT_EQ(next, (std::vector<std::string>{"g-b"}));
    const auto gs = q.groups();
    ASSERT_EQ(gs.size(), 1U);
    EXPECT_EQ(gs[0].active, 1U);
    EXPECT_EQ(gs[0].waiting, 1U);
    EXPECT_EQ(q.get("g-a")->error, "stalled: its worker was lost or its timeout passed");
    complete("stalls", "g-b", "t2");
    EXPECT_EQ(claim("stalls", 5, "t3"), (std::vector<std::string>{"g-a"}));
}

// Flows and groups: a grouped parent waits for its children, then enters its group's turns.
TEST_F(Groups, AGroupedParentJoinsItsGroupWhenReleased) {
    job_queue q(pool_, "flowing");
    flow_job root{"p", in("g", "g-parent"), {}};
    root.children.push_back({"c", in("h", "h-child"), {}});
    (void)q.add_flow(root);
    EXPECT_EQ(state_of(q, "g-parent"), job_state::waiting_children);
    ASSERT_EQ(claim("flowing", 5), (std::vector<std::string>{"h-child"}));
    complete("flowing", "h-child");
    EXPECT_EQ(state_of(q, "g-parent"), job_state::waiting);
    EXPECT_EQ(q.groups().at(0).name, "g");
    EXPECT_EQ(claim("flowing", 5, "t1"), (std::vector<std::string>{"g-parent"}));
}
