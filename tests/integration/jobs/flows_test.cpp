// Flows (issue 37 item 2) on a real server: a job with dependencies waits in waiting_children
// until every dependency completed, reads their results, fails (or runs, by option) when one
// fails; add_flow() adds a tree atomically; bad dependencies (a cycle, an unknown id, too
// many) are typed errors that write nothing; cancelling a waiting parent cancels its unstarted
// children.

#include "jobs_fixture.hpp"

#include <redcoord/core/errors.hpp>
#include <redcoord/core/pool.hpp>
#include <redcoord/jobs/inspect.hpp>
#include <redcoord/jobs/job_queue.hpp>
#include <redcoord/jobs/job_worker.hpp>
#include <redcoord/testing/local_server.hpp>
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
using redcoord::testing::local_server;

namespace {

using Flows = jobs_test::fixture;

job_options after(std::vector<std::string> deps, std::string id = {}) {
    job_options o;
    o.id = std::move(id);
    o.depends_on = std::move(deps);
    return o;
}

}  // namespace

TEST_F(Flows, AParentWaitsForItsChildrenAndReadsTheirResults) {
    job_queue q(pool_, "tree");
    const auto a = q.add("a", {.id = "a"});
    const auto b = q.add("b", {.id = "b"});
    const auto p = q.add("p", after({"a", "b"}, "p"));
    EXPECT_TRUE(p.added);
    EXPECT_EQ(p.state, job_state::waiting_children);
    EXPECT_EQ(q.counts().waiting_children, 1U);
    EXPECT_EQ(inspect_jobs(pool_, "tree").counts.waiting_children, 1U);
    const auto info = q.get("p");
    ASSERT_TRUE(info);
    EXPECT_EQ(info->dependencies, (std::vector<std::string>{"a", "b"}));
    EXPECT_EQ(info->pending_dependencies, (std::vector<std::string>{"a", "b"}));
    EXPECT_EQ(q.get("a")->dependents, (std::vector<std::string>{"p"}));
    EXPECT_EQ(q.list(job_state::waiting_children), (std::vector<std::string>{"p"}));

    std::mutex mu;
    std::vector<std::string> ran;
    std::map<std::string, std::string> seen;
    job_worker w(q, [&](job_context& j) {
        std::lock_guard lk(mu);
        if (j.id() == "p") {
            // Every dependency completed (its state written) before the parent was handed out.
            EXPECT_EQ(state_of(q, "a"), job_state::completed);
            EXPECT_EQ(state_of(q, "b"), job_state::completed);
            seen = j.dependency_results();
        }
        ran.push_back(j.id());
        return "r-" + j.payload();
    });
    w.start();
    ASSERT_TRUE(reaches(q, "p", job_state::completed));
    w.stop();
    ASSERT_EQ(ran.size(), 3U);
    EXPECT_EQ(ran.back(), "p");
    EXPECT_EQ(seen, (std::map<std::string, std::string>{{"a", "r-a"}, {"b", "r-b"}}));
    EXPECT_EQ(q.counts().waiting_children, 0U);
    EXPECT_TRUE(q.get("p")->pending_dependencies.empty());
    (void)a;
    (void)b;
}

TEST_F(Flows, AParentNeverRunsBeforeItsLastChildCompleted) {
    // The children complete one by one, each only when the test lets it; the parent must
    // stay waiting_children until the last one.
    job_queue q(pool_, "gate");
    flow_job root{"parent", {.id = "parent"}, {}};
    for (int i = 0; i < 5; ++i)
        root.children.push_back({"c" + std::to_string(i), {.id = "c" + std::to_string(i)}, {}});
    const auto added = q.add_flow(root);
    ASSERT_EQ(added.size(), 6U);
    EXPECT_EQ(added.back().id, "parent");
    EXPECT_EQ(added.back().state, job_state::waiting_children);
    for (int i = 0; i < 5; ++i)
        EXPECT_EQ(added[static_cast<std::size_t>(i)].state, job_state::waiting);
    std::atomic<int> allowed{0};
    std::atomic<bool> parent_early{false};
    job_worker w(q,
                 [&](job_context& j) -> std::string {
                     if (j.id() == "parent") {
                         // The server's word: each child's completion was written before the parent left
                         // waiting_children.
                         for (int i = 0; i < 5; ++i)
                             if (state_of(q, "c" + std::to_string(i)) != job_state::completed)
                                 parent_early = true;
                         return "p";
                     }
                     const int n = std::stoi(j.id().substr(1));
                     while (allowed.load() <= n) std::this_thread::sleep_for(5ms);
                     return "ok";
                 },
                 {.threads = 3});
    w.start();
    for (int i = 0; i < 5; ++i) {
        allowed = i + 1;
        ASSERT_TRUE(reaches(q, "c" + std::to_string(i), job_state::completed));
        if (i < 4) EXPECT_EQ(state_of(q, "parent"), job_state::waiting_children) << i;
    }
    ASSERT_TRUE(reaches(q, "parent", job_state::completed));
    w.stop();
    EXPECT_FALSE(parent_early);
}

