// The client side of flows (jobs/src/job_flow.hpp), without a server: the order a call's jobs
// are sent in, cycles found before sending, a flow tree flattened children first, and the
// add script's refusals as typed errors.
#include "job_flow.hpp"

#include <gtest/gtest.h>

using namespace redcoord;
using redcoord::detail::flow_order;

namespace {

using deps_t = std::vector<std::vector<std::string>>;

}  // namespace

TEST(JobFlow, JobsWithoutDependenciesKeepTheirOrder) {
    EXPECT_EQ(flow_order({"a", "b", "c"}, deps_t{{}, {}, {}}), (std::vector<std::size_t>{0, 1, 2}));
}

TEST(JobFlow, AJobGoesAfterTheJobsOfTheCallItDependsOn) {
    // p depends on c (later in the call) and on x (not in the call: the server's to check).
    EXPECT_EQ(flow_order({"p", "c", "q"}, deps_t{{"c", "x"}, {}, {"p"}}),
              (std::vector<std::size_t>{1, 0, 2}));
}

TEST(JobFlow, ALongChainIsOrderedWithoutRecursion) {
    std::vector<std::string> ids;
    deps_t deps;
    constexpr std::size_t n = 100000;
    for (std::size_t i = 0; i < n; ++i) {
        ids.push_back("j" + std::to_string(i));
        deps.push_back(i + 1 < n ? std::vector<std::string>{"j" + std::to_string(i + 1)}
                                 : std::vector<std::string>{});
    }
    const auto order = flow_order(ids, deps);
    ASSERT_EQ(order.size(), n);
    EXPECT_EQ(order.front(), n - 1);
    EXPECT_EQ(order.back(), 0U);
}

TEST(JobFlow, CyclesAreRefusedNamingTheirJobs) {
    try {
        (void)flow_order({"a", "b", "c"}, deps_t{{"b"}, {"c"}, {"a"}});
        FAIL() << "a cycle was ordered";
    } catch (const dependency_cycle& e) {
        EXPECT_NE(std::string(e.what()).find("a -> b -> c -> a"), std::string::npos) << e.what();
    }
    EXPECT_THROW((void)flow_order({"s"}, deps_t{{"s"}}), dependency_cycle);
    // A diamond is no cycle.
    EXPECT_NO_THROW(
        (void)flow_order({"top", "l", "r", "base"}, deps_t{{"l", "r"}, {"base"}, {"base"}, {}}));
}

TEST(JobFlow, AFlowIsFlattenedChildrenFirstEachParentDependingOnThem) {
    flow_job root{"root", {.id = "root"}, {}};
    flow_job mid{"mid", {.id = "mid"}, {}};
    mid.children.push_back({"leaf", {}, {}});  // a random id
    root.children.push_back(mid);
    root.children.push_back({"other", {.id = "other"}, {}});
    const auto jobs = detail::flatten_flow(root);
    ASSERT_EQ(jobs.size(), 4U);
    EXPECT_EQ(jobs[0].first, "leaf");
    EXPECT_FALSE(jobs[0].second.id.empty());
    EXPECT_EQ(jobs[1].second.id, "mid");
    EXPECT_EQ(jobs[1].second.depends_on, (std::vector<std::string>{jobs[0].second.id}));
    EXPECT_EQ(jobs[2].second.id, "other");
    EXPECT_EQ(jobs[3].second.id, "root");
    EXPECT_EQ(jobs[3].second.depends_on, (std::vector<std::string>{"mid", "other"}));
}

TEST(JobFlow, DependencyChecksAreTypedErrors) {
    job_options o;
    o.depends_on.assign(max_job_dependencies, "x");
    EXPECT_THROW(detail::check_dependencies(o), too_many_dependencies);  // duplicates
    o.depends_on.clear();
    for (std::size_t i = 0; i <= max_job_dependencies; ++i)
        o.depends_on.push_back(std::to_string(i));
    EXPECT_THROW(detail::check_dependencies(o), too_many_dependencies);
    o.depends_on.pop_back();
    EXPECT_NO_THROW(detail::check_dependencies(o));
    o.depends_on = {"bad\nid"};
    EXPECT_THROW(detail::check_dependencies(o), invalid_argument);
}

TEST(JobFlow, TheScriptsRefusalsBecomeTypedErrorsNamingTheJobs) {
    std::vector<std::pair<std::string, job_options>> sent{{"a", {.id = "a"}}, {"b", {.id = "b"}}};
    sent[1].second.depends_on = {"a", "ghost"};
    try {
        detail::throw_if_dependency_refusal("UNKNOWNDEP 2 2", sent);
        FAIL();
    } catch (const unknown_dependency& e) {
        EXPECT_EQ(e.dependency(), "ghost");
        EXPECT_EQ(e.job(), "b");
    }
    EXPECT_THROW(detail::throw_if_dependency_refusal("ERR TOOMANYDEPS 1", sent),
                 too_many_dependencies);
    EXPECT_NO_THROW(detail::throw_if_dependency_refusal("ERR something else", sent));
}
