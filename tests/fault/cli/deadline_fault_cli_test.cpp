// Issue 22: CMD never outlives the lease, even when the supervising `redcoord` itself is
// paused (SIGSTOP) or stuck (a full stderr pipe). Real processes: redcoord, its deadline reaper
// and cli_stamp_writer as CMD, whose timestamped appends to one shared file show whether two
// holders' CMDs ever worked at the same time.
//
// Measurements are printed as "[measure] ..." lines: the overlap (writes by the paused holder's
// CMD after the next holder's first write; goal none) and how the paused holder's CMD ended
// relative to the lease's expiry on the server (negative: before it).
#include "cli_harness.hpp"

#include <redcoord/election/election_options.hpp>

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <memory>

using namespace cli_test;
using clock_type = std::chrono::steady_clock;

namespace {

std::int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               clock_type::now().time_since_epoch())
        .count();
}

/// One line of cli_stamp_writer's output.
struct stamp {
    std::string kind, id;
    std::int64_t ns = 0;
    long long deadline_ms = -1;
    pid_t pid = -1;
};

std::vector<stamp> read_stamps(const std::string& file) {
    std::vector<stamp> out;
    for (const auto& l : lines_of(read_file(file))) {
        std::istringstream in(l);
        stamp s;
        in >> s.kind >> s.id >> s.ns;
        if (s.kind == "start") in >> s.deadline_ms >> s.pid;
        if (in)
            out.push_back(s);
        else if (s.kind == "start" || s.kind == "w" || s.kind == "term")
            out.push_back(s);  // last line may be cut
    }
    return out;
}

std::optional<stamp> start_of(const std::vector<stamp>& v, const std::string& id) {
    for (const auto& s : v)
        if (s.kind == "start" && s.id == id) return s;
    return std::nullopt;
}

/// What the checker found for `first` (paused holder) and `second` (next holder).
struct overlap_report {
    int overlapping_writes = 0;      ///< Lines by `first` after `second`'s first line.
    std::int64_t first_last_ns = 0;  ///< `first`'s last line.
    std::int64_t second_first_ns = 0;
};

overlap_report check_overlap(const std::vector<stamp>& v, const std::string& first,
                             const std::string& second) {
    overlap_report r;
    bool second_started = false;
    for (const auto& s : v) {
        if (s.id == second && !second_started) {
            second_started = true;
            r.second_first_ns = s.ns;
        }
        if (s.id == first) {
            r.first_last_ns = s.ns;
            if (second_started) ++r.overlapping_writes;
        }
    }
    return r;
}

bool pid_gone(pid_t p) {
    if (::kill(p, 0) != 0) return errno == ESRCH;
    // A zombie does no work; its parent (init after redcoord died) reaps it.
    const std::string st = read_file("/proc/" + std::to_string(p) + "/stat");
    const auto close = st.rfind(')');
    return close != std::string::npos && close + 2 < st.size() && st[close + 2] == 'Z';
}

/// pid, ppid and pgid of every live process whose parent is `parent` (from /proc).
struct proc_row {
    pid_t pid, ppid, pgid;
};
std::vector<proc_row> children_of(pid_t parent) {
    std::vector<proc_row> out;
    DIR* d = ::opendir("/proc");
    if (!d) return out;
    while (dirent* e = ::readdir(d)) {
        const pid_t p = static_cast<pid_t>(std::atoi(e->d_name));
        if (p <= 0) continue;
        const std::string st = read_file("/proc/" + std::to_string(p) + "/stat");
        const auto close = st.rfind(')');
        if (close == std::string::npos) continue;
        std::istringstream in(st.substr(close + 2));
        char state = 0;
        proc_row r{p, 0, 0};
        in >> state >> r.ppid >> r.pgid;
        if (in && r.ppid == parent && state != 'Z') out.push_back(r);
    }
    ::closedir(d);
    return out;
}

double percentile(std::vector<double> v, double p) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const auto i = static_cast<std::size_t>(std::min<double>(
        static_cast<double>(v.size()) - 1, p * static_cast<double>(v.size() - 1) + 0.5));
    return v[i];
}

