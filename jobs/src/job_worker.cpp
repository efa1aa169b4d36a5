#include "job_fields.hpp"
#include "job_queue_impl.hpp"
#include "job_queue_keys.hpp"
#include "job_replies.hpp"
#include "job_scripts.hpp"
#include "worker_engine.hpp"

#include <redcoord/core/deadline.hpp>
#include <redcoord/core/detail/error_slot.hpp>
#include <redcoord/core/detail/observe.hpp>
#include <redcoord/core/detail/pubsub_mux.hpp>
#include <redcoord/core/detail/thread_annotations.hpp>
#include <redcoord/core/detail/thread_name.hpp>
#include <redcoord/core/detail/timer_service.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/core/holder_label.hpp>
#include <redcoord/core/runtime.hpp>
#include <redcoord/core/token.hpp>
#include <redcoord/jobs/job_events.hpp>
#include <redcoord/jobs/job_worker.hpp>
#include <redcoord/signaling/signal_hub.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace redcoord {

namespace {

using std::chrono::milliseconds;
using clock_type = std::chrono::steady_clock;

// A uniform value in [0, 1) for the server's back-off jitter, as text.
std::string unit_random() {
    return std::to_string(static_cast<double>(random_u64() >> 11) * 0x1.0p-53);
}

constexpr std::size_t max_error_text = 1000;

detail::worker_settings settings_of(const job_worker_options& o) {
    detail::worker_settings s;
    s.lease = o.lease;
    s.poll_timeout = o.poll_timeout;
    s.timeout_margin = o.timeout_margin;
    s.settle_delay = o.settle_delay;
    s.prefetch = detail::prefetch_for(o.threads, o.prefetch);
    return s;
}

}  // namespace

struct job_worker::state {
    state(job_queue& q, job_handler h, job_worker_options o)
        : queue(q), keys(q.impl_->keys), handler(std::move(h)), opts(o),
          id(labelled_token(resolve_holder_label(o.label))), rt(q.pool().runtime()), hub(q.pool()),
          engine(settings_of(o), q.pool().runtime()->clock().now()) {
        const detail::metrics_scope ms(*rt);
        if (!ms) return;
        const auto name = ms.name(q.name());
        auto settled = [&](const char* outcome) {
            return ms.counter(detail::metric::jobs_settled_total,
                              {{"name", name}, {"outcome", outcome}});
        };
        meters.completed = settled("completed");
        meters.retried = settled("retried");
        meters.failed = settled("failed");
        meters.dead = settled("dead");
        meters.lost = settled("lost");
        meters.run_completed = ms.histogram(detail::metric::job_run_seconds,
                                            {{"name", name}, {"outcome", "completed"}});
        meters.run_failed =
            ms.histogram(detail::metric::job_run_seconds, {{"name", name}, {"outcome", "failed"}});
        meters.stalled = ms.counter(detail::metric::jobs_stalled_total, {{"name", name}});
    }

    // A claimed job waiting its turn on the thread that claimed it.
    struct claimed {
        detail::claimed_job_reply job;
        std::string token;
    };

    // A finished (or released) job's settlement for job_settle_script().
    struct settlement {
        char kind = 'c';  // 'c' completed, 'f' failed, 'r' released (never started)
        std::string id, token, text, event, extra;  // extra: u for 'f', the score for 'r'
    };

    job_queue& queue;
    std::shared_ptr<const detail::job_keys> keys;
    job_handler handler;
    job_worker_options opts;
    std::string id;
    std::shared_ptr<runtime> rt;
    signal_hub hub;  // envelopes of the events (exactly once per slot), stalled events

    detail::mutex mu;
    std::condition_variable wake_cv;
    bool woken REDCOORD_GUARDED_BY(mu) = false;  // a wake-up arrived since the waiter last looked
    bool stopping REDCOORD_GUARDED_BY(mu) = false;
    std::atomic<bool> running{false};  // start() .. the end of stop()
    // The decisions: the held jobs (claimed and not yet started, running, or settled but not
    // yet sent), their leases and stop tokens, heartbeats, settlement batching.
    detail::worker_engine engine REDCOORD_GUARDED_BY(mu);
    std::vector<settlement> pending REDCOORD_GUARDED_BY(mu);  // settlements not yet sent
    bool upkeep_done REDCOORD_GUARDED_BY(mu) = false;         // the upkeep thread returns
    std::condition_variable upkeep_cv;  // the upkeep thread waits here (flush armed, done)

