#include <redcoord/core/errors.hpp>
#include <redcoord/core/subscriber.hpp>
#include <redcoord/election/leader_elector.hpp>

#include "test_hooks.hpp"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <stop_token>
#include <thread>
#include <variant>

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
using clock = std::chrono::steady_clock;
struct ev_elected { std::uint64_t epoch; };
struct ev_revoked { revoke_reason reason; };
struct ev_changed { std::optional<std::string> identity; };
using event = std::variant<ev_elected, ev_revoked, ev_changed>;
}  // namespace

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
    bool handoff = false;
    bool leader = false;
    bool last_round_failed = false;
    bool in_flight = false;  // a round was sent and has not been answered yet
    std::uint64_t epoch = 0;
    clock::time_point deadline{};
    clock::time_point hold_until{};
    // Stopped when the current leadership ends, by the transition itself: neither a user slot
    // nor a round in flight can skip or delay it (review M3).
    std::stop_source term_stop;
    std::optional<std::string> known_holder;
    std::deque<event> events;
    std::uint64_t rounds = 0;

    std::thread campaign_thread;
    std::thread callback_thread;
    std::thread timer_thread;
    std::unique_ptr<subscriber> sub;

    impl(leader_elector& o, connection_pool& p, std::string name, election_options opts)
        : owner(o), pool(p), selector(p, std::move(name), std::move(opts)) {}

    // --- state transitions; all with mu held ---
    void push(event e) {
        events.push_back(std::move(e));
        callback_cv.notify_all();
    }
    void observe_holder(const std::optional<std::string>& h) {
        if (h != known_holder) {
            known_holder = h;
            push(ev_changed{h});
        }
    }
    void become_leader(const campaign_result& r) {
        leader = true;
        epoch = r.epoch;
        deadline = r.deadline;
        term_stop = std::stop_source{};
        push(ev_elected{r.epoch});
        timer_cv.notify_all();
    }
    // The stop is requested before `revoked` is queued, so leader work hears of the end first.
    void step_down(revoke_reason why) {
        leader = false;
        term_stop.request_stop();
        push(ev_revoked{why});
    }
    // Steps down when the local deadline passed without a confirmed renewal.
    void expire_if_due(clock::time_point now) {
        if (leader && now >= deadline)
            step_down(last_round_failed || in_flight ? revoke_reason::connection : revoke_reason::expired);
    }
    // A step-down that fell due while the round was out is labelled by the state of that time
    // (in flight, or after a failed round): `connection`, not `expired`.
    void finish_round(const std::optional<campaign_result>& r) {
        expire_if_due(clock::now());
        ++rounds;
        in_flight = false;
        last_round_failed = !r;
        if (r) apply(*r);
    }
    void apply(const campaign_result& r) {
        observe_holder(r.holder);
        if (r.leader) {
            if (leader && epoch == r.epoch) {
                if (r.deadline > deadline) deadline = r.deadline;
                return;
            }
            if (leader) step_down(revoke_reason::lost);  // a new epoch replaced ours
            become_leader(r);
            return;
        }
        // Our own unconfirmed renewal (late reply, missing replica acks) keeps the old deadline.
        if (leader && !(r.holder_is_us && r.epoch == epoch)) step_down(revoke_reason::lost);
    }
    [[nodiscard]] bool held_back(clock::time_point now) const { return stop_campaign || now < hold_until; }

    void campaign_loop() {
        std::unique_lock lk(mu);
        while (!stop_campaign) {
            if (clock::now() < hold_until) {
                const auto hold = hold_until;
                campaign_cv.wait_until(lk, hold, [&] { return stop_campaign || hold_until != hold; });
                continue;
            }
            handoff = false;
            lk.unlock();
            if (auto hook = detail::election_before_round.load()) hook(selector.options().identity);
            const auto next = campaign_round();
            lk.lock();
            campaign_cv.wait_until(lk, next, [&] { return stop_campaign || (handoff && !leader); });
        }
    }

    // One round under round_mu; returns when the next one is due.
    clock::time_point campaign_round() {
        std::lock_guard round(round_mu);
        const auto started = clock::now();
        {
            std::lock_guard g(mu);
            // A resign() may have run between the caller's hold check and round_mu: checked
            // again here, where no resign can interleave, or the resigner could win its own
            // handoff at once (review m1).
            if (held_back(started)) return started;
            in_flight = true;
        }
        std::optional<campaign_result> r;
        try {
            r = selector.campaign_once();
        } catch (const std::exception&) {
            // Transport or server failure: the deadline decides; retry next period.
        }
        std::lock_guard g(mu);
        finish_round(r);
        return (r ? r->sent_at : started) + selector.options().retry_period;
    }

    // Only delivers: a slot may block this thread for as long as it likes.
    void callback_loop() {
        std::unique_lock lk(mu);
        for (;;) {
            if (!events.empty()) {
                event e = std::move(events.front());
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

    // Ends a leadership at its deadline. No user code and no I/O run on this thread, so the
    // step-down (and the stop of leader work) is never later than the deadline plus wake-up.
    void timer_loop() {
        std::unique_lock lk(mu);
        while (!stop_timer) {
            expire_if_due(clock::now());
            if (leader) timer_cv.wait_until(lk, deadline);
            else timer_cv.wait(lk);
        }
    }

    void deliver(const event& e) noexcept {
        try {
            if (auto* el = std::get_if<ev_elected>(&e)) owner.elected(el->epoch);
            else if (auto* rv = std::get_if<ev_revoked>(&e)) owner.revoked(rv->reason);
            else owner.leader_changed(std::get<ev_changed>(e).identity);
        } catch (...) {
            // A callback's exception must not stop the delivery of later events.
        }
    }

    void on_handoff(const pubsub_message& m) {
        std::lock_guard g(mu);
        if (known_holder == m.payload) observe_holder(std::nullopt);
        // Another leader resigned: our own post-resign hold no longer has a purpose.
        if (m.payload != selector.options().identity) hold_until = {};
        handoff = true;
        campaign_cv.notify_all();
    }

    // Local step-down then the delete-if-ours script; round_mu must be held.
    bool resign_locked() {
        {
            std::lock_guard g(mu);
            hold_until = clock::now() + selector.options().retry_period;
            if (leader) step_down(revoke_reason::resigned);
        }
        const bool deleted = selector.resign();
        if (deleted) {
            std::lock_guard g(mu);
            observe_holder(std::nullopt);
        }
        return deleted;
    }

    // stop() after the campaign thread is joined: resigns what this candidate may still hold.
    void resign_if_holding() noexcept {
        std::lock_guard round(round_mu);
        bool holding = false;
        {
            std::lock_guard g(mu);
            holding = leader || known_holder == selector.options().identity;
        }
        if (!holding) return;
        try {
            (void)resign_locked();
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
    impl_->hold_until = {};
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
        impl_->campaign_cv.notify_all();
    }
    if (impl_->campaign_thread.joinable()) impl_->campaign_thread.join();
    impl_->sub.reset();
    impl_->resign_if_holding();
    impl_->join_timer_and_callbacks();
    std::lock_guard g(impl_->mu);
    impl_->running = false;
}

bool leader_elector::is_leader() const noexcept {
    std::lock_guard g(impl_->mu);
    return impl_->leader && clock::now() < impl_->deadline;
}

std::uint64_t leader_elector::epoch() const noexcept {
    std::lock_guard g(impl_->mu);
    return impl_->leader && clock::now() < impl_->deadline ? impl_->epoch : 0;
}

leader_elector::leadership leader_elector::current_leadership() const {
    std::lock_guard g(impl_->mu);
    if (impl_->leader && clock::now() < impl_->deadline) return {impl_->epoch, impl_->term_stop.get_token()};
    std::stop_source ended;
    ended.request_stop();
    return {0, ended.get_token()};
}

std::optional<std::chrono::steady_clock::time_point> leader_elector::deadline() const {
    std::lock_guard g(impl_->mu);
    if (impl_->leader && clock::now() < impl_->deadline) return impl_->deadline;
    return std::nullopt;
}

std::optional<std::string> leader_elector::leader() { return impl_->selector.leader(); }

std::optional<std::string> leader_elector::last_known_leader() const {
    std::lock_guard g(impl_->mu);
    return impl_->known_holder;
}

bool leader_elector::resign() {
    std::lock_guard round(impl_->round_mu);
    return impl_->resign_locked();
}

const std::string& leader_elector::identity() const noexcept { return impl_->selector.options().identity; }

const resolved_election_options& leader_elector::options() const noexcept { return impl_->selector.options(); }

std::uint64_t leader_elector::rounds() const noexcept {
    std::lock_guard g(impl_->mu);
    return impl_->rounds;
}

}  // namespace redcoord
