// The typed codecs of the jobs scripts' replies (jobs/src/job_replies.hpp), without a server:
// each decodes the documented shape, and each refuses a malformed reply with protocol_error
// (never std::out_of_range, std::invalid_argument or a silently wrong value).
#include "job_replies.hpp"

#include <redcoord/core/errors.hpp>

#include <gtest/gtest.h>

using namespace redcoord;
using namespace redcoord::detail;

namespace {

reply s(std::string v) { return reply::make_text(reply::kind::string, std::move(v)); }
reply i(std::int64_t v) { return reply::make_integer(v); }
reply a(std::vector<reply> v) { return reply::make_array(std::move(v)); }
reply nil() { return reply{}; }

reply job(std::string id, std::int64_t attempt = 1, std::string timeout = "0") {
    return a({s(std::move(id)), s("payload"), i(attempt), s("3 5 e 1000 60000 0.000000"),
              s(std::move(timeout)), s("123")});
}

}  // namespace

TEST(JobReplies, ClaimDecodesItsJobsStalledIdsAndWait) {
    auto with_deps = job("c", 2, "500").elements();
    with_deps.push_back(a({s("d1"), s("r1"), s("d2"), nil()}));
    const auto c = decode_claim(a({i(2), a({s("x"), s("y")}), i(-1), job("b"), a(with_deps)}));
    EXPECT_EQ(c.stalled, (std::vector<std::string>{"x", "y"}));
    ASSERT_EQ(c.jobs.size(), 2u);
    EXPECT_EQ(c.jobs[0].id, "b");
    EXPECT_EQ(c.jobs[0].payload, "payload");
    EXPECT_EQ(c.jobs[0].options.priority, 3);
    EXPECT_EQ(c.jobs[0].options.max_attempts, 5u);
    EXPECT_EQ(c.jobs[0].score, "123");
    EXPECT_EQ(c.jobs[1].attempt, 2u);
    EXPECT_EQ(c.jobs[1].timeout, std::chrono::milliseconds(500));
    // A dependency whose result expired has none.
    EXPECT_EQ(c.jobs[1].dependency_results, (std::map<std::string, std::string>{{"d1", "r1"}}));
    const auto empty = decode_claim(a({i(0), a({}), i(250)}));
    EXPECT_TRUE(empty.jobs.empty());
    EXPECT_EQ(empty.wait_ms, 250);
}

TEST(JobReplies, MalformedClaimsAreProtocolErrors) {
    const std::vector<reply> bad{
        s("OK"),                                       // not an array
        a({i(0), a({})}),                              // too short
        a({i(1), a({}), i(-1)}),                       // claims one, holds none
        a({i(0), a({}), i(-1), job("a")}),             // holds one, claims none
        a({s("1"), a({}), i(-1), job("a")}),           // count as text
        a({i(1), s("x"), i(-1), job("a")}),            // stalled not an array
        a({i(1), a({i(5)}), i(-1), job("a")}),         // a stalled id not text
        a({i(1), a({}), i(-1), a({s("a"), s("p")})}),  // a job too short
        a({i(1), a({}), i(-1), job("a", 0)}),          // attempt 0
        a({i(1), a({}), i(-1), job("a", 1, "soon")}),  // timeout not a number
        a({i(1), a({}), i(-1), job("a", 1, "12ms")}),  // trailing junk
        a({i(1), a({}), i(-1), a({s("a"), s("p"), i(1), s("junk"), s("0"), s("1")})}),  // options
        a({i(1), a({}), i(-1),
           a({s("a"), s("p"), i(1), s("0 1 e 1 1 0"), s("0"), s("1"), a({s("d")})})}),  // deps
    };
    for (std::size_t n = 0; n < bad.size(); ++n)
        EXPECT_THROW((void)decode_claim(bad[n]), protocol_error) << "case " << n;
}

TEST(JobReplies, SettleDecodesEachOutcomeAndTheClaim) {
    const auto r = decode_settle(
        a({a({i(1), i(0), s("delayed"), nil()}), a({i(1), a({}), i(-1), job("n")})}), 4, true);
    ASSERT_EQ(r.outcomes.size(), 4u);
    EXPECT_TRUE(r.outcomes[0].held);
    EXPECT_FALSE(r.outcomes[1].held);
    EXPECT_TRUE(r.outcomes[2].held);
    EXPECT_EQ(r.outcomes[2].new_state, "delayed");
    EXPECT_FALSE(r.outcomes[3].held);
    ASSERT_TRUE(r.claim);
    EXPECT_EQ(r.claim->jobs.at(0).id, "n");
    EXPECT_FALSE(decode_settle(a({a({i(1)})}), 1, false).claim);
}

