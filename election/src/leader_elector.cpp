#include <redcoord/core/errors.hpp>
#include <redcoord/core/subscriber.hpp>
#include <redcoord/election/leader_elector.hpp>

#include "elector_engine.hpp"
#include "test_hooks.hpp"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <stop_token>
#include <thread>

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
using detail::elector_command;
using detail::elector_event;
}  // namespace

// The driver: every decision is the engine's (elector_engine.cpp); this struct does the I/O,
// owns the threads, holds mu around every engine call and delivers the engine's events.
struct leader_elector::impl {
    leader_elector& owner;
    connection_pool& pool;
    master_selector selector;

    // lifecycle_mu: serialises start() and stop(), so concurrent stops (the destructor racing an
    // explicit stop) run one after the other and never join a thread twice (review m2).
    std::mutex lifecycle_mu;
    // round_mu: serialises a campaign round (I/O + state update) with resign(), so a round in
    // flight cannot re-confirm a leadership that resign() just gave up.
    std::mutex round_mu;

    mutable std::mutex mu;  // guards everything below
    std::condition_variable campaign_cv;
    std::condition_variable callback_cv;
    std::condition_variable timer_cv;
    bool running = false;
    bool stop_campaign = false;
    bool stop_callbacks = false;
    bool stop_timer = false;
    detail::elector_engine engine;
    // Stopped when the current leadership ends, by the transition itself: neither a user slot
    // nor a round in flight can skip or delay it (review M3).
    std::stop_source term_stop;
    std::deque<elector_event> events;

    std::thread campaign_thread;
    std::thread callback_thread;
    std::thread timer_thread;
    std::unique_ptr<subscriber> sub;

    impl(leader_elector& o, connection_pool& p, std::string name, election_options opts)
        : owner(o), pool(p), selector(p, std::move(name), std::move(opts)),
          engine(selector.options().identity, selector.options().retry_period) {}

    // With mu held, after every engine input: queues the engine's events for delivery. A
    // leadership's stop token is stopped before its `revoked` is queued, so leader work hears
    // of the end first.
    void publish() {
        for (auto& e : engine.take_events()) {
            if (e.what == elector_event::kind::elected) term_stop = std::stop_source{};
            if (e.what == elector_event::kind::revoked) term_stop.request_stop();
            events.push_back(std::move(e));
        }
        callback_cv.notify_all();
        timer_cv.notify_all();
        campaign_cv.notify_all();
    }

    void campaign_loop() {
        std::unique_lock lk(mu);
        while (!stop_campaign) {
            const auto due = engine.next_round_due();
            if (!due) {
                campaign_cv.wait(lk);
                continue;
            }
            if (clock_type::now() < *due) {
                // Woken early by a handoff signal, a resign or stop(): the due time is asked again.
                campaign_cv.wait_until(lk, *due);
                continue;
            }
            lk.unlock();
            if (auto hook = detail::election_before_round.load()) hook(selector.options().identity);
            campaign_round();
            lk.lock();
        }
    }

    // One round under round_mu. The engine decides again there whether it is due: a resign()
    // may have run between the loop's check and round_mu, and the resigner must not win its
    // own handoff at once (review m1).
    void campaign_round() {
        std::lock_guard round(round_mu);
        const auto started = clock_type::now();
        {
            std::lock_guard g(mu);
            const auto cmd = engine.poll(started);
            publish();
            if (cmd != elector_command::campaign) return;
        }
        std::optional<campaign_result> r;
        try {
            r = selector.campaign_once();
        } catch (const std::exception&) {
            // Transport or server failure: the deadline decides; retry next period.
        }
        std::lock_guard g(mu);
        engine.round_done(clock_type::now(), started, r);
        publish();
    }

    // Only delivers: a slot may block this thread for as long as it likes.
    void callback_loop() {
        std::unique_lock lk(mu);
        for (;;) {
            if (!events.empty()) {
                elector_event e = std::move(events.front());
                events.pop_front();
                lk.unlock();
                deliver(e);
                lk.lock();
                continue;
            }
            if (stop_callbacks) return;
            callback_cv.wait(lk);
        }
    }

    // Ends a leadership at its lease end. No user code and no I/O run on this thread, so the
    // step-down (and the stop of leader work) is never later than the deadline plus wake-up.
    void timer_loop() {
        std::unique_lock lk(mu);
        while (!stop_timer) {
            engine.expire(clock_type::now());
            publish();
            if (auto end = engine.lease_end()) timer_cv.wait_until(lk, *end);
            else timer_cv.wait(lk);
        }
    }

    void deliver(const elector_event& e) noexcept {
        try {
            switch (e.what) {
                case elector_event::kind::elected: owner.elected(e.epoch); break;
                case elector_event::kind::revoked: owner.revoked(e.reason); break;
                case elector_event::kind::leader_changed: owner.leader_changed(e.identity); break;
            }
        } catch (...) {
            // A callback's exception must not stop the delivery of later events.
        }
    }

    void on_handoff(const pubsub_message& m) {
        std::lock_guard g(mu);
        engine.handoff(m.payload);
        publish();
    }

