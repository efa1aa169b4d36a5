#include <redcoord/core/detail/observe.hpp>
#include <redcoord/core/detail/pubsub_mux.hpp>
#include <redcoord/core/detail/refusal.hpp>
#include <redcoord/core/detail/serial_executor.hpp>
#include <redcoord/core/detail/thread_annotations.hpp>
#include <redcoord/core/detail/timer_service.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/core/runtime.hpp>
#include <redcoord/election/leader_elector.hpp>

#include "elector_engine.hpp"
#include "leadership_watch.hpp"
#include "test_hooks.hpp"

#include <algorithm>
#include <mutex>
#include <stop_token>

namespace redcoord {

std::string_view to_string(revoke_reason r) noexcept {
    switch (r) {
        case revoke_reason::lost: return "lost";
        case revoke_reason::expired: return "expired";
        case revoke_reason::resigned: return "resigned";
        case revoke_reason::connection: return "connection";
    }
    return "unknown";
}

namespace {
using clock_type = std::chrono::steady_clock;
using std::chrono::milliseconds;
using detail::elector_command;
using detail::elector_event;
}  // namespace

// The driver: every decision is the engine's (elector_engine.cpp); this struct does the I/O on
// the runtime's shared threads. One detail::timer runs the rounds and the lease-end step-down on
// the runtime's timer thread, a detail::strand delivers the callbacks on its callback thread,
// and a pub/sub_mux listener hears the handoff signals: the elector owns no thread.
struct leader_elector::impl {
    leader_elector& owner;
    connection_pool& pool;
    master_selector selector;
    std::shared_ptr<redcoord::runtime> rt;  // outlives the timer, strand and listener below

    // lifecycle_mu: serialises start() and stop(), so concurrent stops (the destructor racing an
    // explicit stop) run one after the other.
    std::mutex lifecycle_mu;
    // round_mu: serialises a campaign round (I/O + state update) with resign() and stop(), so a
    // round in flight cannot re-confirm a leadership that resign() just gave up, and stop()
    // waits for the round in flight.
    std::mutex round_mu;

    mutable detail::mutex mu;  // guards everything below, up to the strand
    bool running REDCOORD_GUARDED_BY(mu) = false;
    // The timer's tick is under way and returns its next due time from the engine when it
    // ends: inputs meanwhile must not arm the timer, or its return would be overridden by a due
    // time computed before the round's result (a renewal would be skipped).
    bool ticking REDCOORD_GUARDED_BY(mu) = false;
    detail::elector_engine engine REDCOORD_GUARDED_BY(mu);
    // Stopped when the current leadership ends, by the transition itself: neither a user slot
    // nor a round in flight can skip or delay it.
    std::stop_source term_stop REDCOORD_GUARDED_BY(mu);
    // The latest round's failure (null after a round that got an answer): rounds run on the
    // timer thread, so this is how a caller learns that the ACL user lacks a command.
    std::exception_ptr round_error REDCOORD_GUARDED_BY(mu);
    // The asynchronous waits (async_wait_until_leader): told of every transition under mu, so
    // none is missed between a wait's first look and its registration.
    const std::shared_ptr<detail::leadership_watchers> watchers =
        std::make_shared<detail::leadership_watchers>();

    // Destroyed first (reverse order): no tick, callback or handoff handler outlives the rest.
    // The time of the engine's rounds, lease and term: the runtime's clock (runtime_clock).
    runtime_clock& clock;
    detail::strand callbacks;
    detail::timer timer;
    detail::pubsub_mux::listener handoff;  // only touched under lifecycle_mu

    // redcoord_election_leader and redcoord_election_terms_total (empty when metrics are off).
    detail::gauge_handle leader_gauge;
    detail::counter_handle terms;

    impl(leader_elector& o, connection_pool& p, std::string name, election_options opts)
        : owner(o), pool(p), selector(p, std::move(name), std::move(opts)), rt(p.runtime()),
          engine(selector.options().identity, selector.options().retry_period), clock(rt->clock()),
          callbacks(rt->callbacks()), timer(rt->timers(), [this] { return tick(); }) {
        const detail::metrics_scope ms(*rt);
        if (!ms) return;
        const auto n = ms.name(selector.name());
        leader_gauge =
            ms.gauge(detail::metric::election_leader,
                     {{"name", n}, {"identity", ms.identity(selector.options().identity)}});
        leader_gauge.set(0);  // the series exists (0) from the start, not only once leading
        terms = ms.counter(detail::metric::election_terms_total, {{"name", n}});
    }