    std::atomic<std::uint64_t> completed{0}, failed{0}, lost{0};
    struct {
        detail::counter_handle completed, retried, failed, dead, lost, stalled;
        detail::histogram_handle run_completed, run_failed;
    } meters;                   // redcoord_jobs_* (runtime metrics); empty handles when off
    detail::error_slot errors;  // claims, settlements and heartbeats that threw

    std::vector<std::thread> threads;
    // Heartbeats and batched settlements wait on the server; the watch timer, which fires the
    // stop tokens of lapsed leases, must not wait behind them. So they have a thread of their
    // own and the timer does no I/O.
    std::thread upkeeper;
    detail::pubsub_mux::listener wake_listener, cancel_listener;
    std::unique_ptr<detail::timer> watcher;

    // The time of the engine's leases, heartbeats and batches: the runtime's clock
    // (runtime_clock), whose advance() also wakes the upkeep thread (clock_registration).
    [[nodiscard]] clock_type::time_point now() const { return rt->clock().now(); }
    std::uint64_t clock_registration = 0;  // while started

    void wake() REDCOORD_EXCLUDES(mu) {
        {
            detail::lock_guard lk(mu);
            woken = true;
        }
        wake_cv.notify_all();
    }

    void cancelled(const std::string& job) REDCOORD_EXCLUDES(mu) {
        detail::lock_guard lk(mu);
        (void)engine.cancel(job);
    }

    // Sleeps until a wake-up, `wait` passes, or stop.
    void idle(milliseconds wait) REDCOORD_EXCLUDES(mu) {
        detail::unique_lock lk(mu);
        wake_cv.wait_for(lk.native(), wait, [&] {
            mu.assert_held();  // the wait retakes mu before the predicate runs
            return woken || stopping;
        });
        woken = false;
    }

    bool stopped() REDCOORD_EXCLUDES(mu) {
        detail::lock_guard lk(mu);
        return stopping;
    }

    // The claim arguments of claim_next() (job_scripts.cpp) for a new claim token. A worker
    // that batches by default (prefetch 0) claims one job at a time while groups take turns,
    // so that a small group's job never waits behind the rest of a batch; an explicit
    // prefetch batches there too.
    void append_claim_args(std::vector<std::string>& args, const std::string& token,
                           std::size_t want) const {
        const auto& qo = queue.options();
        args.insert(args.end(),
                    {id, std::to_string(opts.lease.count()), token, unit_random(), keys->wake,
                     std::to_string(qo.concurrency), std::to_string(qo.rate_limit),
                     std::to_string(qo.rate_interval.count()), std::to_string(want),
                     std::to_string(qo.keep_completed.count()), opts.prefetch == 0 ? "1" : "0"});
    }

    // The settlements not yet sent, for a claim sent at `now` to carry; `housekeep`: whether
    // that claim does the housekeeping.
    std::vector<settlement> take_pending(clock_type::time_point now, bool& housekeep)
        REDCOORD_EXCLUDES(mu) {
        detail::lock_guard lk(mu);
        std::vector<settlement> out;
        out.swap(pending);
        engine.flushed();
        if (out.empty()) {
            engine.housekeeping_done(now);
            housekeep = true;
        } else {
            housekeep = engine.housekeeping_due(now);
        }
        return out;
    }

