// `redcoord jobs`: add with options, get, cancel, retry, remove, clean, list, stats, against
// jobs that a job_worker in this process runs.
#include "cli_harness.hpp"

#include <redcoord/core/pool.hpp>
#include <redcoord/jobs/job_queue.hpp>
#include <redcoord/jobs/job_scheduler.hpp>
#include <redcoord/jobs/job_worker.hpp>

#include <atomic>

#include <signal.h>  // NOLINT(modernize-deprecated-headers): POSIX signal numbers

using namespace cli_test;
using namespace std::chrono_literals;

namespace {

struct JobsCli : ::testing::Test {
    redcoord::testing::local_server server;
    temp_dir dir;
    std::string url = server.url();

    result j(std::vector<std::string> args) {
        args.insert(args.begin(), {"--redis", url, "jobs"});
        return run(dir, args);
    }
    result jj(std::vector<std::string> args) {
        args.insert(args.begin(), {"--redis", url, "--json", "jobs"});
        return run(dir, args);
    }
};

}  // namespace

TEST_F(JobsCli, AddRunGetListAndStats) {
    auto add = j({"add", "mail", "to alice", "to bob", "--priority", "3"});
    ASSERT_EQ(add.status, 0) << add.output;
    const auto ids = lines_of(add.output);
    ASSERT_EQ(ids.size(), 2U);
    auto dup = jj({"add", "mail", "again", "--id", ids[0]});
    EXPECT_EQ(dup.status, 0) << dup.output;
    EXPECT_EQ(dup.output, "{\"id\":\"" + ids[0] + "\",\"added\":false,\"state\":\"waiting\"}\n");
    auto listed = j({"list", "mail"});
    EXPECT_EQ(lines_of(listed.output), ids);

    redcoord::connection_pool pool(redcoord::parse_endpoint(url));
    redcoord::job_queue q(pool, "mail");
    redcoord::job_worker w(q, [](redcoord::job_context& c) { return "sent " + c.payload(); });
    w.start();
    ASSERT_TRUE(eventually([&] { return q.counts().completed == 2; }));
    w.stop();
    auto got = jj({"get", "mail", ids[1]});
    EXPECT_EQ(got.status, 0) << got.output;
    EXPECT_TRUE(contains(got.output, "\"state\":\"completed\"")) << got.output;
    EXPECT_TRUE(contains(got.output, "\"result\":\"sent to bob\"")) << got.output;
    EXPECT_TRUE(contains(got.output, "\"priority\":3")) << got.output;
    auto stats = jj({"stats", "mail"});
    EXPECT_EQ(stats.output,
              "{\"name\":\"mail\",\"waiting\":0,\"delayed\":0,\"active\":0,\"completed\":2,"
              "\"failed\":0,\"dead\":0,\"waiting_children\":0,\"paused\":false}\n");
    EXPECT_EQ(lines_of(j({"list", "mail", "--state", "completed"}).output).size(), 2U);
    EXPECT_EQ(j({"get", "mail", "nope"}).status, code::no);
}

TEST_F(JobsCli, CancelAndRetryADelayedJob) {
    auto add = j({"add", "later", "x", "--id", "job-1", "--delay", "1h"});
    ASSERT_EQ(add.status, 0) << add.output;
    EXPECT_EQ(j({"list", "later", "--state", "delayed"}).output, "job-1\n");
    auto cancel = j({"cancel", "later", "job-1"});
    EXPECT_EQ(cancel.status, 0) << cancel.output;
    EXPECT_EQ(cancel.output, "was delayed\n");
    EXPECT_TRUE(contains(jj({"get", "later", "job-1"}).output, "\"state\":\"failed\""));
    EXPECT_EQ(j({"cancel", "later", "nope"}).status, code::no);
    EXPECT_EQ(j({"retry", "later", "job-1"}).status, 0);
    EXPECT_EQ(j({"retry", "later", "job-1"}).status, code::no);  // waiting now
    EXPECT_EQ(j({"list", "later"}).output, "job-1\n");
}

