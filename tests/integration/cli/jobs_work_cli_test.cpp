// `redcoord jobs work QUEUE -- CMD`: a worker in any language. Jobs added here (job_queue) run
// as real child processes of a real `redcoord`; their outcome is read back from the server.
#include "cli_harness.hpp"

#include <redcoord/core/pool.hpp>
#include <redcoord/jobs/job_queue.hpp>
#include <redcoord/testing/wait.hpp>

#include <signal.h>  // NOLINT(modernize-deprecated-headers): POSIX kill

#include <cerrno>

using namespace cli_test;
using namespace std::chrono_literals;

namespace {

// `d` as a CLI duration ("1500ms"), longer under a sanitizer: the leases and timeouts below
// must outlast starting CMD, which a sanitizer-built CLI on a loaded machine (the full
// ThreadSanitizer suite) was seen to take more than 800 ms over.
std::chrono::milliseconds stretched(std::chrono::milliseconds d) {
    return d * redcoord::testing::sanitizer_stretch();
}
std::string arg(std::chrono::milliseconds d) { return std::to_string(stretched(d).count()) + "ms"; }

// True when the process `pid` has ended: it no longer exists, or is a zombie (its parent, the
// worker, may be paused and not reap it yet).
bool gone(pid_t pid) {
    if (::kill(pid, 0) != 0 && errno == ESRCH) return true;
    const auto stat = read_file("/proc/" + std::to_string(pid) + "/stat");
    const auto close = stat.rfind(')');
    return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] == 'Z';
}

std::vector<pid_t> pids_in(const std::string& file) {
    std::vector<pid_t> out;
    for (const auto& l : lines_of(read_file(file)))
        if (!l.empty()) out.push_back(static_cast<pid_t>(std::stol(l)));
    return out;
}

struct JobsWorkCli : ::testing::Test {
    redcoord::testing::local_server server;
    temp_dir dir;
    std::string url = server.url();
    redcoord::connection_pool pool{redcoord::parse_endpoint(url)};
    redcoord::job_queue q{pool, "work"};

    cli_process work(std::vector<std::string> options, const std::string& script) {
        std::vector<std::string> args{"--redis", url, "jobs", "work", "work"};
        args.insert(args.end(), options.begin(), options.end());
        args.insert(args.end(), {"--", "sh", "-c", script});
        return cli_process(args, dir.file("worker.out"));
    }
    std::optional<redcoord::job_info> job(const std::string& id) { return q.get(id); }
    // Adds a job of two attempts whose first ignores SIGTERM and never ends (its pid is the
    // first line of `pids`) and whose second completes, and starts a worker with a 1 s lease;
    // returns the job's id and the worker once the first attempt runs.
    std::pair<std::string, cli_process> hang_first_attempt(const std::string& pids) {
        const auto id =
            q.add("x", {.max_attempts = 2, .backoff = redcoord::backoff_policy::fixed(10ms)}).id;
        auto p = work({"--lease", arg(1s), "--grace", "300ms"},
                      "echo $$ >> " + pids +
                          "; [ \"$REDCOORD_JOB_ATTEMPT\" = 2 ] && exit 0; "
                          "trap '' TERM; exec sleep 1000");
        EXPECT_TRUE(eventually([&] { return pids_in(pids).size() == 1; }, 30s)) << p.output();
        return {id, std::move(p)};
    }
    bool in_state(const std::string& id, redcoord::job_state s) {
        auto j = q.get(id);
        return j && j->state == s;
    }
};

}  // namespace