    // Sends `batch` (may be empty) and, with a `claim_token`, claims in the same call (after
    // housekeeping unless `skip_housekeeping`). Returns the claim's reply, if one was asked.
    // Settled jobs leave `jobs` whether or not the call succeeded: when it failed, their
    // leases lapse and they are retried (never lost). @throws as the pool's commands.
    std::optional<detail::claim_reply> send(std::vector<settlement> batch,
                                            const std::string* claim_token, bool skip_housekeeping,
                                            std::size_t want = 1) REDCOORD_EXCLUDES(mu) {
        const std::array<std::string_view, 1> k{keys->base};
        if (batch.empty()) {
            if (!claim_token) return std::nullopt;
            std::vector<std::string> args;
            append_claim_args(args, *claim_token, want);
            return detail::decode_claim(detail::job_claim_script().run(queue.pool(), k, args));
        }
        const auto& qo = queue.options();
        std::vector<std::string> args{std::to_string(qo.result_ttl.count()),
                                      std::to_string(qo.keep_completed.count()),
                                      keys->events,
                                      keys->wake,
                                      qo.concurrency > 0 ? "1" : "0",
                                      std::to_string(batch.size())};
        args.reserve(args.size() + batch.size() * 6 + 11);
        // A failure's text (at most max_error_text) is kept for the record of a job gone dead;
        // a result may be large and is moved.
        for (auto& b : batch)
            args.insert(args.end(),
                        {std::string(1, b.kind), b.id, b.token,
                         b.kind == 'f' ? b.text : std::move(b.text), std::move(b.event), b.extra});
        if (claim_token) {
            args.emplace_back(skip_housekeeping ? "1" : "0");
            append_claim_args(args, *claim_token, want);
        }
        reply r;
        try {
            r = detail::job_settle_script().run(queue.pool(), k, args);
        } catch (...) {
            forget(batch);
            throw;
        }
        forget(batch);
        auto answer = detail::decode_settle(r, batch.size(), claim_token != nullptr);
        for (std::size_t i = 0; i < batch.size(); ++i) count_settled(batch[i], answer.outcomes[i]);
        return std::move(answer.claim);
    }

    // Counts one settlement by the script's answer: held (completed, failed to its new
    // state, released), or not (the token no longer held the job).
    void count_settled(const settlement& b, const detail::settle_outcome& v) {
        if (b.kind == 'c') {
            (v.held ? completed : lost).fetch_add(1);
            (v.held ? meters.completed : meters.lost).inc();
        } else if (b.kind == 'f') {
            if (!v.held) {
                lost.fetch_add(1);
                meters.lost.inc();
                return;
            }
            failed.fetch_add(1);
            const auto& to = v.new_state;
            if (to == "dead") {
                meters.dead.inc();
                rt->emit(log_level::warning, "jobs", "a job went dead after its last attempt",
                         {{"queue", queue.name()}, {"job", b.id}, {"error", b.text}});
            } else {
                (to == "failed" ? meters.failed : meters.retried).inc();
            }
        }
    }

    void forget(const std::vector<settlement>& batch) REDCOORD_EXCLUDES(mu) {
        detail::lock_guard lk(mu);
        for (const auto& b : batch) engine.forget(b.id, b.token);
    }

    // Queues a settlement. While the thread still holds claimed jobs it is sent by the
    // upkeep thread within settle_delay (or earlier, with the thread's next claim).
    void settle_later(settlement s, bool more_to_run) REDCOORD_EXCLUDES(mu) {
        bool arm = false;
        {
            detail::lock_guard lk(mu);
            pending.push_back(std::move(s));
            arm = engine.settlement_queued(now(), more_to_run);
        }
        if (arm) upkeep_cv.notify_all();
    }

    // On the upkeep thread: sends the settlements that waited settle_delay.
    void flush() noexcept REDCOORD_EXCLUDES(mu) {
        std::vector<settlement> batch;
        {
            detail::lock_guard lk(mu);
            engine.flushed();
            batch.swap(pending);
        }
        try {
            (void)send(std::move(batch), nullptr, true);
        } catch (const std::exception&) {
            errors.record();
        }
    }

    // The upkeep thread: the engine's heartbeats and armed flushes, until stop().
    void upkeep() noexcept REDCOORD_EXCLUDES(mu) {
        detail::unique_lock lk(mu);
        while (!upkeep_done) {
            const auto due = engine.upkeep_due();
            if (now() < due) {
                // Woken early by a flush armed, stop(), or the clock's advance().
                upkeep_cv.wait_until(lk.native(), rt->clock().to_steady(due));
                continue;
            }
            const auto now = this->now();
            const auto flush_at = engine.flush_at();
            const bool flush_due = flush_at && *flush_at <= now;
            auto beat_jobs = engine.beat(now);
            lk.unlock();
            if (flush_due) flush();
            if (beat_jobs && !beat_jobs->jobs.empty()) beat(*beat_jobs);
            lk.lock();
        }
    }

