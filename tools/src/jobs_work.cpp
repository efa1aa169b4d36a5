// `redcoord jobs work NAME [--concurrency N] [--timeout D] [--grace D] [--drain D] -- CMD ...`:
// a job_worker whose handler runs CMD for each job, supervised as `lock` supervises its CMD.
#include "child_process.hpp"
#include "context.hpp"
#include "exit_codes.hpp"
#include "job_output.hpp"
#include "os_signals.hpp"
#include "supervisor.hpp"

#include <redcoord/core/errors.hpp>
#include <redcoord/core/pool.hpp>
#include <redcoord/jobs/job_queue.hpp>
#include <redcoord/jobs/job_scheduler.hpp>
#include <redcoord/jobs/job_worker.hpp>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <memory>
#include <optional>
#include <stdexcept>
#include <system_error>
#include <thread>

namespace redcoord::cli {
namespace {

using clock_type = std::chrono::steady_clock;
using std::chrono::milliseconds;

struct work_args {
    std::string name;
    std::size_t concurrency = 1;
    milliseconds timeout{0};
    milliseconds grace{5000};
    milliseconds drain{30000};
    milliseconds lease{10000};
    bool scheduler = false;
    std::optional<std::string> label;  // --label: nullopt gives <host>:<pid>
    std::vector<std::string> command;
};

[[noreturn]] void fail_system(const std::string& what) {
    throw error(what + ": " + std::generic_category().message(errno));
}

// A descriptor closed at the end of its scope.
struct owned_fd {
    int fd = -1;
    owned_fd() = default;
    explicit owned_fd(int f) : fd(f) {}
    owned_fd(const owned_fd&) = delete;
    owned_fd& operator=(const owned_fd&) = delete;
    ~owned_fd() {
        if (fd >= 0) ::close(fd);
    }
};

// A pipe from CMD to redcoord: CMD's end is given to it at fork, redcoord reads its own end
// without blocking. Both close-on-exec, so CMDs of other jobs never inherit them.
struct output_pipe {
    owned_fd read_end, write_end;
    output_pipe() {
        int fds[2];
        if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) fail_system("pipe");
        read_end.fd = fds[0];
        write_end.fd = fds[1];
        // CMD's end blocks, as a CMD expects of its stdout.
        ::fcntl(write_end.fd, F_SETFL, 0);
    }
};

// The payload as CMD's stdin: an anonymous file, so a payload of any size is written before
// CMD starts and CMD may read it at its own pace (or not at all).
int payload_file(const std::string& payload) {
    const int fd = ::memfd_create("redcoord-job-payload", MFD_CLOEXEC);
    if (fd < 0) fail_system("memfd_create");
    owned_fd guard(fd);
    std::size_t done = 0;
    while (done < payload.size()) {
        const auto n = ::write(fd, payload.data() + done, payload.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) fail_system("writing the payload");
        done += static_cast<std::size_t>(n);
    }
    if (::lseek(fd, 0, SEEK_SET) != 0) fail_system("lseek");
    guard.fd = -1;
    return fd;
}

// Shared by the handler threads and the main thread.
struct work_state {
    explicit work_state(const work_args& a) : args(a) {}
    const work_args& args;
    std::atomic<bool> force_stop{false};  // the drain ran out: stop every CMD
    std::atomic<int> fatal{0};            // CMD cannot be started: exit with this code
    wakeup main_wake;                     // wakes the main thread (fatal, drained)
};

// Runs CMD for one job and turns its end into the job's result, or throws its failure.
std::string run_job(work_state& w, job_context& c, milliseconds timeout_margin) {
    const work_args& a = w.args;
    const auto start = clock_type::now();
    const auto never = clock_type::time_point::max();
    // SIGTERM at term_at (the worker's --timeout, or the job's timeout less the margin at
    // which the library gives up on it); SIGKILL at kill_at, a grace period later but never
    // after the job's own timeout: past that, another worker may run it.
    auto term_at = a.timeout.count() > 0 ? start + a.timeout : never;
    auto kill_at = never;
    if (const auto d = c.deadline()) {
        term_at = std::min(term_at, *d - timeout_margin);
        kill_at = *d;
    }
    if (term_at != never) kill_at = std::min(kill_at, term_at + a.grace);

    owned_fd stdin_file(payload_file(c.payload()));
    output_pipe out, err, progress;
    job_output o;
    wakeup wake;
    std::stop_callback on_stop(c.stop_token(), [&wake] { wake.notify(); });

    std::vector<std::string> env{"REDCOORD_JOB_ID=" + c.id(),
                                 "REDCOORD_JOB_ATTEMPT=" + std::to_string(c.attempt()),
                                 "REDCOORD_JOB_QUEUE=" + a.name};
    if (term_at != never) {
        const auto left = std::chrono::duration_cast<milliseconds>(term_at - start).count();
        env.push_back("REDCOORD_DEADLINE_MS=" + std::to_string(std::max<long long>(left, 0)));
    }

    // Reads one chunk of `fd` into the job's output: > 0 bytes read, 0 end of file, -1 nothing
    // to read now (or an error, in errno).
    const auto read_chunk = [&](int fd) -> ssize_t {
        char buf[65536];
        ssize_t n;
        do {
            n = ::read(fd, buf, sizeof buf);
        } while (n < 0 && errno == EINTR);
        if (n <= 0) return n;
        const std::string_view bytes(buf, static_cast<std::size_t>(n));
        if (fd == out.read_end.fd) {
            o.out(bytes);
        } else if (fd == err.read_end.fd) {
            o.err(bytes);
        } else if (auto text = o.progress(bytes)) {
            try {
                (void)c.report_progress(*text);
            } catch (const std::exception& e) {
                // Progress is advisory: the job goes on without it.
                print_note("progress of job '" + c.id() + "' not recorded: " + e.what());
            }
        }
        return n;
    };

    // SIGTERM when less than this is left of the lease, as `lock` does with its TTL: renewals
    // normally keep far more than that left.
    const auto early = std::min(a.grace, a.lease / 4);
    supervise_options so;
    so.grace = a.grace;
    so.early_window = early;
    so.stdio.fds = {stdin_file.fd, out.write_end.fd, err.write_end.fd, progress.write_end.fd};
    so.deadline_env = false;
    so.watch = {out.read_end.fd, err.read_end.fd, progress.read_end.fd};
    so.on_readable = [&](int fd) {
        const auto n = read_chunk(fd);
        return n > 0 || (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
    };

    job_stop why = job_stop::none;
    supervise_result r;
    try {
        r = supervise(
            a.command, std::move(env), nullptr, wake,
            [&] {
                const auto now = clock_type::now();
                const auto held = c.held_until();
                if (why == job_stop::none) {
                    if (w.force_stop)
                        why = job_stop::drained;
                    else if (now >= term_at)
                        why = job_stop::timed_out;
                    else if (c.stop_token().stop_requested() || !held || *held - now <= early)
                        why = c.deadline() && now >= *c.deadline() - timeout_margin
                                  ? job_stop::timed_out
                                  : job_stop::stopped;
                }
                // The reaper SIGKILLs CMD at the lease's end even while this process is paused.
                return hold_state{why != job_stop::none, held ? std::min(kill_at, *held) : kill_at};
            },
            so);
    } catch (const exec_failure& e) {
        if (int none = 0; w.fatal.compare_exchange_strong(none, e.code())) print_note(e.what());
        w.main_wake.notify();
        throw std::runtime_error(e.what());
    }
    // CMD's group is gone: what is left in the pipes is all there is (their write ends are
    // closed here first, so a read ends at end of file).
    ::close(out.write_end.fd);
    ::close(err.write_end.fd);
    ::close(progress.write_end.fd);
    out.write_end.fd = err.write_end.fd = progress.write_end.fd = -1;
    // A descendant that left CMD's group may hold a pipe open: no waiting for it.
    for (int fd : {out.read_end.fd, err.read_end.fd, progress.read_end.fd})
        while (read_chunk(fd) > 0) {}
    if (auto failure = o.failure(r.status, why)) throw std::runtime_error(*failure);
    return o.result();
}

int run_work(context& ctx, const work_args& a) {
    if (a.concurrency < 1) throw invalid_argument("--concurrency must be >= 1");
    if (a.timeout.count() < 0) throw invalid_argument("--timeout must be >= 0");
    if (a.lease < min_lease)
        throw invalid_argument("--lease must be at least " + format_duration(min_lease));
    signal_source signals;
    connection_pool pool(ctx.single_endpoint("jobs work"));
    job_queue_options qo;
    qo.prefix = ctx.opts.prefix;
    job_queue queue(pool, a.name, qo);
    work_state w(a);
    job_worker_options wo;
    wo.threads = a.concurrency;
    // One job per claim: a command's process costs milliseconds, far more than a claim, so a
    // batch would save nothing and only hold claimed jobs back behind running ones.
    wo.prefetch = 1;
    wo.lease = a.lease;
    wo.label = a.label;
    const auto margin = wo.timeout_margin;
    job_worker worker(
        queue, [&w, margin](job_context& c) { return run_job(w, c, margin); }, wo);
    worker.start();
    // The queue's repeats (`jobs repeat`) are added by whichever scheduler leads.
    std::optional<job_scheduler> scheduler;
    if (a.scheduler) {
        scheduler.emplace(queue);
        scheduler->start();
    }
    emit_event(ctx, json_object()
                        .add("event", "working")
                        .add("name", a.name)
                        .add("worker", worker.id())
                        .add("concurrency", static_cast<std::uint64_t>(a.concurrency)));

    std::optional<int> got;
    while (!got && w.fatal == 0) {
        got = signals.wait_termination(milliseconds(1000), w.main_wake.fd());
        w.main_wake.drain();
    }
    // The scheduler resigns at once, so that another process's takes over the ticks.
    if (scheduler) scheduler->stop();
    // Drain: no new claims; running jobs finish within --drain, then their CMDs are stopped.
    std::atomic<bool> stopped{false};
    std::thread stopper([&] {
        worker.stop();
        stopped = true;
        w.main_wake.notify();
    });
    const auto drain_end = clock_type::now() + a.drain;
    while (!stopped) {
        const auto left = std::chrono::duration_cast<milliseconds>(drain_end - clock_type::now());
        const auto sig = signals.wait_termination(
            std::clamp(left, milliseconds(0), milliseconds(1000)), w.main_wake.fd());
        w.main_wake.drain();
        if (sig || clock_type::now() >= drain_end) w.force_stop = true;
    }
    stopper.join();
    const auto st = worker.stats();
    emit_event(ctx, json_object()
                        .add("event", "stopped")
                        .add("name", a.name)
                        .add("completed", st.completed)
                        .add("failed", st.failed)
                        .add("lost", st.lost));
    if (w.fatal != 0) return w.fatal;
    return ok;
}

}  // namespace

void add_jobs_work_command(CLI::App& jobs, context& ctx) {
    auto a = std::make_shared<work_args>();
    auto* sub = jobs.add_subcommand("work",
                                    "Run CMD for each job of a queue (a worker in any "
                                    "language)");
    sub->add_option("name", a->name, "Job queue name")->required();
    sub->add_option("command", a->command, "CMD ARGS... (after --)")->required();
    sub->add_option("--label", a->label,
                    "Who runs the jobs, recorded as each job's worker (default <host>:<pid>)");
    sub->add_option("--concurrency", a->concurrency, "Jobs run at once (threads)")
        ->capture_default_str()
        ->check(CLI::PositiveNumber);
    add_duration(*sub, "--timeout", a->timeout,
                 "Longest run of CMD for one job (0: the job's own timeout only)");
    add_duration(*sub, "--grace", a->grace, "Time between SIGTERM and SIGKILL when stopping CMD");
    add_duration(*sub, "--drain", a->drain,
                 "On SIGTERM/SIGINT, how long running jobs may still take");
    add_duration(*sub, "--lease", a->lease,
                 "How long a claimed job stays this worker's without a heartbeat");
    sub->add_flag("--scheduler", a->scheduler,
                  "Also campaign to run the queue's scheduler, which adds the ticks of its "
                  "repeats (jobs repeat)");
    sub->footer(
        "Each job runs CMD in its own process group, with the job's payload on stdin and\n"
        "REDCOORD_JOB_ID, REDCOORD_JOB_ATTEMPT (from 1), REDCOORD_JOB_QUEUE and, when the run is\n"
        "bounded, REDCOORD_DEADLINE_MS (milliseconds left at CMD's start until it is stopped).\n"
        "CMD's stdout is the job's result (at most 1 MiB: more fails the attempt); exit 0\n"
        "completes the job, another status fails the attempt (retried per the job's back-off)\n"
        "with the status and the end of CMD's stderr as its error. Lines 'progress TEXT' written\n"
        "to descriptor 3 record the job's progress. When --timeout or the job's timeout passes,\n"
        "the job is cancelled, or its lease is lost or comes within min(--grace, --lease/4) of\n"
        "its end unrenewed, CMD's group gets SIGTERM, then SIGKILL after --grace (at the latest\n"
        "when the lease or the job's timeout ends: a reaper process enforces that even while\n"
        "redcoord is paused), and the attempt fails.\n"
        "SIGTERM/SIGINT drain: no new claims, running jobs finish (stopped after --drain, or at\n"
        "a second signal), then exit 0. A CMD that cannot be started ends the worker (126/127).\n"
        "With --json, 'working' and 'stopped' events are JSON lines on stderr.");
    sub->callback([a, &ctx] { ctx.run = [a, &ctx] { return run_work(ctx, *a); }; });
}

}  // namespace redcoord::cli