TEST_F(Flows, AFailedDependencyFailsItsParentsDownTheFlow) {
    job_queue q(pool_, "fail");
    (void)q.add("bad", {.id = "bad", .max_attempts = 1});
    (void)q.add("ok", {.id = "ok"});
    (void)q.add("mid", after({"bad", "ok"}, "mid"));
    (void)q.add("top", after({"mid"}, "top"));
    std::atomic<bool> ran_parent{false};
    job_worker w(q, [&](job_context& j) -> std::string {
        if (j.id() == "mid" || j.id() == "top") ran_parent = true;
        if (j.id() == "bad") throw std::runtime_error("boom");
        return "fine";
    });
    w.start();
    ASSERT_TRUE(reaches(q, "bad", job_state::dead));
    ASSERT_TRUE(reaches(q, "mid", job_state::failed));
    ASSERT_TRUE(reaches(q, "top", job_state::failed));
    w.stop();
    EXPECT_FALSE(ran_parent);
    EXPECT_EQ(q.get("mid")->error, "dependency bad failed");
    EXPECT_EQ(q.get("top")->error, "dependency mid failed");
    EXPECT_EQ(q.counts().waiting_children, 0U);
    // No set is left behind for the failed parents.
    EXPECT_TRUE(q.get("ok")->dependents.empty());
    // A job added after its dependency failed fails at once.
    const auto late = q.add("late", after({"bad"}));
    EXPECT_EQ(late.state, job_state::failed);
}

TEST_F(Flows, AnIgnoredFailedDependencyLetsTheParentRunWithoutItsResult) {
    job_queue q(pool_, "ignore");
    (void)q.add("bad", {.id = "bad", .max_attempts = 1});
    (void)q.add("ok", {.id = "ok"});
    auto o = after({"bad", "ok"}, "p");
    o.on_dependency_failure = dependency_failure::ignore;
    (void)q.add("p", o);
    EXPECT_EQ(q.get("p")->on_dependency_failure, dependency_failure::ignore);
    std::map<std::string, std::string> seen;
    job_worker w(q, [&](job_context& j) -> std::string {
        if (j.id() == "bad") throw std::runtime_error("boom");
        if (j.id() == "p") seen = j.dependency_results();
        return "r-" + j.id();
    });
    w.start();
    ASSERT_TRUE(reaches(q, "p", job_state::completed));
    w.stop();
    EXPECT_EQ(state_of(q, "bad"), job_state::dead);
    EXPECT_EQ(seen, (std::map<std::string, std::string>{{"ok", "r-ok"}}));
}

TEST_F(Flows, AddFlowIsAtomicABadChildLeavesNothing) {
    job_queue q(pool_, "atomic");
    (void)q.add("known", {.id = "known"});
    const auto before = keys_of("atomic");
    flow_job root{"root", {.id = "root"}, {}};
    root.children.push_back({"c1", {.id = "c1"}, {}});
    root.children.push_back({"c2", after({"known", "nobody"}, "c2"), {}});
    try {
        (void)q.add_flow(root);
        FAIL() << "an unknown dependency was accepted";
    } catch (const unknown_dependency& e) {
        EXPECT_EQ(e.dependency(), "nobody");
        EXPECT_EQ(e.job(), "c2");
    }
    EXPECT_EQ(keys_of("atomic"), before);
    EXPECT_FALSE(q.get("c1"));
    EXPECT_FALSE(q.get("root"));
}

TEST_F(Flows, CyclesUnknownIdsAndTooManyDependenciesAreTypedErrorsThatWriteNothing) {
    job_queue q(pool_, "bad");
    (void)q.add("x", {.id = "x"});
    const auto before = keys_of("bad");
    // A cycle within one call.
    std::vector<std::pair<std::string, job_options>> cycle{
        {"a", after({"c"}, "a")}, {"b", after({"a"}, "b")}, {"c", after({"b"}, "c")}};
    EXPECT_THROW((void)q.add_batch(cycle), dependency_cycle);
    EXPECT_THROW((void)q.add("self", after({"self"}, "self")), dependency_cycle);
    // An unknown id, alone and after a good job of the same call.
    EXPECT_THROW((void)q.add("u", after({"ghost"})), unknown_dependency);
    std::vector<std::pair<std::string, job_options>> mixed{{"good", {.id = "good"}},
                                                           {"u", after({"x", "ghost"}, "u")}};
    EXPECT_THROW((void)q.add_batch(mixed), unknown_dependency);
    // Too many, and duplicates.
    std::vector<std::string> many;
    for (std::size_t i = 0; i <= max_job_dependencies; ++i) many.push_back("x");
    EXPECT_THROW((void)q.add("m", after(many)), too_many_dependencies);
    EXPECT_THROW((void)q.add("d", after({"x", "x"})), too_many_dependencies);
    // All of them are invalid_argument (so dependency_error) for callers that catch broadly.
    EXPECT_THROW((void)q.add("u", after({"ghost"})), invalid_argument);
    EXPECT_EQ(keys_of("bad"), before);
}