    std::size_t claim_size(double average_us) REDCOORD_EXCLUDES(mu) {
        detail::lock_guard lk(mu);
        return engine.claim_size(average_us);
    }

    void run_thread() REDCOORD_EXCLUDES(mu) {
        std::deque<claimed> local;  // claimed by this thread, not yet started
        double average_us = -1;     // of the handler's recent runs (moving average)
        while (true) {
            if (local.empty()) {
                const auto sent = now();
                bool housekeep = true;
                auto batch = take_pending(sent, housekeep);
                if (stopped()) {
                    try {
                        (void)send(std::move(batch), nullptr, true);
                    } catch (const std::exception&) {
                        errors.record();
                    }
                    return;
                }
                const auto token = random_token();
                detail::claim_reply r;
                try {
                    // A reply of another shape (not this version's scripts) throws
                    // protocol_error here: its jobs, if any, lapse and are retried; never
                    // the end of the thread.
                    r = *send(std::move(batch), &token, !housekeep, claim_size(average_us));
                } catch (const std::exception&) {
                    errors.record();
                    idle(opts.retry_delay);
                    continue;
                }
                announce_stalled(r.stalled);
                if (r.jobs.empty()) {
                    milliseconds wait{0};
                    {
                        detail::lock_guard lk(mu);
                        wait = engine.idle_wait(r.wait_ms);
                    }
                    if (wait.count() > 0) idle(wait);
                    continue;
                }
                take(std::move(r.jobs), token, sent, local);
            }
            if (stopped()) {
                // Unstarted jobs go back to waiting (their attempts undone), cancelled or
                // lost ones are failed: nothing is held past the drain.
                for (auto& c : local) settle_later(unstarted(c), false);
                local.clear();
                continue;
            }
            claimed c = std::move(local.front());
            local.pop_front();
            const auto started = clock_type::now();
            auto settled = run_job(c);
            const double took =
                std::chrono::duration<double, std::micro>(clock_type::now() - started).count();
            average_us = average_us < 0 ? took : 0.8 * average_us + 0.2 * took;
            settle_later(std::move(settled), !local.empty());
        }
    }

    // Records the jobs of a claim as held and queues them on `local`.
    void take(std::vector<detail::claimed_job_reply> jobs, const std::string& token,
              clock_type::time_point sent, std::deque<claimed>& local) REDCOORD_EXCLUDES(mu) {
        detail::lock_guard lk(mu);
        if (const auto rearm = engine.on_claimed(jobs, token, sent); rearm && watcher)
            watcher->arm(*rearm);
        for (auto& j : jobs) local.push_back({std::move(j), token});
    }

    // The settlement of a claimed job that will not run: released back to waiting, or failed
    // when its stop token fired (cancelled, or the lease was lost) before it started.
    settlement unstarted(const claimed& c) REDCOORD_EXCLUDES(mu) {
        bool stop = false;
        {
            detail::lock_guard lk(mu);
            stop = engine.stop_requested(c.job.id, c.token);
        }
        if (!stop) return {'r', c.job.id, c.token, {}, {}, c.job.score};
        const std::string reason = "cancelled before it started";
        return {'f',
                c.job.id,
                c.token,
                reason,
                hub.envelope(job_events::encode(job_event_kind::failed, c.job.id, reason)),
                unit_random()};
    }

    void announce_stalled(const std::vector<std::string>& ids) noexcept {
        if (ids.empty()) return;
        meters.stalled.inc(static_cast<double>(ids.size()));
        rt->emit(log_level::warning, "jobs", "took back the jobs of stalled workers",
                 {{"queue", queue.name()}, {"jobs", std::to_string(ids.size())}});
        for (const auto& i : ids) {
            try {
                (void)hub.broadcast(keys->events,
                                    job_events::encode(job_event_kind::stalled, i, {}));
            } catch (const std::exception&) {
                // An event lost with its link, as pub/sub loses them; the job itself is safe.
            }
        }
    }