    // Runs the resign script the engine asked for; round_mu must be held.
    bool send_resign() {
        bool deleted = false;
        try {
            deleted = selector.resign();
        } catch (...) {
            std::lock_guard g(mu);
            engine.resign_failed();
            publish();
            throw;
        }
        std::lock_guard g(mu);
        engine.resign_done(deleted);
        publish();
        return deleted;
    }

    // Local step-down then the delete-if-ours script; round_mu must be held.
    bool resign_locked() {
        {
            std::lock_guard g(mu);
            (void)engine.resign(clock_type::now());
            publish();
        }
        return send_resign();
    }

    // stop() after the campaign thread is joined: resigns what this candidate may still hold.
    void finish_stop() noexcept {
        std::lock_guard round(round_mu);
        elector_command cmd{};
        {
            std::lock_guard g(mu);
            cmd = engine.stop(clock_type::now());
            publish();
        }
        if (cmd != elector_command::resign) return;
        try {
            (void)send_resign();
        } catch (...) {
            // Best effort: the selector expires after its term.
        }
    }

    // The callback thread last, once nothing can queue events any more.
    void join_timer_and_callbacks() noexcept {
        {
            std::lock_guard g(mu);
            stop_timer = true;
            stop_callbacks = true;
            timer_cv.notify_all();
            callback_cv.notify_all();
        }
        if (timer_thread.joinable()) timer_thread.join();
        if (!callback_thread.joinable()) return;
        if (callback_thread.get_id() == std::this_thread::get_id()) callback_thread.detach();
        else callback_thread.join();
    }
};

leader_elector::leader_elector(connection_pool& pool, std::string name, election_options opts)
    : impl_(std::make_unique<impl>(*this, pool, std::move(name), std::move(opts))) {}

leader_elector::~leader_elector() { stop(); }

void leader_elector::start() {
    std::lock_guard life(impl_->lifecycle_mu);
    std::lock_guard g(impl_->mu);
    if (impl_->running) return;
    // Followers hear a resign at once through the handoff channel. The subscriber follows a
    // Sentinel-resolved master too (core subscriber), so this holds for every endpoint kind.
    impl_->sub = std::make_unique<subscriber>(impl_->pool.where(), [this](const pubsub_message& m) { impl_->on_handoff(m); });
    impl_->running = true;
    impl_->stop_campaign = false;
    impl_->stop_callbacks = false;
    impl_->stop_timer = false;
    impl_->engine.start(clock_type::now());
    impl_->callback_thread = std::thread([this] { impl_->callback_loop(); });
    impl_->timer_thread = std::thread([this] { impl_->timer_loop(); });
    impl_->campaign_thread = std::thread([this] { impl_->campaign_loop(); });
    // Wait 0: the confirmation is handled on the reader thread, which takes mu (held here).
    impl_->sub->subscribe({impl_->selector.keys().channel}, std::chrono::milliseconds(0));
}

void leader_elector::stop() noexcept {
    std::lock_guard life(impl_->lifecycle_mu);
    {
        std::lock_guard g(impl_->mu);
        if (!impl_->running) return;
        impl_->stop_campaign = true;
        impl_->engine.halt();
        impl_->campaign_cv.notify_all();
    }
    if (impl_->campaign_thread.joinable()) impl_->campaign_thread.join();
    impl_->sub.reset();
    impl_->finish_stop();
    impl_->join_timer_and_callbacks();
    std::lock_guard g(impl_->mu);
    impl_->running = false;
}

bool leader_elector::is_leader() const noexcept {
    std::lock_guard g(impl_->mu);
    return impl_->engine.is_leader(clock_type::now());
}

std::uint64_t leader_elector::epoch() const noexcept {
    std::lock_guard g(impl_->mu);
    return impl_->engine.epoch(clock_type::now());
}

leader_elector::leadership leader_elector::current_leadership() const {
    std::lock_guard g(impl_->mu);
    const auto now = clock_type::now();
    if (impl_->engine.is_leader(now)) return {impl_->engine.epoch(now), impl_->term_stop.get_token()};
    std::stop_source ended;
    ended.request_stop();
    return {0, ended.get_token()};
}

std::optional<std::chrono::steady_clock::time_point> leader_elector::deadline() const {
    std::lock_guard g(impl_->mu);
    return impl_->engine.deadline(clock_type::now());
}

std::optional<std::string> leader_elector::leader() { return impl_->selector.leader(); }

std::optional<std::string> leader_elector::last_known_leader() const {
    std::lock_guard g(impl_->mu);
    return impl_->engine.known_holder();
}

bool leader_elector::resign() {
    std::lock_guard round(impl_->round_mu);
    return impl_->resign_locked();
}

const std::string& leader_elector::identity() const noexcept { return impl_->selector.options().identity; }

const resolved_election_options& leader_elector::options() const noexcept { return impl_->selector.options(); }

std::uint64_t leader_elector::rounds() const noexcept {
    std::lock_guard g(impl_->mu);
    return impl_->engine.rounds();
}

}  // namespace redcoord