TEST_F(JobsCli, RemoveAndCleanFinishedJobs) {
    ASSERT_EQ(j({"add", "tidy", "x", "--id", "a"}).status, 0);
    ASSERT_EQ(j({"add", "tidy", "x", "--id", "b"}).status, 0);
    ASSERT_EQ(j({"add", "tidy", "x", "--id", "c"}).status, 0);
    for (const char* id : {"a", "b", "c"}) ASSERT_EQ(j({"cancel", "tidy", id}).status, 0);
    auto removed = j({"remove", "tidy", "a"});
    EXPECT_EQ(removed.status, 0) << removed.output;
    EXPECT_EQ(removed.output, "removed failed\n");
    EXPECT_EQ(j({"remove", "tidy", "a"}).status, code::no);
    EXPECT_EQ(j({"clean", "tidy", "--older-than", "1h"}).output, "removed 0\n");
    EXPECT_EQ(jj({"clean", "tidy", "--state", "failed"}).output,
              "{\"name\":\"tidy\",\"state\":\"failed\",\"removed\":2}\n");
    EXPECT_EQ(j({"list", "tidy", "--state", "failed"}).output, "");
    EXPECT_EQ(j({"clean", "tidy", "--state", "waiting"}).status, code::usage);
}

TEST_F(JobsCli, BadOptionsAreUsageErrors) {
    EXPECT_EQ(j({"add", "q", "x", "--priority", "12"}).status, code::usage);
    EXPECT_EQ(j({"add", "q", "x", "y", "--id", "one"}).status, code::usage);
    EXPECT_EQ(j({"list", "q", "--state", "sleeping"}).status, code::usage);
    EXPECT_EQ(j({"add", "q", "x", "--delay", "soon"}).status, code::usage);
}

TEST_F(JobsCli, InspectShowsCountsTheSchedulerAndTheRepeats) {
    redcoord::connection_pool pool(redcoord::parse_endpoint(url));
    redcoord::job_queue q(pool, "ops");
    (void)q.add("a");
    (void)q.add("b", {.delay = 1h});
    redcoord::repeat_options r;
    r.cron = "0 9 * * mon-fri";
    r.time_zone = "Europe/Berlin";
    q.repeat("morning", "m", r);
    redcoord::job_scheduler s(q, {.identity = "sched-1"});
    s.start();
    ASSERT_TRUE(eventually([&] { return s.is_leader(); }));
    auto text = run(dir, {"--redis", url, "inspect", "jobs", "ops"});
    EXPECT_EQ(text.status, 0) << text.output;
    EXPECT_TRUE(contains(text.output, "1 waiting, 1 delayed, 0 active")) << text.output;
    EXPECT_TRUE(contains(text.output, "scheduler         sched-1 (epoch ")) << text.output;
    EXPECT_TRUE(contains(text.output, "repeat morning: cron '0 9 * * mon-fri' in Europe/Berlin"))
        << text.output;
    auto json = run(dir, {"--redis", url, "--json", "inspect", "jobs", "ops"});
    EXPECT_TRUE(
        contains(json.output, "\"kind\":\"jobs\",\"name\":\"ops\",\"waiting\":1,\"delayed\":1"))
        << json.output;
    EXPECT_TRUE(contains(json.output, "\"scheduler\":\"sched-1\"")) << json.output;
    s.stop();
}

TEST_F(JobsCli, PauseAndResumeAreSharedAndSayWhatChanged) {
    auto paused = j({"pause", "work"});
    EXPECT_EQ(paused.status, 0) << paused.output;
    EXPECT_EQ(paused.output, "paused\n");
    EXPECT_EQ(j({"pause", "work"}).status, code::no);  // already paused
    EXPECT_EQ(j({"stats", "work"}).output,
              "waiting 0\ndelayed 0\nactive 0\ncompleted 0\nfailed 0\ndead 0\nwaiting_children "
              "0\npaused\n");
    auto inspected = run(dir, {"--redis", url, "inspect", "jobs", "work"});
    EXPECT_TRUE(contains(inspected.output, "(paused)")) << inspected.output;
    redcoord::connection_pool pool(redcoord::parse_endpoint(url));
    redcoord::job_queue q(pool, "work");
    EXPECT_TRUE(q.paused());
    auto resumed = jj({"resume", "work"});
    EXPECT_EQ(resumed.status, 0) << resumed.output;
    EXPECT_EQ(resumed.output, "{\"name\":\"work\",\"paused\":false,\"changed\":true}\n");
    EXPECT_EQ(j({"resume", "work"}).status, code::no);  // already running
    EXPECT_FALSE(q.paused());
}