    // Runs a claimed job; returns its settlement.
    settlement run_job(claimed& c) REDCOORD_EXCLUDES(mu) {
        std::stop_token stop;
        std::optional<clock_type::time_point> deadline;
        {
            detail::lock_guard lk(mu);
            stop = engine.stop_token(c.job.id, c.token);
            deadline = engine.deadline(c.job.id, c.token);
        }
        if (stop.stop_requested()) return unstarted(c);
        job_context ctx;
        ctx.id_ = c.job.id;
        ctx.payload_ = std::move(c.job.payload);
        ctx.attempt_ = c.job.attempt;
        ctx.max_attempts_ = c.job.options.max_attempts;
        ctx.priority_ = c.job.options.priority;
        ctx.stop_ = stop;
        ctx.deadline_ = deadline;
        ctx.dependency_results_ = std::move(c.job.dependency_results);
        ctx.held_until_ = [this, job = c.job.id,
                           token = c.token]() -> std::optional<clock_type::time_point> {
            detail::lock_guard lk(mu);
            return engine.held_until(job, token);
        };
        ctx.progress_ = [this, job = c.job.id, token = c.token](std::string_view progress) {
            return detail::decode_flag(
                detail::job_progress_script().run(
                    queue.pool(), {keys->base},
                    {job, token, progress, keys->events,
                     hub.envelope(job_events::encode(job_event_kind::progress, job, progress))}),
                "jobs_progress");
        };
        std::optional<std::string> result;
        std::string failure;
        const auto started = clock_type::now();
        try {
            result = handler(ctx);
        } catch (const std::exception& ex) {
            failure = ex.what();
        } catch (...) {
            failure = "the handler threw a non-standard exception";
        }
        if (failure.empty() && !result) failure = "no result";
        (result ? meters.run_completed : meters.run_failed).observe_since(started);
        if (failure.size() > max_error_text) failure.resize(max_error_text);
        if (result)
            return {'c',
                    c.job.id,
                    c.token,
                    std::move(*result),
                    hub.envelope(job_events::encode(job_event_kind::completed, c.job.id, {})),
                    {}};
        auto event = hub.envelope(job_events::encode(job_event_kind::failed, c.job.id, failure));
        return {'f', c.job.id, c.token, std::move(failure), std::move(event), unit_random()};
    }

    // On the upkeep thread: renews the leases the engine chose; the engine fires the stop
    // tokens of those the server says are cancelled or lost.
    void beat(const detail::beat_request& jobs) noexcept REDCOORD_EXCLUDES(mu) {
        const auto sent = now();
        std::vector<std::string> argv{std::to_string(opts.lease.count())};
        argv.reserve(1 + 2 * jobs.jobs.size());
        for (const auto& [job, token] : jobs.jobs) {
            argv.push_back(job);
            argv.push_back(token);
        }
        try {
            const std::array<std::string_view, 1> k{keys->base};
            const auto answers = detail::decode_heartbeat(
                detail::job_heartbeat_script().run(queue.pool(), k, argv), jobs.jobs.size());
            const auto now = this->now();
            detail::lock_guard lk(mu);
            (void)engine.on_beat_reply(jobs, answers, sent, now);
        } catch (const std::exception&) {
            // The bounds stay where the last confirmed renewals set them; watch() fires the
            // stop tokens when they pass, however long the server stays away.
            errors.record();
        }
    }

    // On the runtime's timer thread, with no I/O, so no stalled server delays it: fires the
    // stop tokens of the jobs whose lease's local bound or timeout margin has passed.
    std::optional<clock_type::time_point> watch() noexcept REDCOORD_EXCLUDES(mu) {
        detail::lock_guard lk(mu);
        return engine.watch(now()).next;
    }
};

bool job_context::report_progress(std::string_view progress) { return progress_(progress); }

std::optional<std::chrono::steady_clock::time_point> job_context::held_until() const {
    return held_until_();
}

