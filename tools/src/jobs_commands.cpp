// `redcoord jobs add|repeat|get|cancel|retry|remove|clean|list|stats|group-limit|pause|resume
// NAME ...` over job_queue: the producer's and the operator's side of a job queue (`jobs work`, the worker
// side, is jobs_work.cpp).
#include "context.hpp"
#include "exit_codes.hpp"
#include "os_signals.hpp"
#include "payloads.hpp"

#include <redcoord/core/errors.hpp>
#include <redcoord/core/pool.hpp>
#include <redcoord/jobs/job_queue.hpp>

#include <array>
#include <ctime>
#include <memory>

namespace redcoord::cli {
namespace {

using std::chrono::milliseconds;

struct jobs_args {
    std::string name;
    payload_input input;              // add
    bool base64 = false;              // get: print the payload in base64
    std::string id;                   // add --id, get/cancel/retry
    std::vector<std::string> after;   // add --after: the jobs it depends on
    bool ignore_failed_deps = false;  // add --ignore-failed-dependencies
    std::string group;                // add --group (given when group_given)
    bool group_given = false;
    milliseconds dedupe_for{0}, debounce{0};  // add
    std::uint32_t group_limit = 0;            // group-limit
    milliseconds delay{0}, timeout{0}, deadline{0};
    milliseconds backoff{1000}, backoff_max{3'600'000};
    double jitter = 0;
    bool fixed = false;
    int priority = 0;
    unsigned max_attempts = default_max_attempts;
    std::string state = "waiting";              // list, clean
    std::size_t limit = default_listing_limit;  // list, clean
    milliseconds older_than{0};                 // clean
    std::string repeat;                         // repeat: its name
    milliseconds every{0};                      // repeat
    std::string cron, zone = "UTC";             // repeat
    bool skip_missed = false, remove = false;   // repeat
};

job_queue_options queue_options(const context& ctx) {
    job_queue_options o;
    o.prefix = ctx.opts.prefix;
    return o;
}

// The pool and queue of one subcommand, opened after the termination-signal handler is set.
struct opened_queue {
    static endpoint endpoint_for(const context& ctx, const char* command) {
        exit_on_termination_signal();
        return ctx.single_endpoint(command);
    }
    opened_queue(const context& ctx, const jobs_args& a, const char* command)
        : pool(endpoint_for(ctx, command)), queue(pool, a.name, queue_options(ctx)) {}
    connection_pool pool;
    job_queue queue;
};

job_state state_named(const std::string& s) {
    for (auto st : {job_state::waiting, job_state::delayed, job_state::active, job_state::completed,
                    job_state::failed, job_state::dead, job_state::waiting_children})
        if (to_string(st) == s) return st;
    throw invalid_argument("unknown job state '" + s +
                           "' (waiting, delayed, active, completed, failed, dead, "
                           "waiting_children)");
}

// ISO 8601 UTC to the millisecond, and how far from now: what an operator reads at a glance.
std::string when(std::chrono::system_clock::time_point t) {
    using namespace std::chrono;
    const auto ms = duration_cast<milliseconds>(t.time_since_epoch()).count();
    const std::time_t secs = static_cast<std::time_t>(ms / 1000);
    std::tm tm{};
    gmtime_r(&secs, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
    char frac[8];
    std::snprintf(frac, sizeof frac, ".%03dZ", static_cast<int>(ms % 1000));
    auto from_now = duration_cast<milliseconds>(t - system_clock::now());
    if (from_now >= seconds(10) || from_now <= seconds(-10))
        from_now = duration_cast<seconds>(from_now);  // milliseconds there are only noise
    return std::string(buf) + frac +
           (from_now >= milliseconds(0) ? " (in " + format_duration(from_now) + ")"
                                        : " (" + format_duration(-from_now) + " ago)");
}

json_object& add_time(json_object& o, std::string_view key,
                      const std::optional<std::chrono::system_clock::time_point>& t) {
    if (!t) return o.add_raw(key, "null");
    return o.add(key, static_cast<std::int64_t>(
                          std::chrono::duration_cast<milliseconds>(t->time_since_epoch()).count()));
}

// The job options of `add` and `repeat`, checked here: the library's own checks would name
// job_options members, which the user never typed.
job_options job_options_of(const jobs_args& a) {
    if (a.priority < 0 || a.priority > 9) throw invalid_argument("--priority must be in 0..9");
    if (a.max_attempts < 1) throw invalid_argument("--max-attempts must be >= 1");
    if (!(a.jitter >= 0 && a.jitter <= 1)) throw invalid_argument("--jitter must be in 0..1");
    if (!a.fixed && a.backoff_max < a.backoff)
        throw invalid_argument("--backoff-max must be >= --backoff");
    job_options o;
    o.priority = a.priority;
    o.max_attempts = a.max_attempts;
    o.timeout = a.timeout;
    o.deadline = a.deadline;
    o.backoff = a.fixed ? backoff_policy::fixed(a.backoff)
                        : backoff_policy::exponential(a.backoff, a.backoff_max, a.jitter);
    return o;
}

int run_add(context& ctx, const jobs_args& a) {
    const auto payloads = read_payloads(a.input);
    if (!a.id.empty() && payloads.size() != 1)
        throw invalid_argument("--id names one job: give exactly one payload");
    job_options o = job_options_of(a);
    o.id = a.id;
    o.delay = a.delay;
    o.depends_on = a.after;
    if (a.ignore_failed_deps) o.on_dependency_failure = dependency_failure::ignore;
    if (a.group_given) o.group = a.group;
    o.dedupe_for = a.dedupe_for;
    o.debounce = a.debounce;
    if ((a.dedupe_for.count() > 0 || a.debounce.count() > 0) && a.id.empty())
        throw invalid_argument("--dedupe-for and --debounce need --id");
    opened_queue opened(ctx, a, "jobs add");
    auto& q = opened.queue;
    std::vector<std::pair<std::string, job_options>> batch;
    batch.reserve(payloads.size());
    for (const auto& p : payloads) batch.emplace_back(p, o);
    const auto added = q.add_batch(batch);
    for (const auto& r : added) {
        if (ctx.opts.json) {
            json_object o;
            o.add("id", r.id).add("added", r.added);
            if (r.debounced) o.add("debounced", true);  // only then: the format 1 line otherwise
            print_line(o.add("state", std::string(to_string(r.state))).str());
        } else
            print_line(r.id + (r.added ? ""
                               : r.debounced
                                   ? " (debounced, " + std::string(to_string(r.state)) + ")"
                                   : " (already known, " + std::string(to_string(r.state)) + ")"));
    }
    return ok;
}

// repeat: registers (or replaces) a repeatable job, or drops it with --remove; exit 1 when
// --remove names an unknown repeat.
int run_repeat(context& ctx, const jobs_args& a) {
    if (a.remove) {
        if (a.every.count() > 0 || !a.cron.empty() || !a.input.args.empty() ||
            !a.input.file.empty())
            throw invalid_argument("--remove takes no schedule and no payload");
        opened_queue opened(ctx, a, "jobs repeat");
        const bool removed = opened.queue.remove_repeat(a.repeat);
        if (ctx.opts.json)
            print_line(json_object()
                           .add("name", a.name)
                           .add("repeat", a.repeat)
                           .add("removed", removed)
                           .str());
        else if (removed)
            print_line("removed");
        else
            print_note("repeat '" + a.repeat + "' of job queue '" + a.name + "' is unknown");
        return removed ? ok : no;
    }
    if ((a.every.count() > 0) == !a.cron.empty())
        throw invalid_argument("give one of --every and --cron");
    if (a.every.count() < 0) throw invalid_argument("--every must be > 0");
    const auto payloads = read_payloads(a.input);
    if (payloads.size() != 1) throw invalid_argument("a repeat has exactly one payload");
    repeat_options r;
    r.every = a.every;
    r.cron = a.cron;
    r.time_zone = a.zone;
    r.missed =
        a.skip_missed ? repeat_options::missed_ticks::skip : repeat_options::missed_ticks::catch_up;
    r.job = job_options_of(a);
    opened_queue opened(ctx, a, "jobs repeat");
    opened.queue.repeat(a.repeat, payloads.front(), r);
    if (ctx.opts.json)
        print_line(json_object().add("name", a.name).add("repeat", a.repeat).str());
    else
        print_line("repeat " + a.repeat + " registered");
    return ok;
}

int run_get(context& ctx, const jobs_args& a) {
    opened_queue opened(ctx, a, "jobs get");
    auto& q = opened.queue;
    const auto j = q.get(a.id);
    if (!j) {
        if (ctx.opts.json)
            print_line(json_object().add("id", a.id).add("known", false).str());
        else
            print_note("job '" + a.id + "' is unknown (never added, or completed long ago)");
        return no;
    }
    const std::string payload = a.base64 ? base64_encode(j->payload) : j->payload;
    if (ctx.opts.json) {
        json_object o;
        o.add("id", j->id)
            .add("state", std::string(to_string(j->state)))
            .add("payload", payload)
            .add("priority", j->priority)
            .add("attempts", static_cast<std::uint64_t>(j->attempts))
            .add("max_attempts", static_cast<std::uint64_t>(j->max_attempts))
            .add("progress", j->progress)
            .add("error", j->error)
            .add("worker", j->worker);
        add_time(o, "added_at_ms", j->added_at);
        add_time(o, "due_at_ms", j->due_at);
        add_time(o, "started_at_ms", j->started_at);
        add_time(o, "finished_at_ms", j->finished_at);
        if (j->result) o.add("result", *j->result);
        const auto list = [](const std::vector<std::string>& ids) {
            std::vector<std::string> quoted;
            quoted.reserve(ids.size());
            for (const auto& i : ids) quoted.push_back(json_quote(i));
            return json_array(quoted);
        };
        o.add_raw("dependencies", list(j->dependencies))
            .add_raw("pending_dependencies", list(j->pending_dependencies))
            .add_raw("dependents", list(j->dependents))
            .add("on_dependency_failure",
                 j->on_dependency_failure == dependency_failure::ignore ? "ignore" : "fail");
        print_line(o.str());
    } else {
        print_line("id " + j->id);
        print_line("state " + std::string(to_string(j->state)));
        print_line("attempts " + std::to_string(j->attempts) + "/" +
                   std::to_string(j->max_attempts));
        print_line("priority " + std::to_string(j->priority));
        print_line("payload " + payload);
        if (j->added_at) print_line("added " + when(*j->added_at));
        if (j->due_at) print_line("due " + when(*j->due_at));
        if (j->started_at) print_line("started " + when(*j->started_at));
        if (j->finished_at) print_line("finished " + when(*j->finished_at));
        if (!j->progress.empty()) print_line("progress " + j->progress);
        if (!j->error.empty()) print_line("error " + j->error);
        if (!j->worker.empty()) print_line("worker " + j->worker);
        if (j->result) print_line("result " + *j->result);
        const auto joined = [](const std::vector<std::string>& ids) {
            std::string s;
            for (const auto& i : ids) s += (s.empty() ? "" : ",") + i;
            return s;
        };
        if (!j->dependencies.empty())
            print_line("dependencies " + joined(j->dependencies) +
                       (j->on_dependency_failure == dependency_failure::ignore
                            ? " (failed ones ignored)"
                            : ""));
        if (!j->pending_dependencies.empty())
            print_line("waiting for " + joined(j->pending_dependencies));
        if (!j->dependents.empty()) print_line("dependents " + joined(j->dependents));
    }
    return ok;
}

int run_cancel(context& ctx, const jobs_args& a) {
    opened_queue opened(ctx, a, "jobs cancel");
    auto& q = opened.queue;
    const auto was = q.cancel(a.id);
    if (ctx.opts.json) {
        json_object o;
        o.add("id", a.id).add("known", was.has_value());
        if (was) o.add("was", std::string(to_string(*was)));
        print_line(o.str());
    } else if (was) {
        print_line(std::string("was ") + std::string(to_string(*was)));
    } else {
        print_note("job '" + a.id + "' is unknown");
    }
    return was ? ok : no;
}

int run_retry(context& ctx, const jobs_args& a) {
    opened_queue opened(ctx, a, "jobs retry");
    auto& q = opened.queue;
    const bool done = q.retry(a.id);
    if (ctx.opts.json)
        print_line(json_object().add("id", a.id).add("retried", done).str());
    else if (done)
        print_line("retried");
    else
        print_note("job '" + a.id + "' is not dead or failed (or unknown)");
    return done ? ok : no;
}

int run_remove(context& ctx, const jobs_args& a) {
    opened_queue opened(ctx, a, "jobs remove");
    const auto was = opened.queue.remove(a.id);
    const bool removed = was && *was != job_state::active;
    if (ctx.opts.json) {
        json_object o;
        o.add("id", a.id).add("removed", removed);
        if (was) o.add("state", std::string(to_string(*was)));
        print_line(o.str());
    } else if (removed) {
        print_line(std::string("removed ") + std::string(to_string(*was)));
    } else if (was) {
        print_note("job '" + a.id + "' is active: cancel it first");
    } else {
        print_note("job '" + a.id + "' is unknown");
    }
    return removed ? ok : no;
}

int run_clean(context& ctx, const jobs_args& a) {
    const job_state state = state_named(a.state);
    if (state != job_state::completed && state != job_state::failed && state != job_state::dead)
        throw invalid_argument(
            "--state must be completed, failed or dead: only finished jobs "
            "are cleaned");
    opened_queue opened(ctx, a, "jobs clean");
    const auto n = opened.queue.clean(state, a.older_than, a.limit);
    if (ctx.opts.json)
        print_line(json_object()
                       .add("name", a.name)
                       .add("state", a.state)
                       .add("removed", static_cast<std::uint64_t>(n))
                       .str());
    else
        print_line("removed " + std::to_string(n));
    return ok;
}

int run_list(context& ctx, const jobs_args& a) {
    opened_queue opened(ctx, a, "jobs list");
    auto& q = opened.queue;
    const auto ids = q.list(state_named(a.state), a.limit);
    if (ctx.opts.json) {
        std::vector<std::string> quoted;
        quoted.reserve(ids.size());
        for (const auto& id : ids) quoted.push_back(json_quote(id));
        print_line(json_object()
                       .add("name", a.name)
                       .add("state", a.state)
                       .add_raw("ids", json_array(quoted))
                       .str());
    } else {
        for (const auto& id : ids) print_line(id);
    }
    return ok;
}

// group-limit: sets (or with 0 clears) a group's concurrency limit; prints the previous one.
int run_group_limit(context& ctx, const jobs_args& a) {
    opened_queue opened(ctx, a, "jobs group-limit");
    const auto before = opened.queue.set_group_limit(a.group, a.group_limit);
    if (ctx.opts.json)
        print_line(json_object()
                       .add("name", a.name)
                       .add("group", a.group)
                       .add("limit", static_cast<std::uint64_t>(a.group_limit))
                       .add("previous", static_cast<std::uint64_t>(before))
                       .str());
    else
        print_line(std::to_string(before));
    return ok;
}

// pause / resume: exit 0 when the state changed, 1 when it already was so (as retry's "not
// dead or failed"), so a script can tell.
int run_pause(context& ctx, const jobs_args& a, bool pause) {
    opened_queue opened(ctx, a, pause ? "jobs pause" : "jobs resume");
    auto& q = opened.queue;
    const bool changed = pause ? q.pause() : q.resume();
    if (ctx.opts.json)
        print_line(
            json_object().add("name", a.name).add("paused", pause).add("changed", changed).str());
    else if (changed)
        print_line(pause ? "paused" : "resumed");
    else
        print_note("job queue '" + a.name + "' was already " + (pause ? "paused" : "running"));
    return changed ? ok : no;
}

int run_stats(context& ctx, const jobs_args& a) {
    opened_queue opened(ctx, a, "jobs stats");
    auto& q = opened.queue;
    const auto n = q.counts();
    const bool paused = q.paused();
    const std::array<std::pair<const char*, std::uint64_t>, 7> rows{
        {{"waiting", n.waiting},
         {"delayed", n.delayed},
         {"active", n.active},
         {"completed", n.completed},
         {"failed", n.failed},
         {"dead", n.dead},
         {"waiting_children", n.waiting_children}}};
    if (ctx.opts.json) {
        json_object o;
        o.add("name", a.name);
        for (const auto& [k, v] : rows) o.add(k, v);
        o.add("paused", paused);
        print_line(o.str());
    } else {
        for (const auto& [k, v] : rows) print_line(std::string(k) + " " + std::to_string(v));
        if (paused) print_line("paused");
    }
    return ok;
}

// The options of each job that `add` and `repeat` share.
void add_job_option_flags(CLI::App& sub, jobs_args& a) {
    sub.add_option("--priority", a.priority, "0 (lowest) .. 9 (highest)")->capture_default_str();
    sub.add_option("--max-attempts", a.max_attempts, "Attempts before the job goes dead")
        ->capture_default_str();
    add_duration(sub, "--timeout", a.timeout, "Longest run of one attempt (0: none)");
    add_duration(sub, "--deadline", a.deadline,
                 "Fail the job if it has not started this long after the add (0: never)");
    add_duration(sub, "--backoff", a.backoff, "First retry delay (or every one with --fixed)");
    add_duration(sub, "--backoff-max", a.backoff_max, "Longest retry delay");
    sub.add_option("--jitter", a.jitter, "Random fraction of each retry delay, 0..1")
        ->capture_default_str();
    sub.add_flag("--fixed", a.fixed, "The same retry delay every time");
}

}  // namespace

void add_jobs_commands(CLI::App& app, context& ctx) {
    auto* jobs = app.add_subcommand(
        "jobs",
        "Job queue: add, repeat, get, cancel, retry, remove, clean, list, stats, pause, resume, "
        "and work (run a command for each job)");
    jobs->require_subcommand(1);
    add_jobs_work_command(*jobs, ctx);
    const auto make = [&](const std::string& verb, const std::string& help) {
        auto a = std::make_shared<jobs_args>();
        auto* sub = jobs->add_subcommand(verb, help);
        sub->add_option("name", a->name, "Job queue name")->required();
        return std::make_pair(sub, a);
    };
    {
        auto [sub, a] = make("add", "Add jobs (one per payload); prints their ids");
        add_payload_options(*sub, a->input);
        sub->add_option("--id", a->id, "The job's id (de-duplicates: a known id adds nothing)");
        add_duration(*sub, "--delay", a->delay, "Run no sooner than this after the add");
        sub->add_option("--after", a->after,
                        "Run only after these jobs (ids, comma-separated) completed; until then "
                        "the job is waiting_children")
            ->delimiter(',');
        sub->add_flag("--ignore-failed-dependencies", a->ignore_failed_deps,
                      "With --after: a failed or dead dependency does not fail the job");
        auto* group = sub->add_option(
            "--group", a->group,
            "The job's group (tenant): groups take turns, each under its limit (group-limit)");
        add_duration(*sub, "--dedupe-for", a->dedupe_for,
                     "With --id: once this long passed, a finished job's id is accepted again");
        add_duration(*sub, "--debounce", a->debounce,
                     "With --id: replace a waiting or delayed job's payload and delay it this "
                     "long (a running one: exit 2)");
        add_job_option_flags(*sub, *a);
        sub->footer(
            "PAYLOAD '-' reads one payload from stdin, --file F one from a file, byte for byte.\n"
            "--after with an unknown id adds nothing and exits 2.\n"
            "JSON: one {\"id\",\"added\",\"state\"} per line (\"debounced\":true after "
            "\"added\" when debounced).");
        sub->parse_complete_callback([a = a, group] { a->group_given = group->count() > 0; });
        sub->callback([a = a, &ctx] { ctx.run = [a, &ctx] { return run_add(ctx, *a); }; });
    }
    {
        auto [sub, a] = make("repeat",
                             "Register a repeatable job (every interval, or cron in a zone), or "
                             "--remove one");
        sub->add_option("repeat", a->repeat, "The repeat's name")->required();
        add_payload_options(*sub, a->input);
        add_duration(*sub, "--every", a->every,
                     "Tick at every multiple of this interval since the epoch", false);
        sub->add_option("--cron", a->cron,
                        "A cron expression: minute hour day-of-month month day-of-week");
        sub->add_option("--tz", a->zone, "The zone --cron is read in (IANA name)")
            ->capture_default_str();
        sub->add_flag("--skip-missed", a->skip_missed,
                      "Add only the latest of the ticks missed while no scheduler ran "
                      "(default: catch up, at most 1000)");
        sub->add_flag("--remove", a->remove, "Drop the repeat (jobs already added stay)");
        add_job_option_flags(*sub, *a);
        sub->footer(
            "Each tick adds a job 'repeat:NAME:TICK_MS' with the payload, exactly once, by the\n"
            "queue's scheduler: a job_scheduler in a program, or 'jobs work --scheduler'.\n"
            "Registering a known name replaces it (keeping its last tick). 'inspect jobs NAME'\n"
            "lists the repeats. --remove exits 1 for an unknown repeat.");
        sub->callback([a = a, &ctx] { ctx.run = [a, &ctx] { return run_repeat(ctx, *a); }; });
    }
    {
        auto [sub, a] =
            make("get", "Show a job: state, attempts, payload, progress, error, result");
        sub->add_option("id", a->id, "Job id")->required();
        sub->add_flag("--base64", a->base64, "Print the payload in base64 (binary payloads)");
        sub->footer(
            "Times are the server's, in UTC: added, due (a delayed job), started (last attempt), "
            "finished.\n"
            "Exit 1 for an unknown job. JSON: {\"id\",\"state\",\"payload\",\"priority\","
            "\"attempts\",\"max_attempts\",\"progress\",\"error\",\"worker\",\n"
            "\"added_at_ms\",\"due_at_ms\",\"started_at_ms\",\"finished_at_ms\"[,\"result\"]} "
            "(Unix ms, or null).");
        sub->callback([a = a, &ctx] { ctx.run = [a, &ctx] { return run_get(ctx, *a); }; });
    }
    {
        auto [sub, a] = make("cancel",
                             "Cancel a job: a waiting or delayed one fails at once, a "
                             "running one is told to stop");
        sub->add_option("id", a->id, "Job id")->required();
        sub->footer(
            "Prints the state it was in; exit 1 for an unknown job. JSON: "
            "{\"id\",\"known\"[,\"was\"]}.");
        sub->callback([a = a, &ctx] { ctx.run = [a, &ctx] { return run_cancel(ctx, *a); }; });
    }
    {
        auto [sub, a] = make("retry", "Make a dead or failed job waiting again (attempts reset)");
        sub->add_option("id", a->id, "Job id")->required();
        sub->footer(
            "Prints 'retried'; exit 1 when the job is not dead or failed. JSON: "
            "{\"id\",\"retried\"}.");
        sub->callback([a = a, &ctx] { ctx.run = [a, &ctx] { return run_retry(ctx, *a); }; });
    }
    {
        auto [sub, a] = make("remove", "Delete a job that is not active, with its result");
        sub->add_option("id", a->id, "Job id")->required();
        sub->footer(
            "Exit 1 for an unknown or an active job. JSON: {\"id\",\"removed\"[,\"state\"]}.");
        sub->callback([a = a, &ctx] { ctx.run = [a, &ctx] { return run_remove(ctx, *a); }; });
    }
    {
        auto [sub, a] =
            make("clean", "Delete finished jobs (completed, failed or dead) older than a cutoff");
        a->state = "failed";
        a->limit = 0;
        sub->add_option("--state", a->state, "completed, failed or dead")->capture_default_str();
        add_duration(*sub, "--older-than", a->older_than,
                     "Finished at least this long ago (0: all of them)");
        sub->add_option("--limit", a->limit, "At most this many (0: all)")->capture_default_str();
        sub->footer("Prints how many were removed. JSON: {\"name\",\"state\",\"removed\"}.");
        sub->callback([a = a, &ctx] { ctx.run = [a, &ctx] { return run_clean(ctx, *a); }; });
    }
    {
        auto [sub, a] = make("list", "List job ids in one state, in the order they run or ran");
        sub->add_option("--state", a->state, "waiting, delayed, active, completed, failed or dead")
            ->capture_default_str();
        sub->add_option("--limit", a->limit, "At most this many (0: all)")->capture_default_str();
        sub->footer("JSON: {\"name\",\"state\",\"ids\":[...]}.");
        sub->callback([a = a, &ctx] { ctx.run = [a, &ctx] { return run_list(ctx, *a); }; });
    }
    {
        auto [sub, a] = make("stats", "Jobs per state");
        sub->footer(
            "Prints 'paused' last when the queue is paused. JSON: {\"name\",\"waiting\","
            "\"delayed\",\"active\",\"completed\",\"failed\",\"dead\",\"paused\"}.");
        sub->callback([a = a, &ctx] { ctx.run = [a, &ctx] { return run_stats(ctx, *a); }; });
    }
    {
        auto [sub, a] =
            make("group-limit", "Set a group's concurrency limit across all workers (0: none)");
        sub->add_option("group", a->group, "The group")->required();
        sub->add_option("limit", a->group_limit, "At most this many of its jobs run at once")
            ->required();
        sub->footer(
            "Prints the previous limit (0: none). JSON: {\"name\",\"group\",\"limit\","
            "\"previous\"}.");
        sub->callback([a = a, &ctx] { ctx.run = [a, &ctx] { return run_group_limit(ctx, *a); }; });
    }
    for (const bool pause : {true, false}) {
        auto [sub, a] = make(pause ? "pause" : "resume",
                             pause ? "Pause the queue: workers claim nothing (running jobs finish)"
                                   : "Resume a paused queue; its idle workers claim at once");
        sub->footer(std::string("Prints '") + (pause ? "paused" : "resumed") +
                    "'; exit 1 when it already was so. JSON: {\"name\",\"paused\",\"changed\"}.");
        sub->callback([a = a, &ctx, pause] {
            ctx.run = [a, &ctx, pause] { return run_pause(ctx, *a, pause); };
        });
    }
}

}  // namespace redcoord::cli