    // Metrics and the log line of a transition (with mu held: in the engine's order).
    void observe(const elector_event& e) const noexcept {
        const auto& id = selector.options().identity;
        if (e.what == elector_event::kind::elected) {
            leader_gauge.set(1);
            terms.inc();
            rt->emit(
                log_level::info, "election", "leadership gained",
                {{"name", selector.name()}, {"identity", id}, {"epoch", std::to_string(e.epoch)}});
        } else if (e.what == elector_event::kind::revoked) {
            leader_gauge.set(0);
            rt->emit(
                log_level::warning, "election", "leadership lost",
                {{"name", selector.name()}, {"identity", id}, {"reason", to_string(e.reason)}});
        }
    }

    // With mu held, after every engine input: hands the engine's events to the strand, in
    // order. A leadership's stop token is stopped before its `revoked` is queued, so leader
    // work hears of the end first.
    void publish() REDCOORD_REQUIRES(mu) {
        auto events = engine.take_events();
        for (auto& e : events) {
            observe(e);
            if (e.what == elector_event::kind::elected) term_stop = std::stop_source{};
            if (e.what == elector_event::kind::revoked) term_stop.request_stop();
            try {
                callbacks.post([this, e = std::move(e)] { deliver(e); });
            } catch (...) {
                // The runtime's callback thread could not start: the notification is lost,
                // the state (and the stop token) is not.
            }
        }
        // After the stop token: a wait never completes with a leadership already ended.
        if (!events.empty() || round_error) tell_watchers(false);
    }

    // The leadership at `now`: epoch and token of the same leadership.
    [[nodiscard]] leadership leadership_at(clock_type::time_point now) const REDCOORD_REQUIRES(mu) {
        if (engine.is_leader(now)) return {engine.epoch(now), term_stop.get_token()};
        std::stop_source ended;
        ended.request_stop();
        return {0, ended.get_token()};
    }

    // With mu held: hands the state to the asynchronous waits (each only posts it).
    void tell_watchers(bool stopped) REDCOORD_REQUIRES(mu) {
        if (watchers->size() == 0) return;
        watchers->notify({leadership_at(clock.now()), stopped, round_error});
    }

    // With mu held, after an input from outside the tick: the timer follows the engine.
    void rearm() REDCOORD_REQUIRES(mu) {
        if (ticking) return;  // the running tick returns the engine's next due time itself
        if (const auto due = engine.next_due())
            timer.arm(*due);
        else
            timer.disarm();
    }

    // The timer's tick: the lease-end step-down, and a round when one is due. The round's I/O
    // runs here too; a leader bounds it by its lease end, so its own step-down is not late.
    std::optional<clock_type::time_point> tick() REDCOORD_EXCLUDES(mu) {
        {
            detail::lock_guard g(mu);
            ticking = true;
            const auto now = clock.now();
            engine.expire(now);
            publish();
            const auto due = engine.next_round_due();
            if (!due || now < *due) {
                ticking = false;
                return engine.next_due();
            }
        }
        if (auto hook = detail::election_before_round.load()) hook(selector.options().identity);
        campaign_round();
        detail::lock_guard g(mu);
        ticking = false;
        return engine.next_due();
    }

    // The reply wait of a round started at `now`. The round runs on the runtime's shared timer
    // thread, so a stalled server must not hold it for the endpoint's whole command_timeout:
    // other objects' ticks (another elector's renewal) wait behind it. An answer later than one
    // retry period is superseded by the next round anyway, and a leader's answer after its
    // lease end confirms nothing it could use in time. With replicas, WAIT's own
    // replica_timeout belongs to the round: a candidate's round shorter than it could never
    // count (its WAIT would always be cut off), so it is added to the period and the command
    // timeout; a leader's round still ends by its lease end.
    [[nodiscard]] milliseconds reply_timeout(clock_type::time_point now) const
        REDCOORD_REQUIRES(mu) {
        const auto& o = selector.options();
        const auto replication =
            o.replication.replicas > 0 ? o.replication.timeout : milliseconds::zero();
        auto wait = o.retry_period + replication;
        if (const auto end = engine.lease_end())
            wait = std::min(wait,
                            std::max(milliseconds(1), std::chrono::ceil<milliseconds>(*end - now)));
        const auto command = pool.where().command_timeout;
        return command > milliseconds::zero() ? std::min(wait, command + replication) : wait;
    }

