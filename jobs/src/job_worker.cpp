#include "job_fields.hpp"
#include "job_lease.hpp"
#include "job_queue_keys.hpp"
#include "job_scripts.hpp"

#include <redcoord/core/deadline.hpp>
#include <redcoord/core/detail/error_slot.hpp>
#include <redcoord/core/detail/observe.hpp>
#include <redcoord/core/detail/pubsub_mux.hpp>
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

// A settlement's claim of the next job leaves out the housekeeping (promoting due delayed jobs,
// reclaiming stalled ones) when this worker did it less than this long ago: two range reads on
// every job cost more than the claim itself, and due jobs wait at most this much longer.
constexpr auto housekeeping_interval = std::chrono::milliseconds(10);

}  // namespace

struct job_worker::state {
    state(job_queue& q, job_handler h, job_worker_options o)
        : queue(q), keys(q.keys_), handler(std::move(h)), opts(o),
          id(labelled_token(resolve_holder_label(o.label))), rt(q.pool().runtime()), hub(q.pool()) {
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

    // A job this worker holds: claimed and not yet started, running, or settled but not yet
    // sent. The heartbeat renews its lease until its settlement is sent, or until the lease's
    // local bound passes: then its stop token fires and it is renewed no more.
    struct held {
        std::string token;
        std::stop_source stop;
        std::optional<clock_type::time_point> stop_at;  // the timeout's margin, if any
        detail::job_lease lease;
    };

    // A claimed job waiting its turn on the thread that claimed it.
    struct claimed {
        std::string id, payload, token, score;
        unsigned attempt = 0;
        detail::job_options_field options;
        milliseconds timeout{0};
    };

    // A finished (or released) job's settlement for job_settle_script().
    struct settlement {
        char kind = 'c';  // 'c' completed, 'f' failed, 'r' released (never started)
        std::string id, token, text, event, extra;  // extra: u for 'f', the score for 'r'
    };

    job_queue& queue;
    std::shared_ptr<const job_queue::keys> keys;
    job_handler handler;
    job_worker_options opts;
    std::string id;
    std::shared_ptr<runtime> rt;
    signal_hub hub;  // envelopes of the events (exactly once per slot), stalled events

    std::mutex mu;
    std::condition_variable wake_cv;
    bool woken = false;                // under mu: a wake-up arrived since the waiter last looked
    bool stopping = false;             // under mu
    std::map<std::string, held> jobs;  // under mu: id -> this worker's attempt
    std::vector<settlement> pending;   // under mu: settlements not yet sent
    // under mu: when the upkeep thread sends `pending` (none: not armed)
    std::optional<clock_type::time_point> flush_at;
    bool upkeep_done = false;             // under mu: the upkeep thread returns
    std::condition_variable upkeep_cv;    // the upkeep thread waits here (flush armed, done)
    clock_type::time_point watch_next{};  // under mu: when the watch timer runs next

    std::atomic<std::uint64_t> completed{0}, failed{0}, lost{0};
    struct {
        detail::counter_handle completed, retried, failed, dead, lost, stalled;
        detail::histogram_handle run_completed, run_failed;
    } meters;                   // redcoord_jobs_* (runtime metrics); empty handles when off
    detail::error_slot errors;  // claims, settlements and heartbeats that threw
    std::atomic<clock_type::rep> last_housekeeping{0};  // steady clock ticks

    std::vector<std::thread> threads;
    // Heartbeats and batched settlements wait on the server; the watch timer, which fires the
    // stop tokens of lapsed leases, must not wait behind them. So they have a thread of their
    // own and the timer does no I/O.
    std::thread upkeeper;
    detail::pubsub_mux::listener wake_listener, cancel_listener;
    std::unique_ptr<detail::timer> watcher;

    void wake() {
        {
            std::lock_guard lk(mu);
            woken = true;
        }
        wake_cv.notify_all();
    }

    void cancelled(const std::string& job) {
        std::lock_guard lk(mu);
        if (auto it = jobs.find(job); it != jobs.end()) it->second.stop.request_stop();
    }

    // Sleeps until a wake-up, `wait` passes, or stop.
    void idle(milliseconds wait) {
        std::unique_lock lk(mu);
        wake_cv.wait_for(lk, wait, [&] { return woken || stopping; });
        woken = false;
    }

    bool stopped() {
        std::lock_guard lk(mu);
        return stopping;
    }

    // Whether a claim made now should do the housekeeping; if so, it counts as done.
    bool housekeeping_due(clock_type::time_point now) {
        auto last = last_housekeeping.load();
        const auto t = now.time_since_epoch().count();
        const auto interval =
            std::chrono::duration_cast<clock_type::duration>(housekeeping_interval).count();
        if (t - last < interval) return false;
        return last_housekeeping.compare_exchange_strong(last, t);
    }

    // The claim arguments of claim_next() (job_scripts.cpp) for a new claim token.
    void append_claim_args(std::vector<std::string>& args, const std::string& token,
                           std::size_t want) const {
        const auto& qo = queue.options();
        args.insert(args.end(),
                    {id, std::to_string(opts.lease.count()), token, unit_random(), keys->wake,
                     std::to_string(qo.concurrency), std::to_string(qo.rate_limit),
                     std::to_string(qo.rate_interval.count()), std::to_string(want),
                     std::to_string(qo.keep_completed.count())});
    }

    std::vector<settlement> take_pending() {
        std::lock_guard lk(mu);
        std::vector<settlement> out;
        out.swap(pending);
        return out;
    }

    // Sends `batch` (may be empty) and, with a `claim_token`, claims in the same call (after
    // housekeeping unless `skip_housekeeping`). Returns the claim's reply, if one was asked.
    // Settled jobs leave `jobs` whether or not the call succeeded: when it failed, their
    // leases lapse and they are retried (never lost). @throws as the pool's commands.
    std::optional<reply> send(std::vector<settlement> batch, const std::string* claim_token,
                              bool skip_housekeeping, std::size_t want = 1) {
        const std::array<std::string_view, 1> k{keys->base};
        if (batch.empty()) {
            if (!claim_token) return std::nullopt;
            std::vector<std::string> args;
            append_claim_args(args, *claim_token, want);
            last_housekeeping.store(clock_type::now().time_since_epoch().count());
            return detail::job_claim_script().run(queue.pool(), k, args);
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
        std::optional<reply> r;
        try {
            r = detail::job_settle_script().run(queue.pool(), k, args);
        } catch (...) {
            forget(batch);
            throw;
        }
        forget(batch);
        const auto& results = r->elements().at(0).elements();
        for (std::size_t i = 0; i < batch.size() && i < results.size(); ++i)
            count_settled(batch[i], results[i]);
        if (!claim_token) return std::nullopt;
        return r->elements().at(1);
    }

    // Counts one settlement by the script's answer: 'c' 1, or 0 when the token no longer
    // held the job; 'f' the job's new state, or 0 likewise.
    void count_settled(const settlement& b, const reply& v) {
        if (b.kind == 'c') {
            const bool ok = v.is_integer() && v.integer() == 1;
            (ok ? completed : lost).fetch_add(1);
            (ok ? meters.completed : meters.lost).inc();
        } else if (b.kind == 'f') {
            if (!v.is_string()) {
                lost.fetch_add(1);
                meters.lost.inc();
                return;
            }
            failed.fetch_add(1);
            const auto& to = v.text();
            if (to == "dead") {
                meters.dead.inc();
                rt->emit(log_level::warning, "jobs", "a job went dead after its last attempt",
                         {{"queue", queue.name()}, {"job", b.id}, {"error", b.text}});
            } else {
                (to == "failed" ? meters.failed : meters.retried).inc();
            }
        }
    }

    void forget(const std::vector<settlement>& batch) {
        std::lock_guard lk(mu);
        for (const auto& b : batch)
            if (auto it = jobs.find(b.id); it != jobs.end() && it->second.token == b.token)
                jobs.erase(it);
    }

    // Queues a settlement. While the thread still holds claimed jobs it is sent by the
    // upkeep thread within settle_delay (or earlier, with the thread's next claim).
    void settle_later(settlement s, bool more_to_run) {
        bool arm = false;
        {
            std::lock_guard lk(mu);
            pending.push_back(std::move(s));
            if (more_to_run && !flush_at) {
                flush_at = clock_type::now() + opts.settle_delay;
                arm = true;
            }
        }
        if (arm) upkeep_cv.notify_all();
    }

    // On the upkeep thread: sends the settlements that waited settle_delay.
    void flush() noexcept {
        std::vector<settlement> batch;
        {
            std::lock_guard lk(mu);
            flush_at.reset();
            batch.swap(pending);
        }
        try {
            (void)send(std::move(batch), nullptr, true);
        } catch (const std::exception&) {
            errors.record();
        }
    }

    // The upkeep thread: a heartbeat every lease / 3 and the armed flushes, until stop().
    void upkeep() noexcept {
        auto next_beat = clock_type::now() + opts.lease / 3;
        std::unique_lock lk(mu);
        while (!upkeep_done) {
            const auto due = flush_at ? std::min(next_beat, *flush_at) : next_beat;
            if (clock_type::now() < due) {
                upkeep_cv.wait_until(lk, due);
                continue;
            }
            const bool flush_due = flush_at && *flush_at <= clock_type::now();
            lk.unlock();
            if (flush_due) flush();
            if (clock_type::now() >= next_beat) {
                next_beat = clock_type::now() + opts.lease / 3;
                beat();
            }
            lk.lock();
        }
    }

    // How many jobs to claim: with prefetch > 1, as many as this thread's recent handler
    // times (`average_us`; < 0: none yet) say it finishes within settle_delay, 1..prefetch.
    std::size_t batch_size(double average_us) const {
        if (opts.prefetch == 1 || average_us < 0) return 1;
        const double window_us =
            std::chrono::duration<double, std::micro>(opts.settle_delay).count();
        const double n = window_us / std::max(average_us, 1.0);
        return static_cast<std::size_t>(std::clamp(n, 1.0, static_cast<double>(opts.prefetch)));
    }

    void run_thread() {
        std::deque<claimed> local;  // claimed by this thread, not yet started
        double average_us = -1;     // of the handler's recent runs (moving average)
        while (true) {
            if (local.empty()) {
                auto batch = take_pending();
                if (stopped()) {
                    try {
                        (void)send(std::move(batch), nullptr, true);
                    } catch (const std::exception&) {
                        errors.record();
                    }
                    return;
                }
                const auto token = random_token();
                const auto sent = clock_type::now();
                const bool skip = !batch.empty() && !housekeeping_due(sent);
                reply r;
                try {
                    r = *send(std::move(batch), &token, skip, batch_size(average_us));
                } catch (const std::exception&) {
                    errors.record();
                    idle(opts.retry_delay);
                    continue;
                }
                try {
                    const auto& e = r.elements();
                    announce_stalled(e.at(1));
                    if (e.at(0).integer() == 0) {
                        const auto due = e.at(2).integer();
                        auto wait = opts.poll_timeout;
                        if (due >= 0) wait = std::min(wait, milliseconds(due));
                        if (wait.count() > 0) idle(wait);
                        continue;
                    }
                    take(e, token, sent, local);
                } catch (const std::exception&) {
                    // A reply of another shape (not this version's scripts): its jobs, if
                    // any, lapse and are retried; never the end of the thread.
                    errors.record();
                    idle(opts.retry_delay);
                    continue;
                }
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

    // Records the jobs of a claim reply as held and queues them on `local`.
    void take(const std::vector<reply>& e, const std::string& token, clock_type::time_point sent,
              std::deque<claimed>& local) {
        auto earliest = clock_type::time_point::max();
        std::lock_guard lk(mu);
        for (std::size_t i = 3; i < e.size(); ++i) {
            const auto& j = e[i].elements();
            claimed c;
            c.id = j.at(0).text();
            c.payload = j.at(1).text();
            c.attempt = static_cast<unsigned>(j.at(2).integer());
            c.options = detail::decode_job_options(j.at(3).text());
            c.timeout = milliseconds(std::stoll(j.at(4).text()));
            c.score = j.at(5).text();
            c.token = token;
            held h{token, {}, {}, detail::job_lease(opts.lease, sent)};
            earliest = std::min(earliest, h.lease.until());
            // Only a claim's first job may have a timeout (claim_next() keeps the others
            // free of them), so it starts at once and its timeout counts from the claim.
            if (c.timeout.count() > 0) {
                h.stop_at = sent + c.timeout - opts.timeout_margin;
                earliest = std::min(earliest, *h.stop_at);
            }
            jobs.insert_or_assign(c.id, std::move(h));
            local.push_back(std::move(c));
        }
        // Its timeout, or the lease of a claim whose reply came late, may end before the
        // watch timer's next run.
        if (earliest < watch_next && watcher) {
            watch_next = earliest;
            watcher->arm(earliest);
        }
    }

    // The settlement of a claimed job that will not run: released back to waiting, or failed
    // when its stop token fired (cancelled, or the lease was lost) before it started.
    settlement unstarted(const claimed& c) {
        bool stop = false;
        {
            std::lock_guard lk(mu);
            if (auto it = jobs.find(c.id); it != jobs.end() && it->second.token == c.token)
                stop = it->second.stop.stop_requested();
        }
        if (!stop) return {'r', c.id, c.token, {}, {}, c.score};
        const std::string reason = "cancelled before it started";
        return {'f',
                c.id,
                c.token,
                reason,
                hub.envelope(job_events::encode(job_event_kind::failed, c.id, reason)),
                unit_random()};
    }

    void announce_stalled(const reply& ids) noexcept {
        if (!ids.is_array() || ids.elements().empty()) return;
        meters.stalled.inc(static_cast<double>(ids.elements().size()));
        rt->emit(log_level::warning, "jobs", "took back the jobs of stalled workers",
                 {{"queue", queue.name()}, {"jobs", std::to_string(ids.elements().size())}});
        for (const auto& i : ids.elements()) {
            try {
                (void)hub.broadcast(keys->events,
                                    job_events::encode(job_event_kind::stalled, i.text(), {}));
            } catch (const std::exception&) {
                // An event lost with its link, as pub/sub loses them; the job itself is safe.
            }
        }
    }

    // Runs a claimed job; returns its settlement.
    settlement run_job(const claimed& c) {
        std::stop_token stop;
        std::optional<clock_type::time_point> deadline;
        {
            std::lock_guard lk(mu);
            if (auto it = jobs.find(c.id); it != jobs.end() && it->second.token == c.token) {
                stop = it->second.stop.get_token();
                if (it->second.stop_at) deadline = *it->second.stop_at + opts.timeout_margin;
            }
        }
        if (stop.stop_requested()) return unstarted(c);
        job_context ctx;
        ctx.id_ = c.id;
        ctx.payload_ = c.payload;
        ctx.attempt_ = c.attempt;
        ctx.max_attempts_ = c.options.max_attempts;
        ctx.priority_ = c.options.priority;
        ctx.stop_ = stop;
        ctx.deadline_ = deadline;
        ctx.held_until_ = [this, job = c.id,
                           token = c.token]() -> std::optional<clock_type::time_point> {
            std::lock_guard lk(mu);
            auto it = jobs.find(job);
            if (it == jobs.end() || it->second.token != token || it->second.lease.gone())
                return std::nullopt;
            return it->second.lease.until();
        };
        ctx.progress_ = [this, job = c.id, token = c.token](std::string_view progress) {
            return detail::job_progress_script()
                       .run(queue.pool(), {keys->base},
                            {job, token, progress, keys->events,
                             hub.envelope(
                                 job_events::encode(job_event_kind::progress, job, progress))})
                       .integer() == 1;
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
                    c.id,
                    c.token,
                    std::move(*result),
                    hub.envelope(job_events::encode(job_event_kind::completed, c.id, {})),
                    {}};
        auto event = hub.envelope(job_events::encode(job_event_kind::failed, c.id, failure));
        return {'f', c.id, c.token, std::move(failure), std::move(event), unit_random()};
    }

    // On the upkeep thread: renews the leases of the held jobs whose local bound has not
    // passed, and fires the stop tokens of those the server says are cancelled or lost.
    void beat() noexcept {
        const auto sent = clock_type::now();
        std::vector<std::string> argv{std::to_string(opts.lease.count())};
        {
            std::lock_guard lk(mu);
            for (auto& [job, h] : jobs) {
                // A job given up is not made ours again: it lapses for another worker.
                if (h.lease.gone(sent)) continue;
                argv.push_back(job);
                argv.push_back(h.token);
            }
        }
        if (argv.size() == 1) return;
        try {
            const std::array<std::string_view, 1> k{keys->base};
            const auto r = detail::job_heartbeat_script().run(queue.pool(), k, argv);
            const auto& e = r.elements();
            const auto now = clock_type::now();
            std::lock_guard lk(mu);
            for (std::size_t i = 0; i < e.size() && 1 + 2 * i + 1 < argv.size(); ++i) {
                auto it = jobs.find(argv[1 + 2 * i]);
                if (it == jobs.end() || it->second.token != argv[2 + 2 * i]) continue;
                if (e[i].integer() == 1)
                    it->second.lease.renewed(sent, now);
                else
                    it->second.stop.request_stop();
            }
        } catch (const std::exception&) {
            // The bounds stay where the last confirmed renewals set them; watch() fires the
            // stop tokens when they pass, however long the server stays away.
            errors.record();
        }
    }

    // On the runtime's timer thread, with no I/O, so no stalled server delays it: fires the
    // stop tokens of the jobs whose lease's local bound or timeout margin has passed.
    std::optional<clock_type::time_point> watch() noexcept {
        const auto now = clock_type::now();
        auto next = now + opts.lease / 3;
        std::lock_guard lk(mu);
        for (auto& [job, h] : jobs) {
            if (h.lease.gone(now))
                h.stop.request_stop();
            else
                next = std::min(next, h.lease.until());
            if (h.stop_at) {
                if (*h.stop_at <= now)
                    h.stop.request_stop();
                else
                    next = std::min(next, *h.stop_at);
            }
        }
        watch_next = next;
        return next;
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
    if (opts.prefetch < 1 || opts.prefetch > 1000)
        throw invalid_argument("job_worker_options::prefetch must be in 1..1000");
    if (opts.settle_delay.count() < 0)
        throw invalid_argument("job_worker_options::settle_delay must be >= 0");
    s_ = std::make_shared<state>(queue, std::move(handler), opts);
}

job_worker::~job_worker() { stop(); }

void job_worker::start() {
    auto& s = *s_;
    if (!s.threads.empty()) return;
    {
        std::lock_guard lk(s.mu);
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
        std::lock_guard lk(s.mu);
        s.upkeep_done = false;
        s.watch_next = clock_type::now() + s.opts.lease / 3;
        s.watcher->arm(s.watch_next);
    }
    try {
        s.upkeeper = std::thread([raw] { raw->upkeep(); });
        for (std::size_t i = 0; i < s.opts.threads; ++i)
            s.threads.emplace_back([raw] { raw->run_thread(); });
    } catch (...) {
        stop();
        throw;
    }
}

void job_worker::stop() noexcept {
    auto& s = *s_;
    {
        std::lock_guard lk(s.mu);
        s.stopping = true;
    }
    s.wake_cv.notify_all();
    for (auto& t : s.threads)
        if (t.joinable()) t.join();
    s.threads.clear();
    // Every job is settled (or left to its lease): no more heartbeats. The threads sent what
    // was pending; a flush or heartbeat in progress finishes first.
    {
        std::lock_guard lk(s.mu);
        s.upkeep_done = true;
    }
    s.upkeep_cv.notify_all();
    if (s.upkeeper.joinable()) s.upkeeper.join();
    s.watcher.reset();
    s.wake_listener.reset();
    s.cancel_listener.reset();
}

job_worker_stats job_worker::stats() const {
    return {s_->completed.load(), s_->failed.load(), s_->lost.load(), s_->errors.count()};
}

const std::string& job_worker::id() const noexcept { return s_->id; }

std::exception_ptr job_worker::last_error() const { return s_->errors.last(); }

}  // namespace redcoord