TEST_F(JobsCli, RepeatRegistersReplacesAndRemovesARepeatableJob) {
    auto r = j({"repeat", "rep", "nightly", "backup", "--cron", "0 3 * * *", "--tz",
                "Europe/Berlin", "--priority", "2", "--skip-missed"});
    EXPECT_EQ(r.status, 0) << r.output;
    EXPECT_EQ(r.output, "repeat nightly registered\n");
    auto text = run(dir, {"--redis", url, "inspect", "jobs", "rep"});
    EXPECT_TRUE(contains(text.output,
                         "repeat nightly: cron '0 3 * * *' in Europe/Berlin, "
                         "missed ticks skip"))
        << text.output;
    EXPECT_EQ(jj({"repeat", "rep", "nightly", "backup", "--every", "1h"}).output,
              "{\"name\":\"rep\",\"repeat\":\"nightly\"}\n");
    text = run(dir, {"--redis", url, "inspect", "jobs", "rep"});
    EXPECT_TRUE(contains(text.output, "repeat nightly: every 1h")) << text.output;
    EXPECT_EQ(j({"repeat", "rep", "nightly", "--remove"}).output, "removed\n");
    EXPECT_EQ(j({"repeat", "rep", "nightly", "--remove"}).status, code::no);
    text = run(dir, {"--redis", url, "inspect", "jobs", "rep"});
    EXPECT_FALSE(contains(text.output, "repeat nightly")) << text.output;
}

TEST_F(JobsCli, RepeatRefusesBadSchedules) {
    EXPECT_EQ(j({"repeat", "rep", "r", "x"}).status, code::usage);  // neither
    EXPECT_EQ(j({"repeat", "rep", "r", "x", "--every", "1h", "--cron", "* * * * *"}).status,
              code::usage);
    EXPECT_EQ(j({"repeat", "rep", "r", "x", "--cron", "61 * * * *"}).status, code::usage);
    EXPECT_EQ(j({"repeat", "rep", "r", "x", "--cron", "* * * * *", "--tz", "Mars/Olympus"}).status,
              code::usage);
    EXPECT_EQ(j({"repeat", "rep", "r", "--every", "1h"}).status, code::usage);  // no payload
    EXPECT_EQ(j({"repeat", "rep", "r", "--remove", "--every", "1h"}).status, code::usage);
}

TEST_F(JobsCli, WorkWithTheSchedulerRunsTheRepeatsTicks) {
    ASSERT_EQ(j({"repeat", "ticks", "often", "tick", "--every", "200ms"}).status, 0);
    const std::string ran = dir.file("ran");
    cli_process p({"--redis", url, "jobs", "work", "ticks", "--scheduler", "--", "sh", "-c",
                   "cat >> " + ran + "; echo >> " + ran},
                  dir.file("worker.out"));
    ASSERT_TRUE(eventually([&] { return lines_of(read_file(ran)).size() >= 3; }, 30s))
        << p.output();
    for (const auto& l : lines_of(read_file(ran))) EXPECT_EQ(l, "tick");
    const auto ids = lines_of(j({"list", "ticks", "--state", "completed"}).output);
    ASSERT_FALSE(ids.empty());
    EXPECT_EQ(ids[0].rfind("repeat:often:", 0), 0U) << ids[0];
    p.signal(SIGTERM);
    EXPECT_EQ(p.wait_for(20s), std::optional<int>(0)) << p.output();
}

