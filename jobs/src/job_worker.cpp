#include "job_fields.hpp"
#include "job_queue_keys.hpp"
#include "job_scripts.hpp"

#include <redcoord/core/deadline.hpp>
#include <redcoord/core/detail/pubsub_mux.hpp>
#include <redcoord/core/detail/timer_service.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/core/runtime.hpp>
#include <redcoord/core/token.hpp>
#include <redcoord/jobs/job_events.hpp>
#include <redcoord/jobs/job_worker.hpp>
#include <redcoord/signaling/signal_hub.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
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
        : queue(q), keys(q.keys_), handler(std::move(h)), opts(o), id(random_token()),
          rt(q.pool().runtime()), hub(q.pool()) {}

    struct running {
        std::string token;
        std::stop_source stop;
        std::optional<clock_type::time_point> stop_at;  // the timeout's margin, if any
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
    bool woken = false;     // under mu: a wake-up arrived since the waiter last looked
    bool stopping = false;  // under mu
    std::map<std::string, running> jobs;  // under mu: id -> this worker's running attempt

    std::atomic<std::uint64_t> completed{0}, failed{0}, lost{0}, errors{0};
    std::atomic<clock_type::rep> last_housekeeping{0};  // steady clock ticks

    // Whether a claim made now should do the housekeeping; if so, it counts as done.
    bool housekeeping_due(clock_type::time_point now) {
        auto last = last_housekeeping.load();
        const auto t = now.time_since_epoch().count();
        if (t - last <
            std::chrono::duration_cast<clock_type::duration>(housekeeping_interval).count())
            return false;
        return last_housekeeping.compare_exchange_strong(last, t);
    }

    std::vector<std::thread> threads;
    detail::pubsub_mux::listener wake_listener, cancel_listener;
    std::unique_ptr<detail::timer> heartbeat;

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

    // A claim: its reply, and the token and send time it was made with.
    struct claim {
        reply r;
        std::string token;
        clock_type::time_point sent;
    };

    // The claim arguments of claim_next() (job_scripts.cpp) for a new claim token.
    std::vector<std::string> claim_args(const std::string& token) const {
        const auto& qo = queue.options();
        return {id,
                std::to_string(opts.lease.count()),
                token,
                unit_random(),
                keys->wake,
                std::to_string(qo.concurrency),
                std::to_string(qo.rate_limit),
                std::to_string(qo.rate_interval.count())};
    }

    void run_thread() {
        // A job claimed by the last settlement (in the same script): run even when stop() came
        // meanwhile, so a drain leaves no claimed job to its lease.
        std::optional<claim> next;
        while (next || !stopped()) {
            claim c;
            if (next) {
                c = std::move(*next);
                next.reset();
            } else {
                c.token = random_token();
                c.sent = clock_type::now();
                last_housekeeping.store(c.sent.time_since_epoch().count());
                try {
                    const std::array<std::string_view, 1> k{keys->base};
                    c.r = detail::job_claim_script().run(queue.pool(), k, claim_args(c.token));
                } catch (const std::exception&) {
                    errors.fetch_add(1);
                    idle(opts.retry_delay);
                    continue;
                }
            }
            const auto& e = c.r.elements();
            announce_stalled(e.at(1));
            if (e.at(0).integer() == 0) {
                const auto due = e.at(2).integer();
                auto wait = opts.poll_timeout;
                if (due >= 0) wait = std::min(wait, milliseconds(due));
                if (wait.count() > 0) idle(wait);
                continue;
            }
            next = run_job(e, c.token, c.sent);
        }
    }

    void announce_stalled(const reply& ids) noexcept {
        if (!ids.is_array()) return;
        for (const auto& i : ids.elements()) {
            try {
                (void)hub.broadcast(keys->events,
                                    job_events::encode(job_event_kind::stalled, i.text(), {}));
            } catch (const std::exception&) {
                // An event lost with its link, as pub/sub loses them; the job itself is safe.
            }
        }
    }

    // Runs the claimed job and settles it; returns the next job's claim when the settlement
    // made one (not while stopping).
    std::optional<claim> run_job(const std::vector<reply>& e, const std::string& token,
                                 clock_type::time_point sent) {
        job_context ctx;
        ctx.id_ = e.at(2).text();
        ctx.payload_ = e.at(3).text();
        ctx.attempt_ = static_cast<unsigned>(e.at(4).integer());
        const auto o = detail::decode_job_options(e.at(5).text());
        ctx.max_attempts_ = o.max_attempts;
        ctx.priority_ = o.priority;
        const auto timeout = milliseconds(std::stoll(e.at(6).text()));
        ctx.progress_ = [this, job = ctx.id_, token](std::string_view progress) {
            return detail::job_progress_script()
                       .run(queue.pool(), {keys->base},
                            {job, token, progress, keys->events,
                             hub.envelope(
                                 job_events::encode(job_event_kind::progress, job, progress))})
                       .integer() == 1;
        };
        {
            std::lock_guard lk(mu);
            auto& r = jobs[ctx.id_];
            r.token = token;
            if (timeout.count() > 0) r.stop_at = sent + timeout - opts.timeout_margin;
            ctx.stop_ = r.stop.get_token();
        }
        // Its timeout may come before the next heartbeat.
        if (timeout.count() > 0 && heartbeat) heartbeat->arm(clock_type::now());
        std::optional<std::string> result;
        std::string failure;
        try {
            result = handler(ctx);
        } catch (const std::exception& ex) {
            failure = ex.what();
        } catch (...) {
            failure = "the handler threw a non-standard exception";
        }
        if (failure.empty() && !result) failure = "no result";
        if (failure.size() > max_error_text) failure.resize(max_error_text);
        const bool limited = queue.options().concurrency > 0;
        std::optional<claim> next;
        if (!stopped()) {
            next.emplace();
            next->token = random_token();
            next->sent = clock_type::now();
        }
        try {
            std::vector<std::string> args;
            if (result)
                args = {ctx.id_,
                        token,
                        *result,
                        std::to_string(queue.options().result_ttl.count()),
                        std::to_string(queue.options().keep_completed.count()),
                        keys->events,
                        hub.envelope(job_events::encode(job_event_kind::completed, ctx.id_, {})),
                        limited ? keys->wake : std::string()};
            else
                args = {ctx.id_,
                        token,
                        failure,
                        unit_random(),
                        keys->wake,
                        keys->events,
                        hub.envelope(job_events::encode(job_event_kind::failed, ctx.id_, failure)),
                        limited ? "1" : "0"};
            if (next) {
                args.emplace_back(housekeeping_due(next->sent) ? "0" : "1");
                auto more = claim_args(next->token);
                args.insert(args.end(), more.begin(), more.end());
            }
            const std::array<std::string_view, 1> k{keys->base};
            const auto r = (result ? detail::job_complete_script() : detail::job_fail_script())
                               .run(queue.pool(), k, args);
            const auto& settled = r.elements().at(0);
            if (result)
                (settled.is_integer() && settled.integer() == 1 ? completed : lost).fetch_add(1);
            else
                (settled.is_string() ? failed : lost).fetch_add(1);
            if (next) {
                if (r.elements().size() > 1)
                    next->r = r.elements()[1];
                else
                    next.reset();
            }
        } catch (const std::exception&) {
            // Not lost: the lease lapses and the job is reclaimed and retried. The claim, if
            // the script ran, is reclaimed the same way.
            errors.fetch_add(1);
            next.reset();
        }
        {
            std::lock_guard lk(mu);
            if (auto it = jobs.find(ctx.id_); it != jobs.end() && it->second.token == token)
                jobs.erase(it);
        }
        return next;
    }

    // On the runtime's timer thread: renews the running jobs' leases and fires the stop tokens
    // of those cancelled, lost or about to time out.
    std::optional<clock_type::time_point> beat() noexcept {
        const auto now = clock_type::now();
        auto next = now + opts.lease / 3;
        std::vector<std::string> argv{std::to_string(opts.lease.count())};
        {
            std::lock_guard lk(mu);
            for (auto& [job, r] : jobs) {
                argv.push_back(job);
                argv.push_back(r.token);
                if (r.stop_at) {
                    if (*r.stop_at <= now)
                        r.stop.request_stop();
                    else
                        next = std::min(next, *r.stop_at);
                }
            }
        }
        if (argv.size() == 1) return next;
        try {
            const std::array<std::string_view, 1> k{keys->base};
            const auto r = detail::job_heartbeat_script().run(queue.pool(), k, argv);
            const auto& e = r.elements();
            std::lock_guard lk(mu);
            for (std::size_t i = 0; i < e.size() && 1 + 2 * i + 1 < argv.size(); ++i) {
                if (e[i].integer() == 1) continue;
                auto it = jobs.find(argv[1 + 2 * i]);
                if (it != jobs.end() && it->second.token == argv[2 + 2 * i])
                    it->second.stop.request_stop();
            }
        } catch (const std::exception&) {
            errors.fetch_add(1);
        }
        return next;
    }
};

bool job_context::report_progress(std::string_view progress) { return progress_(progress); }

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
    s.heartbeat = std::make_unique<detail::timer>(s.rt->timers(), [raw] { return raw->beat(); });
    s.heartbeat->arm(clock_type::now() + s.opts.lease / 3);
    try {
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
    // Every job is settled (or left to its lease): no more heartbeats.
    s.heartbeat.reset();
    s.wake_listener.reset();
    s.cancel_listener.reset();
}

job_worker_stats job_worker::stats() const {
    return {s_->completed.load(), s_->failed.load(), s_->lost.load(), s_->errors.load()};
}

const std::string& job_worker::id() const noexcept { return s_->id; }

}  // namespace redcoord