struct DeadlineFaultCli : ::testing::Test {
    redcoord::testing::local_server server;
    temp_dir dir;
    std::string url = server.url();

    /// CMD: cli_stamp_writer; `ignore_term` makes it a CMD that only SIGKILL stops.
    std::vector<std::string> writer(const std::string& file, const std::string& id,
                                    bool ignore_term = false) const {
        std::vector<std::string> v{STAMP_WRITER_PATH, file, id};
        if (ignore_term) v.push_back("ignore-term");
        return v;
    }
    static std::vector<std::string> with_cmd(std::vector<std::string> args,
                                             const std::vector<std::string>& cmd) {
        args.push_back("--");
        args.insert(args.end(), cmd.begin(), cmd.end());
        return args;
    }
    /// The server's remaining lifetime of `key`, read `settle` after the pause so that a
    /// renewal already on the wire has landed: the time (steady clock, ns) the lease ends.
    std::int64_t server_expiry_ns(const std::string& key) {
        std::this_thread::sleep_for(30ms);
        const auto t = now_ns();
        const auto pttl = server.command({"PTTL", key}).integer();
        return t + pttl * 1000000;
    }

    /// The paused-holder scenario shared by `elect` and `lock`: `first` is the holder whose
    /// redcoord gets SIGSTOP; `second` must not write before the first CMD stopped.
    struct round_result {
        overlap_report overlap;
        double end_after_expiry_ms = 0;  ///< first CMD's last write minus the server-side expiry.
    };
    round_result paused_holder_round(cli_process& holder, const std::string& holder_id,
                                     const std::string& other_id, const std::string& stamps,
                                     const std::string& key,
                                     const std::function<void()>& start_other) {
        round_result rr;
        std::this_thread::sleep_for(400ms);  // some work and at least one renewal before the pause
        holder.signal(SIGSTOP);
        const auto expiry = server_expiry_ns(key);
        if (start_other) start_other();
        const auto first = start_of(read_stamps(stamps), holder_id);
        EXPECT_TRUE(first.has_value());
        EXPECT_TRUE(
            eventually([&] { return start_of(read_stamps(stamps), other_id).has_value(); }, 15s))
            << "the other candidate never ran CMD";
        if (first)
            EXPECT_TRUE(eventually([&] { return pid_gone(first->pid); }, 5s))
                << "the paused holder's CMD still runs";
        std::this_thread::sleep_for(50ms);
        rr.overlap = check_overlap(read_stamps(stamps), holder_id, other_id);
        rr.end_after_expiry_ms = static_cast<double>(rr.overlap.first_last_ns - expiry) / 1e6;
        holder.signal(SIGCONT);
        // Back from the pause it finds its CMD stopped and the lease gone: exit 125.
        const auto st = holder.wait_for(10s);
        EXPECT_TRUE(st.has_value()) << holder.output();
        if (st) EXPECT_EQ(*st, code::lost) << holder.output();
        return rr;
    }

    static void report(const std::string& what, const std::vector<round_result>& rounds) {
        int overlap = 0;
        std::vector<double> late, gap;
        for (const auto& r : rounds) {
            overlap += r.overlap.overlapping_writes;
            late.push_back(r.end_after_expiry_ms);
            gap.push_back(static_cast<double>(r.overlap.second_first_ns - r.overlap.first_last_ns) /
                          1e6);
        }
        std::printf(
            "[measure] %s: %zu rounds, overlapping writes %d; paused holder's CMD ended after the "
            "server-side "
            "lease expiry by p50 %.1f ms, p99 %.1f ms, max %.1f ms (negative: before); gap to the "
            "next "
            "holder's first write min %.1f ms\n",
            what.c_str(), rounds.size(), overlap, percentile(late, 0.5), percentile(late, 0.99),
            *std::max_element(late.begin(), late.end()), *std::min_element(gap.begin(), gap.end()));
    }
};

}  // namespace