TEST(JobReplies, MalformedSettlementsAreProtocolErrors) {
    EXPECT_THROW((void)decode_settle(i(1), 1, false), protocol_error);
    EXPECT_THROW((void)decode_settle(a({a({})}), 1, false), protocol_error);            // too few
    EXPECT_THROW((void)decode_settle(a({a({i(1), i(1)})}), 1, false), protocol_error);  // too many
    EXPECT_THROW((void)decode_settle(a({a({i(7)})}), 1, false), protocol_error);
    EXPECT_THROW((void)decode_settle(a({a({s("sideways")})}), 1, false), protocol_error);
    EXPECT_THROW((void)decode_settle(a({a({a({})})}), 1, false), protocol_error);
    EXPECT_THROW((void)decode_settle(a({a({i(1)})}), 1, true), protocol_error);  // no claim
    EXPECT_THROW((void)decode_settle(a({a({i(1)}), s("x")}), 1, true), protocol_error);
}

TEST(JobReplies, HeartbeatAnswersAreHeldLostOrCancelled) {
    const auto r = decode_heartbeat(a({i(1), i(0), i(2)}), 3);
    EXPECT_EQ(r, (std::vector<beat_status>{beat_status::held, beat_status::lost,
                                           beat_status::cancelled}));
    EXPECT_THROW((void)decode_heartbeat(a({i(1)}), 2), protocol_error);
    EXPECT_THROW((void)decode_heartbeat(a({i(1), i(1)}), 1), protocol_error);
    EXPECT_THROW((void)decode_heartbeat(a({i(3)}), 1), protocol_error);
    EXPECT_THROW((void)decode_heartbeat(a({s("1")}), 1), protocol_error);
    EXPECT_THROW((void)decode_heartbeat(nil(), 1), protocol_error);
}

TEST(JobReplies, AddAnswersCodeAndStatePerJob) {
    const auto r = decode_add(a({i(1), s("waiting"), i(0), s("completed"), i(2), s("delayed")}), 3);
    ASSERT_EQ(r.size(), 3u);
    EXPECT_TRUE(r[0].added);
    EXPECT_FALSE(r[1].added);
    EXPECT_EQ(r[1].state, job_state::completed);
    EXPECT_TRUE(r[2].debounced);
    EXPECT_THROW((void)decode_add(a({i(1), s("waiting")}), 2), protocol_error);
    EXPECT_THROW((void)decode_add(a({i(1), s("napping")}), 1), protocol_error);
    EXPECT_THROW((void)decode_add(a({i(9), s("waiting")}), 1), protocol_error);
    EXPECT_THROW((void)decode_add(a({s("1"), s("waiting")}), 1), protocol_error);
}

TEST(JobReplies, GetDecodesFieldsResultDueAndTheFlow) {
    const auto g =
        decode_get(a({a({s("state"), s("delayed"), s("attempts"), s("2"), s("o"),
                         s("4 3 f 10 10 0"), s("added"), s("1000"), s("deps"), s("a\nb")}),
                      s("res"), s("5000"), a({s("b"), s("a")}), a({s("p")})}));
    ASSERT_TRUE(g);
    const auto j = to_job_info("j", *g);
    EXPECT_EQ(j.state, job_state::delayed);
    EXPECT_EQ(j.attempts, 2u);
    EXPECT_EQ(j.priority, 4);
    EXPECT_EQ(j.max_attempts, 3u);
    EXPECT_EQ(j.result, "res");
    ASSERT_TRUE(j.due_at);
    EXPECT_EQ(j.due_at->time_since_epoch(), std::chrono::milliseconds(5000));
    EXPECT_EQ(j.dependencies, (std::vector<std::string>{"a", "b"}));
    EXPECT_EQ(j.pending_dependencies, (std::vector<std::string>{"a", "b"}));  // sorted
    EXPECT_EQ(j.dependents, (std::vector<std::string>{"p"}));
    EXPECT_FALSE(decode_get(a({a({}), nil(), nil()})));
}