TEST_F(Flows, ABatchIsSentDependenciesFirstWhateverItsOrder) {
    job_queue q(pool_, "order");
    std::vector<std::pair<std::string, job_options>> batch{{"p", after({"c"}, "p")},
                                                           {"c", {.id = "c"}}};
    const auto r = q.add_batch(batch);
    ASSERT_EQ(r.size(), 2U);
    EXPECT_EQ(r[0].id, "p");
    EXPECT_EQ(r[0].state, job_state::waiting_children);
    EXPECT_EQ(r[1].id, "c");
    EXPECT_EQ(r[1].state, job_state::waiting);
}

TEST_F(Flows, CancellingAWaitingParentCancelsItsUnstartedChildren) {
    job_queue q(pool_, "cancel");
    flow_job root{"root", {.id = "root"}, {}};
    flow_job mid{"mid", {.id = "mid"}, {}};
    mid.children.push_back({"leaf", {.id = "leaf"}, {}});
    root.children.push_back(mid);
    root.children.push_back({"shared", {.id = "shared"}, {}});
    (void)q.add_flow(root);
    // Another parent also waits for `shared`: it is not cancelled with root.
    (void)q.add("other", after({"shared"}, "other"));
    EXPECT_EQ(q.cancel("root"), job_state::waiting_children);
    EXPECT_EQ(state_of(q, "root"), job_state::failed);
    EXPECT_EQ(state_of(q, "mid"), job_state::failed);
    EXPECT_EQ(state_of(q, "leaf"), job_state::failed);
    EXPECT_EQ(state_of(q, "shared"), job_state::waiting);
    EXPECT_EQ(state_of(q, "other"), job_state::waiting_children);
    EXPECT_EQ(q.get("shared")->dependents, (std::vector<std::string>{"other"}));
    EXPECT_EQ(q.counts().waiting_children, 1U);
}

TEST_F(Flows, CancellingOrRemovingAChildFailsItsWaitingParent) {
    job_queue q(pool_, "child");
    (void)q.add("c1", {.id = "c1"});
    (void)q.add("c2", {.id = "c2"});
    (void)q.add("p1", after({"c1"}, "p1"));
    (void)q.add("p2", after({"c2"}, "p2"));
    EXPECT_EQ(q.cancel("c1"), job_state::waiting);
    EXPECT_EQ(state_of(q, "p1"), job_state::failed);
    EXPECT_EQ(q.remove("c2"), job_state::waiting);
    EXPECT_EQ(state_of(q, "p2"), job_state::failed);
    EXPECT_EQ(q.counts().waiting_children, 0U);
}

TEST_F(Flows, ADelayedParentWaitsForItsDelayAfterItsChildren) {
    job_queue q(pool_, "delayed");
    (void)q.add("c", {.id = "c"});
    auto o = after({"c"}, "p");
    o.delay = 60s;
    (void)q.add("p", o);
    job_worker w(q, [](job_context&) { return std::string("ok"); });
    w.start();
    ASSERT_TRUE(reaches(q, "c", job_state::completed));
    ASSERT_TRUE(reaches(q, "p", job_state::delayed));
    w.stop();
    ASSERT_TRUE(q.get("p")->due_at);
}

TEST_F(Flows, ADependencyThatAlreadyCompletedCountsAtOnce) {
    job_queue q(pool_, "done");
    (void)q.add("c", {.id = "c"});
    job_worker w(q, [](job_context& j) { return "r-" + j.id(); });
    w.start();
    ASSERT_TRUE(reaches(q, "c", job_state::completed));
    std::map<std::string, std::string> seen;
    std::mutex mu;
    w.stop();
    const auto p = q.add("p", after({"c"}, "p"));
    EXPECT_EQ(p.state, job_state::waiting);
    job_worker w2(q, [&](job_context& j) {
        std::lock_guard lk(mu);
        seen = j.dependency_results();
        return std::string("ok");
    });
    w2.start();
    ASSERT_TRUE(reaches(q, "p", job_state::completed));
    w2.stop();
    EXPECT_EQ(seen, (std::map<std::string, std::string>{{"c", "r-c"}}));
}

TEST_F(Flows, RetryingAParentFailedByItsDependencyRunsIt) {
    job_queue q(pool_, "retry");
    (void)q.add("c", {.id = "c"});
    (void)q.add("p", after({"c"}, "p"));
    (void)q.cancel("c");
    ASSERT_EQ(state_of(q, "p"), job_state::failed);
    EXPECT_TRUE(q.retry("p"));
    EXPECT_EQ(state_of(q, "p"), job_state::waiting);
    EXPECT_TRUE(q.get("p")->pending_dependencies.empty());
}
