#include "job_queue_keys.hpp"
#include "job_replies.hpp"
#include "job_scripts.hpp"
#include "replicated_run.hpp"
#include "tick_plan.hpp"

#include <redcoord/core/detail/error_slot.hpp>
#include <redcoord/core/detail/observe.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/core/token.hpp>
#include <redcoord/election/election_options.hpp>
#include <redcoord/election/leader_elector.hpp>
#include <redcoord/election/leader_task.hpp>
#include <redcoord/jobs/job_scheduler.hpp>

#include <atomic>
#include <map>
#include <mutex>

namespace redcoord {

struct job_scheduler::state {
    state(job_queue& q, job_scheduler_options o)
        : queue(q), opts(std::move(o)), keys(detail::make_job_keys(q.options().prefix, q.name())),
          selector(make_election_keys(q.options().prefix, q.name()).selector) {
        if (opts.identity.empty()) opts.identity = "scheduler-" + random_token().substr(0, 16);
        election_options eo;
        eo.identity = opts.identity;
        eo.term = opts.term;
        eo.prefix = q.options().prefix;
        elector = std::make_unique<leader_elector>(q.pool(), q.name(), eo);
        const detail::metrics_scope ms(*q.pool().runtime());
        ticks = ms.counter(detail::metric::jobs_ticks_total, {{"name", ms.name(q.name())}});
    }

    job_queue& queue;
    job_scheduler_options opts;
    detail::job_keys keys;
    std::string selector;
    std::unique_ptr<leader_elector> elector;
    std::unique_ptr<leader_task> task;
    std::atomic<std::uint64_t> added{0};
    detail::counter_handle ticks;  // redcoord_jobs_ticks_total, or nothing
    detail::error_slot errors;     // passes that threw
    // Parsed schedules and loaded zones by their text: a pass re-reads the repeats each time.
    std::map<std::string, cron_schedule> crons;
    std::map<std::string, time_zone> zones;

    detail::tick_rule rule_of(const detail::repeat_entry& f) {
        detail::tick_rule r;
        r.every = f.every;
        r.catch_up = f.missed != "skip";
        if (r.every.count() <= 0) {
            const auto& expr = f.cron;
            auto c = crons.find(expr);
            if (c == crons.end()) c = crons.emplace(expr, cron_schedule(expr)).first;
            r.cron = c->second;
            const auto& zone = f.time_zone;
            auto z = zones.find(zone);
            if (z == zones.end()) z = zones.emplace(zone, time_zone::load(zone)).first;
            r.zone = z->second;
        }
        return r;
    }

    // Runs the tick script; with job_queue_options::replication, waits (WAIT) as an add does, so
    // that the ticks and the repeat's last tick are on a replica before the next pass: a
    // failover then neither loses a tick a worker may have run nor adds it again. An
    // unconfirmed pass counts as an error; its ticks stand on the master.
    // Counts the ticks added, confirmed or not.
    std::uint64_t add_ticks(std::span<const std::string_view> k,
                            const std::vector<std::string>& argv) {
        const std::vector<std::string_view> args(argv.begin(), argv.end());
        const auto& qo = queue.options();
        auto w = detail::run_replicated(queue.pool(), qo, detail::job_tick_script(), k, args);
        const auto n = detail::decode_count(w.result, "jobs_tick");
        added.fetch_add(n);
        ticks.inc(static_cast<double>(n));
        if (!w.confirmed)
            detail::throw_unconfirmed("job_scheduler: ticks of '" + queue.name() + "'", w.acks, qo);
        return n;
    }

    // One pass of the leader under `epoch` (on the leader task's thread).
    void pass(std::uint64_t epoch) {
        detail::repeat_list_reply list;
        try {
            list = detail::decode_repeat_list(
                detail::job_repeat_list_script().run(queue.pool(), {keys.base}, {}));
        } catch (const std::exception&) {
            errors.record();
            return;
        }
        for (const auto& f : list.repeats) {
            try {
                const auto ticks = detail::due_ticks(rule_of(f), f.last_tick_ms, list.now_ms);
                if (ticks.empty()) continue;
                std::vector<std::string> argv{opts.identity, std::to_string(epoch), f.name,
                                              keys.wake};
                for (auto t : ticks) argv.push_back(std::to_string(t));
                const std::array<std::string_view, 2> k{keys.base, selector};
                (void)add_ticks(k, argv);
            } catch (const std::exception&) {
                // Fenced off (a newer leader), the server unreachable, or a repeat whose
                // schedule no longer parses: the next pass tries again.
                errors.record();
            }
        }
    }
};

job_scheduler::job_scheduler(job_queue& queue, job_scheduler_options opts) {
    if (opts.term.count() <= 0) throw invalid_argument("job_scheduler_options::term must be > 0");
    if (opts.check_interval.count() <= 0)
        throw invalid_argument("job_scheduler_options::check_interval must be > 0");
    s_ = std::make_shared<state>(queue, std::move(opts));
}

job_scheduler::~job_scheduler() { stop(); }

void job_scheduler::start() {
    if (s_->task) return;
    s_->elector->start();
    state* raw = s_.get();  // the task is stopped in stop(), before the state can go
    s_->task = std::make_unique<leader_task>(
        *s_->elector, s_->opts.check_interval,
        [raw](std::uint64_t epoch, const std::stop_token&) { raw->pass(epoch); });
}

void job_scheduler::stop() noexcept {
    if (s_->task) s_->task->stop();
    s_->task.reset();
    s_->elector->stop();
}

bool job_scheduler::is_leader() const noexcept { return s_->elector->is_leader(); }
std::uint64_t job_scheduler::ticks_added() const noexcept { return s_->added.load(); }
std::uint64_t job_scheduler::errors() const noexcept { return s_->errors.count(); }

std::exception_ptr job_scheduler::last_error() const {
    if (auto e = s_->errors.last()) return e;
    return s_->elector->last_error();
}

}  // namespace redcoord