TEST(JobReplies, MalformedGetsAreProtocolErrors) {
    EXPECT_THROW((void)decode_get(a({a({s("state")}), nil(), nil()})), protocol_error);  // odd
    EXPECT_THROW((void)decode_get(a({a({s("state"), s("waiting")})})), protocol_error);  // short
    EXPECT_THROW((void)decode_get(a({a({s("a"), s("b")}), nil(), s("later")})), protocol_error);
    const auto g = [](std::string f, std::string v) {
        return *decode_get(a({a({s(std::move(f)), s(std::move(v))}), nil(), nil()}));
    };
    EXPECT_THROW((void)to_job_info("j", g("state", "napping")), protocol_error);
    EXPECT_THROW((void)to_job_info("j", g("attempts", "two")), protocol_error);
    EXPECT_THROW((void)to_job_info("j", g("attempts", "-1")), protocol_error);
    EXPECT_THROW((void)to_job_info("j", g("o", "x")), protocol_error);
    EXPECT_THROW((void)to_job_info("j", g("added", "")), protocol_error);
}

TEST(JobReplies, StatesFlagsAndCounts) {
    EXPECT_EQ(decode_state_or_nil(s("waiting"), "jobs_cancel"), job_state::waiting);
    EXPECT_EQ(decode_state_or_nil(nil(), "jobs_cancel"), std::nullopt);
    EXPECT_THROW((void)decode_state_or_nil(s("gone"), "jobs_cancel"), protocol_error);
    EXPECT_THROW((void)decode_state_or_nil(i(1), "jobs_cancel"), protocol_error);
    EXPECT_TRUE(decode_flag(i(1), "jobs_pause"));
    EXPECT_FALSE(decode_flag(i(0), "jobs_pause"));
    EXPECT_THROW((void)decode_flag(i(2), "jobs_pause"), protocol_error);
    EXPECT_THROW((void)decode_flag(s("1"), "jobs_pause"), protocol_error);
    EXPECT_EQ(decode_count(i(42), "jobs_clean"), 42u);
    EXPECT_THROW((void)decode_count(i(-1), "jobs_clean"), protocol_error);
    EXPECT_THROW((void)decode_count(nil(), "jobs_clean"), protocol_error);
}

TEST(JobReplies, RepeatListAndItsMalformations) {
    const auto r = decode_repeat_list(
        a({i(99), a({a({s("r"), s("0"), s("*/5 * * * *"), s("UTC"), s("skip"), s("42")}),
                     a({s("e"), s("1000"), nil(), nil(), nil(), nil()})})}));
    EXPECT_EQ(r.now_ms, 99);
    ASSERT_EQ(r.repeats.size(), 2u);
    EXPECT_EQ(r.repeats[0].cron, "*/5 * * * *");
    EXPECT_EQ(r.repeats[0].last_tick_ms, 42);
    EXPECT_EQ(r.repeats[1].every, std::chrono::milliseconds(1000));
    EXPECT_THROW((void)decode_repeat_list(a({i(1)})), protocol_error);
    EXPECT_THROW((void)decode_repeat_list(a({i(1), a({a({s("r")})})})), protocol_error);
    EXPECT_THROW(
        (void)decode_repeat_list(a({i(1), a({a({s("r"), s("x"), nil(), nil(), nil(), nil()})})})),
        protocol_error);
}

TEST(JobReplies, InspectAndItsMalformations) {
    const auto v =
        decode_inspect(a({i(1000), a({i(1), i(2), i(3), i(4), i(5), i(6), i(7)}), s("400"),
                          s("host:1"), s("3"), a({}), i(1), a({a({s("g"), i(2), i(1), i(5)})})}));
    EXPECT_EQ(v.counts.waiting, 1u);
    EXPECT_EQ(v.counts.waiting_children, 7u);
    EXPECT_EQ(v.oldest_waiting_added_ms, 400);
    EXPECT_EQ(v.scheduler, "host:1");
    EXPECT_EQ(v.scheduler_epoch, 3u);
    EXPECT_TRUE(v.paused);
    ASSERT_EQ(v.groups.size(), 1u);
    EXPECT_EQ(v.groups[0].limit, 5u);
    EXPECT_THROW((void)decode_inspect(a({i(1), a({})})), protocol_error);
    EXPECT_THROW((void)decode_inspect(a({i(1), a({i(1)}), nil(), nil(), nil(), a({})})),
                 protocol_error);
    EXPECT_THROW((void)decode_inspect(a({i(1), a({i(1), i(1), i(1), i(1), i(1), i(1)}), nil(),
                                         nil(), nil(), a({}), i(0), a({a({s("g")})})})),
                 protocol_error);
}