// Flows from the command line (issue 37 item 2): --after makes a job wait for others, `get`
// shows its dependencies and dependents, an unknown id is a usage error that adds nothing.
TEST_F(JobsCli, AddAfterWaitsForTheNamedJobsAndGetShowsTheFlow) {
    ASSERT_EQ(j({"add", "etl", "extract", "--id", "a"}).status, 0);
    ASSERT_EQ(j({"add", "etl", "transform", "--id", "b"}).status, 0);
    auto p = jj({"add", "etl", "load", "--id", "p", "--after", "a,b"});
    ASSERT_EQ(p.status, 0) << p.output;
    EXPECT_EQ(p.output, "{\"id\":\"p\",\"added\":true,\"state\":\"waiting_children\"}\n");
    auto got = jj({"get", "etl", "p"});
    EXPECT_TRUE(contains(got.output, "\"dependencies\":[\"a\",\"b\"]")) << got.output;
    EXPECT_TRUE(contains(got.output, "\"pending_dependencies\":[\"a\",\"b\"]")) << got.output;
    auto text = j({"get", "etl", "a"});
    EXPECT_TRUE(contains(text.output, "dependents p\n")) << text.output;
    EXPECT_EQ(lines_of(j({"list", "etl", "--state", "waiting_children"}).output),
              std::vector<std::string>{"p"});
    auto inspected = jj({"stats", "etl"});
    EXPECT_TRUE(contains(inspected.output, "\"waiting_children\":1")) << inspected.output;

    auto bad = j({"add", "etl", "orphan", "--id", "o", "--after", "a,ghost"});
    EXPECT_EQ(bad.status, code::usage) << bad.output;
    EXPECT_TRUE(contains(bad.output, "ghost")) << bad.output;
    EXPECT_EQ(j({"get", "etl", "o"}).status, code::no);

    redcoord::connection_pool pool(redcoord::parse_endpoint(url));
    redcoord::job_queue q(pool, "etl");
    std::atomic<bool> parent_saw_both{false};
    redcoord::job_worker w(q, [&](redcoord::job_context& c) {
        if (c.id() == "p") parent_saw_both = c.dependency_results().size() == 2;
        return "did " + c.payload();
    });
    w.start();
    ASSERT_TRUE(eventually([&] { return q.counts().completed == 3; }));
    w.stop();
    EXPECT_TRUE(parent_saw_both);
    auto done = j({"get", "etl", "p"});
    EXPECT_TRUE(contains(done.output, "dependencies a,b\n")) << done.output;
    EXPECT_TRUE(contains(done.output, "state completed")) << done.output;
}

// Groups, dedupe windows and debounce from the command line (issue 37 items 3 and 4).
TEST_F(JobsCli, AddWithGroupDedupeAndDebounceAndInspectShowsTheGroups) {
    EXPECT_EQ(j({"group-limit", "tenants", "acme", "2"}).output, "0\n");
    auto added = jj({"add", "tenants", "--group", "acme", "one", "two", "three"});
    EXPECT_EQ(added.status, 0) << added.output;
    EXPECT_TRUE(contains(added.output, "\"added\":true,\"state\":\"waiting\"")) << added.output;
    auto text = run(dir, {"--redis", url, "inspect", "jobs", "tenants"});
    EXPECT_TRUE(contains(text.output, "3 waiting")) << text.output;
    EXPECT_TRUE(contains(text.output, "group acme: 3 waiting, 0 active, limit 2")) << text.output;
    auto json = run(dir, {"--redis", url, "--json", "inspect", "jobs", "tenants"});
    EXPECT_TRUE(contains(json.output,
                         "\"groups\":[{\"name\":\"acme\",\"waiting\":3,\"active\":0,\"limit\":2}]"))
        << json.output;
    // Debounce: the second add replaces the first one's payload.
    EXPECT_EQ(j({"add", "tenants", "--id", "save", "--debounce", "1h", "v1"}).output, "save\n");
    EXPECT_EQ(j({"add", "tenants", "--id", "save", "--debounce", "1h", "v2"}).output,
              "save (debounced, delayed)\n");
    EXPECT_TRUE(contains(j({"get", "tenants", "save"}).output, "v2"));
    EXPECT_TRUE(contains(jj({"add", "tenants", "--id", "save", "--debounce", "1h", "v3"}).output,
                         "\"added\":false,\"debounced\":true,\"state\":\"delayed\""));
    // Dedupe window, and bad input.
    EXPECT_EQ(j({"add", "tenants", "--id", "d", "--dedupe-for", "1h", "x"}).status, 0);
    EXPECT_EQ(j({"add", "tenants", "--id", "d", "--dedupe-for", "1h", "x"}).output,
              "d (already known, waiting)\n");
    EXPECT_EQ(j({"add", "tenants", "--group", "a}b", "x"}).status, code::usage);
    EXPECT_EQ(j({"add", "tenants", "--debounce", "1s", "x"}).status, code::usage);  // no --id
    EXPECT_EQ(j({"group-limit", "tenants", "{x", "1"}).status, code::usage);
}