TEST_F(JobsWorkCli, PayloadOnStdinEnvironmentProgressAndStdoutAsResult) {
    const auto a = q.add("hello").id;
    const auto b = q.add(std::string("bin\0ary", 7)).id;
    auto p = work({},
                  "printf 'got:'; cat; printf ' id=%s attempt=%s' \"$REDCOORD_JOB_ID\" "
                  "\"$REDCOORD_JOB_ATTEMPT\"; echo \"progress half way\" >&3; "
                  "echo 'not progress' >&3; [ -z \"$REDCOORD_DEADLINE_MS\" ]");
    ASSERT_TRUE(eventually([&] { return q.counts().completed == 2; }, 30s)) << p.output();
    const auto ja = job(a);
    ASSERT_TRUE(ja && ja->result);
    EXPECT_EQ(*ja->result, "got:hello id=" + a + " attempt=1");
    EXPECT_EQ(ja->progress, "half way");
    const auto jb = job(b);
    ASSERT_TRUE(jb && jb->result);
    EXPECT_EQ(*jb->result, "got:" + std::string("bin\0ary", 7) + " id=" + b + " attempt=1");
    p.signal(SIGTERM);
    const auto st = p.wait_for(20s);
    ASSERT_TRUE(st.has_value()) << p.output();
    EXPECT_EQ(*st, 0) << p.output();
}

TEST_F(JobsWorkCli, NonZeroExitIsRetriedThenDeadWithStatusAndStderr) {
    const auto id =
        q.add("x", {.max_attempts = 2, .backoff = redcoord::backoff_policy::fixed(10ms)}).id;
    auto p = work({}, "echo \"attempt $REDCOORD_JOB_ATTEMPT\" >> " + dir.file("runs") +
                          "; echo 'disk full' >&2; exit 3");
    ASSERT_TRUE(eventually([&] { return in_state(id, redcoord::job_state::dead); }, 30s))
        << p.output();
    const auto j = job(id);
    EXPECT_EQ(j->attempts, 2U);
    EXPECT_EQ(j->error, "exit status 3: disk full");
    EXPECT_EQ(read_file(dir.file("runs")), "attempt 1\nattempt 2\n");
    p.signal(SIGINT);
    EXPECT_EQ(p.wait_for(20s), std::optional<int>(0)) << p.output();
}

TEST_F(JobsWorkCli, TimeoutStopsTheWholeProcessGroup) {
    const std::string pids = dir.file("pids");
    const auto id = q.add("x", {.max_attempts = 1}).id;
    // CMD ignores SIGTERM and leaves a grandchild: both must be gone (SIGKILL after --grace).
    auto p = work({"--timeout", arg(500ms), "--grace", "300ms"},
                  "trap '' TERM; sleep 1000 & echo $! > " + pids + "; echo $$ >> " + pids +
                      "; echo \"$REDCOORD_DEADLINE_MS\" > " + dir.file("deadline") + "; wait");
    ASSERT_TRUE(eventually([&] { return in_state(id, redcoord::job_state::dead); }, 30s))
        << p.output();
    EXPECT_TRUE(contains(job(id)->error, "timed out: CMD was stopped")) << job(id)->error;
    const auto ms = std::stol(read_file(dir.file("deadline")));
    EXPECT_GT(ms, 0);
    EXPECT_LE(ms, stretched(500ms).count());
    const auto started = pids_in(pids);
    ASSERT_EQ(started.size(), 2U);
    for (auto pid : started) EXPECT_TRUE(eventually([&] { return gone(pid); })) << pid;
    p.signal(SIGTERM);
    EXPECT_EQ(p.wait_for(20s), std::optional<int>(0)) << p.output();
}

TEST_F(JobsWorkCli, TheJobsOwnTimeoutStopsCmdAndItIsRetried) {
    const std::string pids = dir.file("pids");
    const auto id = q.add("x", {.max_attempts = 2,
                                .backoff = redcoord::backoff_policy::fixed(10ms),
                                .timeout = stretched(800ms)})
                        .id;
    // The first attempt hangs (its lease ends with the job's timeout); the second completes.
    auto p =
        work({"--grace", "200ms"}, "echo $$ >> " + pids +
                                       "; [ \"$REDCOORD_JOB_ATTEMPT\" = 2 ] && exit 0; "
                                       "[ -n \"$REDCOORD_DEADLINE_MS\" ] || exit 9; sleep 1000");
    ASSERT_TRUE(eventually([&] { return in_state(id, redcoord::job_state::completed); }, 30s))
        << p.output() << (job(id) ? job(id)->error : "");
    EXPECT_EQ(job(id)->attempts, 2U);
    const auto started = pids_in(pids);
    ASSERT_EQ(started.size(), 2U);
    EXPECT_TRUE(eventually([&] { return gone(started[0]); }));
    p.signal(SIGTERM);
    EXPECT_EQ(p.wait_for(20s), std::optional<int>(0)) << p.output();
}