TEST_F(DeadlineFaultCli, ElectPausedLeaderCmdNeverOverlapsTheNextLeader) {
    // The issue asks for 20 repetitions with a 2 s term; a 1 s term keeps them short. Odd rounds
    // run a CMD that ignores SIGTERM, so only the SIGKILL at the deadline stops it.
    constexpr int rounds = 20;
    std::vector<round_result> results, kill_only;
    for (int i = 0; i < rounds; ++i) {
        const std::string name = "svc" + std::to_string(i);
        const std::string stamps = dir.file("stamps-" + name);
        auto candidate = [&](const std::string& id) {
            return std::make_unique<cli_process>(
                with_cmd({"--redis", url, "elect", name, "--identity", id, "--term", "1s",
                          "--grace", "200ms"},
                         writer(stamps, id, i % 2 == 1)),
                dir.file("out-" + name + "-" + id));
        };
        auto a = candidate("a");
        auto b = candidate("b");
        ASSERT_TRUE(eventually([&] { return !read_stamps(stamps).empty(); }))
            << a->output() << b->output();
        const std::string leader = read_stamps(stamps).front().id;
        const std::string other = leader == "a" ? "b" : "a";
        auto& lp = leader == "a" ? a : b;
        auto& op = leader == "a" ? b : a;
        auto& into = i % 2 == 1 ? kill_only : results;
        into.push_back(paused_holder_round(*lp, leader, other, stamps,
                                           redcoord::make_election_keys("redcoord:", name).selector,
                                           {}));
        EXPECT_EQ(into.back().overlap.overlapping_writes, 0) << "round " << i;
        op->signal(SIGTERM);
        EXPECT_TRUE(op->wait_for(10s).has_value());
    }
    report("elect --term 1s --grace 200ms, leader's redcoord SIGSTOPped, CMD exits on SIGTERM",
           results);
    report(
        "elect --term 1s --grace 200ms, leader's redcoord SIGSTOPped, CMD ignores SIGTERM (SIGKILL "
        "at the deadline)",
        kill_only);
}

TEST_F(DeadlineFaultCli, LockPausedHolderCmdNeverOverlapsTheNextHolder) {
    constexpr int rounds = 3;
    std::vector<round_result> results;
    for (int i = 0; i < rounds; ++i) {
        const std::string name = "res" + std::to_string(i);
        const std::string stamps = dir.file("stamps-" + name);
        auto holder = [&](const std::string& id) {
            return std::make_unique<cli_process>(
                with_cmd({"--redis", url, "lock", name, "--ttl", "2s", "--grace", "200ms", "--wait",
                          "20s"},
                         writer(stamps, id)),
                dir.file("out-" + name + "-" + id));
        };
        auto a = holder("a");
        ASSERT_TRUE(eventually([&] { return start_of(read_stamps(stamps), "a").has_value(); }))
            << a->output();
        std::unique_ptr<cli_process> b;
        results.push_back(paused_holder_round(*a, "a", "b", stamps, "redcoord:lock:{" + name + "}",
                                              [&] { b = holder("b"); }));
        EXPECT_EQ(results.back().overlap.overlapping_writes, 0) << "round " << i;
        b->signal(SIGTERM);
        EXPECT_TRUE(b->wait_for(10s).has_value());
    }
    report("lock --ttl 2s --grace 200ms, holder's redcoord SIGSTOPped", results);
}