    // One round under round_mu. The engine decides again there whether it is due: a resign()
    // may have run since the tick's check, and the resigner must not win its own handoff at
    // once.
    void campaign_round() REDCOORD_EXCLUDES(mu) {
        std::lock_guard round(round_mu);
        const auto started = clock.now();
        milliseconds wait{};
        {
            detail::lock_guard g(mu);
            const auto cmd = engine.poll(started);
            publish();
            if (cmd != elector_command::campaign) return;
            wait = reply_timeout(started);
        }
        std::optional<campaign_result> r;
        std::exception_ptr failure;
        try {
            r = selector.campaign_once(wait);
        } catch (const std::exception&) {
            // Transport or server failure: the lease end decides; retry next period.
            failure = std::current_exception();
        }
        detail::lock_guard g(mu);
        round_error = failure;
        engine.round_done(clock.now(), started, r);
        publish();
    }

    void deliver(const elector_event& e) noexcept {
        try {
            switch (e.what) {
                case elector_event::kind::elected: owner.elected_(e.epoch); break;
                case elector_event::kind::revoked: owner.revoked_(e.reason); break;
                case elector_event::kind::leader_changed: owner.leader_changed_(e.identity); break;
            }
        } catch (...) {
            // A callback's exception must not stop the delivery of later events.
        }
    }

    void on_handoff(const pubsub_message& m) REDCOORD_EXCLUDES(mu) {
        detail::lock_guard g(mu);
        engine.handoff(m.payload);
        publish();
        rearm();
    }

    void on_handoff_link(bool up) REDCOORD_EXCLUDES(mu) {
        if (!up) return;
        detail::lock_guard g(mu);
        engine.resubscribed();
        publish();
        rearm();
    }

    // Runs the resign script the engine asked for; round_mu must be held.
    bool send_resign() REDCOORD_EXCLUDES(mu) {
        bool deleted = false;
        try {
            deleted = selector.resign();
        } catch (...) {
            detail::lock_guard g(mu);
            engine.resign_failed();
            publish();
            rearm();
            throw;
        }
        detail::lock_guard g(mu);
        engine.resign_done(deleted);
        publish();
        rearm();
        return deleted;
    }

    // Local step-down then the delete-if-ours script; round_mu must be held.
    bool resign_locked() REDCOORD_EXCLUDES(mu) {
        {
            detail::lock_guard g(mu);
            (void)engine.resign(clock.now());
            publish();
            rearm();
        }
        return send_resign();
    }