TEST_F(JobsWorkCli, ALeaseLostWhileTheWorkerIsPausedStopsCmdAtItsEnd) {
    const std::string pids = dir.file("pids");
    auto [id, p] = hang_first_attempt(pids);
    // Paused, the worker renews nothing: its deadline reaper kills CMD when the lease ends,
    // before another worker may take the job.
    p.signal(SIGSTOP);
    const pid_t first = pids_in(pids).at(0);
    EXPECT_TRUE(eventually([&] { return gone(first); }, 15s));
    p.signal(SIGCONT);
    ASSERT_TRUE(eventually([&] { return in_state(id, redcoord::job_state::completed); }, 30s))
        << p.output() << (job(id) ? job(id)->error : "");
    EXPECT_EQ(job(id)->attempts, 2U);
    p.signal(SIGTERM);
    EXPECT_EQ(p.wait_for(20s), std::optional<int>(0)) << p.output();
}

TEST_F(JobsWorkCli, AKilledWorkersCommandsDoNotOutliveIt) {
    const std::string pids = dir.file("pids");
    auto [id, p] = hang_first_attempt(pids);
    p.kill();  // SIGKILL: no drain, no settlement
    EXPECT_TRUE(eventually([&] { return gone(pids_in(pids).at(0)); }, 15s));
    // Its job is taken back once the lease lapses, by the next worker.
    auto next = work({"--lease", arg(1s)}, "echo $$ >> " + pids + "; exit 0");
    ASSERT_TRUE(eventually([&] { return in_state(id, redcoord::job_state::completed); }, 30s))
        << next.output() << (job(id) ? job(id)->error : "");
    EXPECT_EQ(job(id)->attempts, 2U);
    next.signal(SIGTERM);
    EXPECT_EQ(next.wait_for(20s), std::optional<int>(0)) << next.output();
}

TEST_F(JobsWorkCli, CancelStopsTheRunningCmd) {
    const std::string pids = dir.file("pids");
    const auto id = q.add("x").id;
    auto p = work({"--grace", "200ms"}, "echo $$ > " + pids + "; exec sleep 1000");
    ASSERT_TRUE(eventually([&] { return pids_in(pids).size() == 1; }, 30s)) << p.output();
    ASSERT_TRUE(q.cancel(id).has_value());
    ASSERT_TRUE(eventually([&] { return in_state(id, redcoord::job_state::failed); }, 30s));
    EXPECT_TRUE(eventually([&] { return gone(pids_in(pids).at(0)); }));
    p.signal(SIGTERM);
    EXPECT_EQ(p.wait_for(20s), std::optional<int>(0)) << p.output();
}

TEST_F(JobsWorkCli, ConcurrencyRunsThatManyJobsAtOnce) {
    // Each job waits until all three have started: only three at once can complete them.
    std::vector<std::string> ids;
    for (int i = 0; i < 3; ++i) ids.push_back(q.add("x", {.max_attempts = 1}).id);
    const std::string started = dir.file("started");
    auto p = work({"--concurrency", "3"},
                  "echo $REDCOORD_JOB_ID >> " + started + "; i=0; while [ $(wc -l < " + started +
                      ") -lt 3 ]; do i=$((i+1)); [ $i -gt 400 ] && exit 1; sleep 0.05; done");
    ASSERT_TRUE(eventually([&] { return q.counts().completed == 3; }, 40s))
        << p.output() << (job(ids[0]) ? job(ids[0])->error : "");
    p.signal(SIGTERM);
    EXPECT_EQ(p.wait_for(20s), std::optional<int>(0)) << p.output();
}