TEST_F(DeadlineFaultCli, JsonEventsToAFullStderrPipeNeverBlockTheLease) {
    // A FIFO that the test holds open for reading but never reads, filled up before redcoord
    // starts: any blocking write to stderr would hang redcoord.
    const std::string fifo = dir.file("stderr.fifo");
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    const int reader = ::open(fifo.c_str(), O_RDWR | O_CLOEXEC);
    ASSERT_GE(reader, 0);
    const int filler = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    ASSERT_GE(filler, 0);
    const std::string junk(4096, 'x');
    while (::write(filler, junk.data(), junk.size()) > 0) {}
    ASSERT_EQ(errno, EAGAIN);
    const std::string one(1, 'x');
    while (::write(filler, one.data(), 1) > 0) {}
    ::close(filler);

    struct variant {
        std::string name;
        std::vector<std::string> args;
        std::string key;
    };
    const std::vector<variant> variants{
        {"lock",
         {"--json", "--redis", url, "lock", "jl", "--ttl", "1s", "--grace", "200ms"},
         "redcoord:lock:{jl}"},
        {"elect",
         {"--json", "--redis", url, "elect", "je", "--term", "1s", "--grace", "200ms"},
         redcoord::make_election_keys("redcoord:", "je").selector}};
    for (const auto& v : variants) {
        SCOPED_TRACE(v.name);
        const std::string stamps = dir.file("stamps-" + v.name);
        std::vector<std::string> argv{"sh", "-c", "exec \"$@\" 2>" + fifo, "sh", REDCOORD_CLI_PATH};
        for (auto& s : with_cmd(v.args, writer(stamps, "x"))) argv.push_back(s);
        redcoord::testing::process p(argv);
        ASSERT_TRUE(eventually([&] { return start_of(read_stamps(stamps), "x").has_value(); }, 5s))
            << "CMD never started: redcoord is stuck writing its event";
        // Three terms later the lease is still renewed and CMD still works.
        std::this_thread::sleep_for(3s);
        EXPECT_TRUE(p.running());
        EXPECT_GT(server.command({"PTTL", v.key}).integer(), 0) << "the lease was not renewed";
        const auto last = read_stamps(stamps).back();
        EXPECT_EQ(last.kind, "w");
        EXPECT_LT(now_ns() - last.ns, 500000000) << "CMD stopped working";
        p.signal(SIGTERM);
        const auto st = p.wait_for(5s);
        ASSERT_TRUE(st.has_value()) << "redcoord hangs on exit";
        EXPECT_EQ(*st, 128 + SIGTERM);
    }
    ::close(reader);
}

TEST_F(DeadlineFaultCli, ReaperIsGoneAfterEveryExitPath) {
    struct path {
        std::string name;
        std::function<void(cli_process&, pid_t cmd, const std::string& key)> act;
        std::optional<int> status;  // nullopt: redcoord was SIGKILLed
    };
    const std::vector<path> paths{
        {"cmd-exits", [](cli_process&, pid_t cmd, const std::string&) { ::kill(cmd, SIGTERM); }, 0},
        {"lease-lost",
         [&](cli_process&, pid_t, const std::string& key) {
             server.command({"SET", key, "someone-else", "PX", "60000"});
         },
         code::lost},
        {"sigterm", [](cli_process& p, pid_t, const std::string&) { p.signal(SIGTERM); },
         128 + SIGTERM},
        {"sigint", [](cli_process& p, pid_t, const std::string&) { p.signal(SIGINT); },
         128 + SIGINT},
        {"sigkill", [](cli_process& p, pid_t, const std::string&) { p.kill(); }, std::nullopt},
    };
    for (const auto& pa : paths) {
        SCOPED_TRACE(pa.name);
        const std::string stamps = dir.file("stamps-" + pa.name);
        const std::string key = "redcoord:lock:{" + pa.name + "}";
        cli_process p(with_cmd({"--redis", url, "lock", pa.name, "--ttl", "1s", "--grace", "200ms"},
                               writer(stamps, "x")),
                      dir.file("out-" + pa.name));
        ASSERT_TRUE(eventually([&] { return start_of(read_stamps(stamps), "x").has_value(); }))
            << p.output();
        const pid_t cmd = start_of(read_stamps(stamps), "x")->pid;
        // The reaper: redcoord's other child, outside CMD's process group.
        std::vector<proc_row> reapers;
        for (const auto& c : children_of(p.pid()))
            if (c.pid != cmd) reapers.push_back(c);
        ASSERT_EQ(reapers.size(), 1u) << "no deadline reaper next to CMD";
        EXPECT_NE(reapers[0].pgid, cmd) << "the reaper is in CMD's process group";
        const pid_t reaper = reapers[0].pid;

        pa.act(p, cmd, key);
        if (pa.status) {
            const auto st = p.wait_for(10s);
            ASSERT_TRUE(st.has_value()) << p.output();
            EXPECT_EQ(*st, *pa.status) << p.output();
        }
        EXPECT_TRUE(eventually([&] { return pid_gone(cmd); }, 3s)) << "CMD still runs";
        EXPECT_TRUE(eventually([&] { return pid_gone(reaper); }, 3s))
            << "the reaper " << reaper << " still runs";
    }
}