    // After halt(): waits for the round in flight (round_mu), then resigns what this candidate
    // may still hold.
    void finish_stop() noexcept REDCOORD_EXCLUDES(mu) {
        std::lock_guard round(round_mu);
        elector_command cmd{};
        {
            detail::lock_guard g(mu);
            cmd = engine.stop(clock.now());
            publish();
            rearm();
        }
        if (cmd != elector_command::resign) return;
        try {
            (void)send_resign();
        } catch (...) {
            // Best effort: the selector expires after its term.
        }
    }
};

leader_elector::leader_elector(connection_pool& pool, std::string name, election_options opts)
    : impl_(std::make_unique<impl>(*this, pool, std::move(name), std::move(opts))) {}

leader_elector::~leader_elector() {
    stop();
    impl_->leader_gauge.set(0);  // a gone elector leads nothing, whatever its last event was
}

void leader_elector::start() {
    std::lock_guard life(impl_->lifecycle_mu);
    {
        detail::lock_guard g(impl_->mu);
        if (impl_->running) return;
    }
    // Followers hear a resign at once through the handoff channel, on the runtime's shared
    // pub/sub link (it follows a Sentinel-resolved master too). Listened outside mu: the
    // handler takes mu on the link's reader thread.
    impl_->handoff = impl_->rt->pubsub(impl_->pool.where())
                         ->listen(impl_->selector.keys().channel,
                                  {[this](const pubsub_message& m) { impl_->on_handoff(m); },
                                   [this](bool up) { impl_->on_handoff_link(up); }});
    detail::lock_guard g(impl_->mu);
    impl_->running = true;
    impl_->engine.start(impl_->clock.now());
    impl_->rearm();
}

std::exception_ptr leader_elector::last_error() const {
    std::lock_guard life(impl_->lifecycle_mu);  // handoff is only touched under it
    if (auto text = impl_->handoff.refusal(); text && detail::is_permission_refusal(*text))
        return detail::reply_exception(*text, "SUBSCRIBE", "election handoff channel");
    detail::lock_guard g(impl_->mu);
    return impl_->round_error;
}

void leader_elector::stop() noexcept {
    std::lock_guard life(impl_->lifecycle_mu);
    {
        detail::lock_guard g(impl_->mu);
        if (!impl_->running) {
            impl_->tell_watchers(true);  // a wait begun before start() ends too
            return;
        }
        impl_->engine.halt();  // no round starts from here on
    }
    impl_->handoff.reset();  // waits for a handler running now
    impl_->finish_stop();
    {
        detail::lock_guard g(impl_->mu);
        impl_->running = false;
        impl_->tell_watchers(true);
        // Through rearm(): a tick still finishing returns the stopped engine's "nothing due"
        // itself; a disarm now would also discard what it returns after a quick restart.
        impl_->rearm();
    }
    // Every callback queued so far has run when stop() returns (none can be queued later: the
    // engine is stopped). On the callback thread itself (not allowed, but not a hang) it returns.
    impl_->callbacks.drain();
}

bool leader_elector::is_leader() const noexcept {
    detail::lock_guard g(impl_->mu);
    return impl_->engine.is_leader(impl_->clock.now());
}

std::uint64_t leader_elector::epoch() const noexcept {
    detail::lock_guard g(impl_->mu);
    return impl_->engine.epoch(impl_->clock.now());
}

leader_elector::leadership leader_elector::current_leadership() const {
    detail::lock_guard g(impl_->mu);
    return impl_->leadership_at(impl_->clock.now());
}

std::optional<std::chrono::steady_clock::time_point> leader_elector::deadline() const {
    detail::lock_guard g(impl_->mu);
    return impl_->engine.deadline(impl_->clock.now());
}

std::optional<std::string> leader_elector::leader() { return impl_->selector.leader(); }

std::optional<std::string> leader_elector::last_known_leader() const {
    detail::lock_guard g(impl_->mu);
    return impl_->engine.known_holder();
}

bool leader_elector::resign() {
    std::lock_guard round(impl_->round_mu);
    return impl_->resign_locked();
}

const std::string& leader_elector::identity() const noexcept {
    return impl_->selector.options().identity;
}

const resolved_election_options& leader_elector::options() const noexcept {
    return impl_->selector.options();
}

std::uint64_t leader_elector::rounds() const noexcept {
    detail::lock_guard g(impl_->mu);
    return impl_->engine.rounds();
}

// The slots are taken by value in the public API, as every on_*() of redcoord; Boost.Signals2's
// connect() copies from a const reference, so there is nothing to move.
// NOLINTNEXTLINE(performance-unnecessary-value-param): by value in the public API (see above)
boost::signals2::scoped_connection leader_elector::on_elected(elected_slot slot) {
    return elected_.connect(slot);
}

// NOLINTNEXTLINE(performance-unnecessary-value-param): by value in the public API (see above)
boost::signals2::scoped_connection leader_elector::on_revoked(revoked_slot slot) {
    return revoked_.connect(slot);
}

// NOLINTNEXTLINE(performance-unnecessary-value-param): by value in the public API (see above)
boost::signals2::scoped_connection leader_elector::on_leader_changed(leader_changed_slot slot) {
    return leader_changed_.connect(slot);
}

namespace detail {

runtime& elector_access::runtime_of(leader_elector& e) { return *e.impl_->rt; }

std::shared_ptr<runtime> elector_access::shared_runtime(leader_elector& e) { return e.impl_->rt; }

std::shared_ptr<leadership_watchers> elector_access::watchers(leader_elector& e) {
    return e.impl_->watchers;
}

leadership_news elector_access::watch(leader_elector& e, std::uint64_t& id,
                                      leadership_watchers::watcher w) {
    auto& i = *e.impl_;
    detail::lock_guard g(i.mu);
    id = i.watchers->add(std::move(w));
    return {i.leadership_at(i.clock.now()), false, i.round_error};
}

}  // namespace detail
}  // namespace redcoord