job_worker::job_worker(job_queue& queue, job_handler handler, job_worker_options opts) {
    if (!handler) throw invalid_argument("job_worker needs a handler");
    if (opts.threads < 1) throw invalid_argument("job_worker_options::threads must be >= 1");
    if (opts.lease < milliseconds(30))
        throw invalid_argument("job_worker_options::lease must be >= 30 ms");
    if (opts.poll_timeout.count() <= 0)
        throw invalid_argument("job_worker_options::poll_timeout must be > 0");
    if (opts.retry_delay.count() < 0)
        throw invalid_argument("job_worker_options::retry_delay must be >= 0");
    if (opts.timeout_margin.count() < 0)
        throw invalid_argument("job_worker_options::timeout_margin must be >= 0");
    if (opts.prefetch > 1000)
        throw invalid_argument("job_worker_options::prefetch must be in 0..1000");
    if (opts.settle_delay.count() < 0)
        throw invalid_argument("job_worker_options::settle_delay must be >= 0");
    s_ = std::make_shared<state>(queue, std::move(handler), opts);
}

job_worker::~job_worker() { stop(); }

void job_worker::start() {
    auto& s = *s_;
    if (!s.threads.empty()) return;
    {
        detail::lock_guard lk(s.mu);
        s.stopping = false;
    }
    auto mux = s.rt->pubsub(s.queue.pool().where());
    state* raw = s_.get();  // the listeners are reset in stop(), before the state can go
    s.wake_listener = mux->listen(s.keys->wake, {[raw](const pubsub_message&) { raw->wake(); },
                                                 [raw](bool up) {
                                                     if (up) raw->wake();
                                                 }});
    s.cancel_listener = mux->listen(
        s.keys->cancel, {[raw](const pubsub_message& m) { raw->cancelled(m.payload); }, {}});
    // A job added between a first empty claim and the subscription would wait poll_timeout.
    (void)s.wake_listener.wait_confirmed(std::min(s.opts.poll_timeout, milliseconds(1000)));
    s.watcher = std::make_unique<detail::timer>(s.rt->timers(), [raw] { return raw->watch(); });
    {
        detail::lock_guard lk(s.mu);
        s.upkeep_done = false;
        s.watcher->arm(s.engine.watch(s.now()).next);
    }
    s.clock_registration = s.rt->clock().on_advance([raw] {
        { detail::lock_guard lk(raw->mu); }  // a waiter between its check and its wait sees it
        raw->upkeep_cv.notify_all();
    });
    s.running = true;
    try {
        s.upkeeper = std::thread([raw] {
            detail::name_this_thread("rc-job-upkeep");
            raw->upkeep();
        });
        for (std::size_t i = 0; i < s.opts.threads; ++i)
            s.threads.emplace_back([raw] {
                detail::name_this_thread("rc-job-work");
                raw->run_thread();
            });
    } catch (...) {
        stop();
        throw;
    }
}

void job_worker::request_stop() noexcept {
    auto& s = *s_;
    {
        detail::lock_guard lk(s.mu);
        s.stopping = true;
    }
    s.wake_cv.notify_all();
}

bool job_worker::running() const noexcept { return s_->running.load(); }

void job_worker::stop() noexcept {
    auto& s = *s_;
    request_stop();
    for (auto& t : s.threads)
        if (t.joinable()) t.join();
    s.threads.clear();
    // Every job is settled (or left to its lease): no more heartbeats. The threads sent what
    // was pending; a flush or heartbeat in progress finishes first.
    {
        detail::lock_guard lk(s.mu);
        s.upkeep_done = true;
    }
    s.upkeep_cv.notify_all();
    if (s.upkeeper.joinable()) s.upkeeper.join();
    if (s.clock_registration != 0)
        s.rt->clock().forget_advance(std::exchange(s.clock_registration, 0));
    s.watcher.reset();
    s.wake_listener.reset();
    s.cancel_listener.reset();
    s.running = false;
}

job_worker_stats job_worker::stats() const {
    return {s_->completed.load(), s_->failed.load(), s_->lost.load(), s_->errors.count()};
}

const std::string& job_worker::id() const noexcept { return s_->id; }

std::exception_ptr job_worker::last_error() const { return s_->errors.last(); }

}  // namespace redcoord