TEST_F(JobsWorkCli, SigtermDrainsRunningJobsAndClaimsNoMore) {
    const std::string started = dir.file("started");
    const auto first = q.add("1").id;
    auto p = work({}, "echo go >> " + started + "; sleep 1; printf done");
    ASSERT_TRUE(eventually([&] { return contains(read_file(started), "go"); }, 30s));
    const auto second = q.add("2").id;
    p.signal(SIGTERM);
    const auto st = p.wait_for(30s);
    ASSERT_TRUE(st.has_value()) << p.output();
    EXPECT_EQ(*st, 0) << p.output();
    const auto j = job(first);
    EXPECT_EQ(j->state, redcoord::job_state::completed) << j->error;
    EXPECT_EQ(j->result.value_or(""), "done");
    EXPECT_TRUE(in_state(second, redcoord::job_state::waiting));
    EXPECT_EQ(read_file(started), "go\n");
}

TEST_F(JobsWorkCli, DrainStopsCmdsStillRunningAfterItsBound) {
    const std::string pids = dir.file("pids");
    const auto id = q.add("x", {.backoff = redcoord::backoff_policy::fixed(1h)}).id;
    auto p = work({"--drain", "300ms", "--grace", "200ms"},
                  "trap '' TERM; echo $$ > " + pids + "; while :; do sleep 0.05; done");
    ASSERT_TRUE(eventually([&] { return pids_in(pids).size() == 1; }, 30s)) << p.output();
    p.signal(SIGTERM);
    const auto st = p.wait_for(20s);
    ASSERT_TRUE(st.has_value()) << p.output();
    EXPECT_EQ(*st, 0) << p.output();
    EXPECT_TRUE(gone(pids_in(pids).at(0)));
    const auto j = job(id);
    EXPECT_EQ(j->state, redcoord::job_state::delayed);  // retried after its back-off
    EXPECT_TRUE(contains(j->error, "the worker stopped")) << j->error;
}

TEST_F(JobsWorkCli, AResultOverOneMebibyteFailsTheAttempt) {
    const auto small = q.add("1048576", {.max_attempts = 1}).id;
    const auto big = q.add("1048577", {.max_attempts = 1}).id;
    auto p = work({}, "head -c $(cat) /dev/zero");
    ASSERT_TRUE(eventually(
        [&] {
            return in_state(small, redcoord::job_state::completed) &&
                   in_state(big, redcoord::job_state::dead);
        },
        30s))
        << p.output();
    EXPECT_EQ(job(small)->result.value_or("").size(), 1048576U);
    EXPECT_TRUE(contains(job(big)->error, "result too large")) << job(big)->error;
    p.signal(SIGTERM);
    EXPECT_EQ(p.wait_for(20s), std::optional<int>(0)) << p.output();
}

TEST_F(JobsWorkCli, ACommandThatCannotStartEndsTheWorkerWith127) {
    (void)q.add("x");
    auto r = run(dir, {"--redis", url, "jobs", "work", "work", "--", "/nonexistent/redcoord-cmd"},
                 {}, 30s);
    EXPECT_EQ(r.status, code::not_found) << r.output;
    EXPECT_TRUE(contains(r.output, "cannot run")) << r.output;
}

TEST_F(JobsWorkCli, BadOptionsAreUsageErrors) {
    EXPECT_EQ(
        run(dir, {"--redis", url, "jobs", "work", "w", "--concurrency", "0", "--", "true"}).status,
        code::usage);
    EXPECT_EQ(
        run(dir, {"--redis", url, "jobs", "work", "w", "--lease", "10ms", "--", "true"}).status,
        code::usage);
    EXPECT_EQ(run(dir, {"--redis", url, "jobs", "work", "w"}).status, code::usage);
}
