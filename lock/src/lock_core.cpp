#include "lock_core.hpp"

#include "acquire_loop.hpp"

#include <redcoord/core/deadline.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/core/holder_label.hpp>
#include <redcoord/core/token.hpp>
#include <redcoord/lock/errors.hpp>

#include <boost/signals2/signal.hpp>

#include <algorithm>
#include <thread>
#include <utility>

namespace redcoord::detail {

using clock_type = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {

lock_engine_config engine_config(const hold_state& h, const lock_core_config& c,
                                 std::span<connection_pool* const> pools) {
    lock_engine_config e;
    e.nodes = pools.size();
    e.label = std::string(c.kind) + " '" + h.resource + "'";
    e.key = h.key;
    e.fence_key = h.fence_key;
    e.turn_key = h.turn_key;
    e.waiting_key = h.waiting_key;
    e.owner = random_token();  // this object, across its acquisitions
    e.tombstones = pools.size() > 1;
    e.handoff_after = c.handoff_after;
    e.ttl = c.ttl;
    e.drift_factor = c.drift_factor;
    e.replicas = c.replicas;
    e.round_timeout = c.round_timeout;
    e.name_holders = c.keep_outcomes;
    // A release resends to nodes its pools left unsent for the largest of the pools' borrow
    // wait, a few round deadlines (the single instance's: its command_timeout) and a quarter
    // of the TTL: in a stampede (1,000 redlocks woken together over pools of 16, the runtime
    // bench) a resend lost every race for a connection for over 2 s, and a key not deleted
    // blocks everyone until its TTL anyway.
    e.resend_window = c.ttl / 4;
    for (auto* p : pools) {
        const auto per_round =
            c.round_timeout.count() > 0 ? c.round_timeout : p->where().command_timeout;
        e.resend_window = std::max({e.resend_window, p->options().borrow_timeout, 3 * per_round});
    }
    return e;
}

// Leaves the gate when the holding's release is over, whatever happens.
struct leave_on_exit {
    local_gate& g;
    ~leave_on_exit() { g.leave(); }
};

}  // namespace

lock_core::lock_core(std::unique_ptr<lock_transport> transport, std::string resource,
                     lock_core_config c)
    : hold_state(std::move(resource), c.kind, c.prefix,
                 {c.ttl, c.drift_factor, c.watchdog, c.max_extensions}),
      c_(std::move(c)), transport_(std::move(transport)),
      engine_(engine_config(*this, c_, transport_->pools())),
      deferred_(c_.defer_release ? std::make_unique<deferred_release>() : nullptr) {
    rt = transport_->pools().front()->runtime();  // redlock: the first node's
    observe_as(c_.kind);
    // The watchdog's extension must never queue behind this object's own round.
    for (auto* p : transport_->pools())
        if (c_.watchdog && p->options().max_size < 2)
            throw invalid_argument(std::string(c_.options_name) +
                                   "::watchdog needs pools of max_size >= 2");
}

lock_core::~lock_core() {
    stop_lease_work();  // no lease tick or loss callback runs past this
    if (deferred_) {
        deferred_->flush.reset();  // likewise the flush timer; what it did not send goes now
        try {
            if (deferred_->flushing) resend_release(*deferred_->flushing);
        } catch (...) {}
    }
    if (auto back = take_held_back()) send_release(back->held, back->floor);
    try {
        (void)release();
    } catch (...) {
        // Never throw from a destructor; keys left behind expire after their TTL.
    }
    detail::lock_guard l(waiter_mu_);
    waiter_.reset();
}

std::exception_ptr lock_core::run(lock_round& round, const round_io& io) {
    auto failure = transport_->run(round, io);
    if (c_.keep_outcomes) {
        detail::lock_guard l(mu);
        last_ = round.outcomes();
    }
    return failure;
}

// A timed wait bounds each request by its deadline: one that runs out there ends the wait
// without the lock, the deadline having passed, instead of failing it with a timeout of the
// lock's own making.
bool lock_core::cut_by_deadline() const {
    return attempt_timed && clock_type::now() >= attempt_deadline;
}

void lock_core::rethrow_unless_cut(const std::exception_ptr& e) const {
    try {
        std::rethrow_exception(e);
    } catch (const timeout_error&) {
        if (!cut_by_deadline()) throw;
    } catch (const pool_exhausted&) {
        if (!cut_by_deadline()) throw;
    }
}

// A busy pool (the single instance's only one) sent nothing and says nothing about the node:
// a wait retries such a round like a split vote (the engine's verdict) until its deadline.
bool lock_core::nothing_sent_while_waiting(const lock_round& round) const {
    return attempt_timed && round.unsent().size() == round.size();
}

lock_core::attempt_result lock_core::attempt(ask what, const held_back* previous) {
    unreachable_.clear();
    const round_io io{attempt_timed ? std::optional(attempt_deadline) : std::nullopt};
    const attempt_context ctx{previous ? &previous->held : nullptr, previous && previous->floor,
                              registered_};
    auto round = engine_.acquire(labelled_token(c_.label), what, lease_now(), ctx);
    const auto failure = run(round, io);
    const auto now = lease_now();
    auto v = engine_.decide_acquire(round, now);
    if (previous) {
        // Where the re-lock ran (answered, or sent and not waited for, or timed out after it
        // was sent) it renews, releases or never had the previous holding. Where it cannot
        // have run (nothing sent: busy pool, connect under way, link down; or an error reply)
        // the previous holding may still be there, whether or not this attempt was granted:
        // release it on those nodes.
        std::vector<std::size_t> left;
        const auto& outs = round.outcomes();
        for (std::size_t i = 0; i < outs.size(); ++i) {
            using st = node_outcome::status;
            const auto s = outs[i].state;
            if (s == st::busy || s == st::connecting || s == st::unreachable || s == st::error)
                left.push_back(i);
        }
        if (!left.empty()) send_release(previous->held, previous->floor, left);
    }
    if (v.got)
        registered_ = false;
    else if (what != ask::nothing)
        registered_ = true;
    if (!v.give_back.empty()) give_back(round, v.give_back, io);
    attempt_result out;
    if (failure && !nothing_sent_while_waiting(round)) {
        rethrow_unless_cut(failure);
        return out;  // given back already; the wait is over without the lock
    }
    if (v.got) {
        out.got = std::move(v.got);
        out.floor_needed = v.floor_needed;
        return out;
    }
    if (!v.unreachable.empty()) {
        // A call with no wait says so at once. A call with a wait tries again while it lasts
        // and throws only if its last attempt ended this way, so lock() waits for the nodes
        // to come back.
        if (obs) obs->quorum_failures.inc();
        if (what == ask::nothing) throw quorum_unreachable(v.unreachable);
        note_wait(v.unreachable);
        unreachable_ = std::move(v.unreachable);
    }
    out.why = std::move(v.why);
    return out;
}

// Step 5's clean-up, resent (within the engine's window) to nodes a busy pool left unsent: a
// key left there would refuse this object's own next attempts until its TTL. A timed wait's
// give-back stops resending at the wait's deadline (try_lock_for(100ms) against a stalled
// server must return near it).
void lock_core::give_back(const lock_round& acquire_round, const std::vector<std::size_t>& nodes,
                          const round_io& io) {
    auto r = engine_.give_back(acquire_round, lease_now());
    transport_->give_back(r, nodes, io);
    const auto until = io.deadline.value_or(lock_clock::time_point::max());
    for (auto again = engine_.resend(r, lease_now()); !again.empty() && clock_type::now() < until;
         again = engine_.resend(r, lease_now())) {
        pace_resend();
        transport_->give_back(r, again, io);
    }
}

// Tells the log sink what an acquire waits for: when it changes, and at most once a second
// while it stays the same (a slow round repeats every node_timeout or so).
void lock_core::note_wait(const std::string& why) {
    if (!c_.on_wait) return;
    const auto now = clock_type::now();
    if (why == last_note_ && now - last_note_at_ < std::chrono::seconds(1)) return;
    last_note_ = why;
    last_note_at_ = now;
    try {
        c_.on_wait(why + "; waiting for a majority to answer");
    } catch (...) {
        // A log sink that throws must not cost the lock: ignored.
    }
}

release_waiter& lock_core::waiter() {
    detail::lock_guard l(waiter_mu_);
    if (!waiter_)
        waiter_ = std::make_unique<release_waiter>(rt, transport_->waiter_endpoints(),
                                                   std::string(channel));
    return *waiter_;
}

std::optional<lock_acquisition> lock_core::acquire_once(lock_clock::time_point deadline,
                                                        bool unlimited) {
    if (!gate.enter(deadline)) return std::nullopt;
    attempt_deadline = deadline;
    attempt_timed = deadline > clock_type::now();
    deferral_on_acquire();
    auto previous = take_held_back();
    if (!previous && deferred_) {
        // The flushed release is re-locked only while it may still be in flight: later, its
        // floor is stale, and taking it up long after could hand out a token below one another
        // holder got meanwhile.
        auto& d = *deferred_;
        detail::lock_guard l(d.mu);
        if (d.flushed && lease_now() < d.flushed_until) previous = std::move(d.flushed);
        d.flushed.reset();
    }
    try {
        attempt_result got;
        auto ws = c_.waiting;
        if (unlimited) ws.retry_count = 0;
        const bool ok = acquire_loop(
            deadline, ws, [this]() -> release_waiter& { return waiter(); },
            [&](ask what, refusal& why) {
                // The first attempt re-locks a held-back release (or releases it, if this
                // object must yield); later ones are plain.
                auto r = attempt(what, previous ? &*previous : nullptr);
                previous.reset();
                if (!r.got) {
                    why = std::move(r.why);
                    return false;
                }
                got = std::move(r);
                return true;
            });
        if (ok) {
            {
                detail::lock_guard l(mu);  // read by the release of this holding, which comes after
                floor_needed_ = got.floor_needed;
            }
            commit_hold(*got.got);
            return got.got;
        }
        // The wait ended without the lock: if the last round could not reach a majority,
        // that is the answer, not "held by someone else".
        if (!unreachable_.empty()) throw quorum_unreachable(std::exchange(unreachable_, {}));
    } catch (...) {
        if (previous) send_release(previous->held, previous->floor);  // the attempt never went out
        gate.leave();
        throw;
    }
    gate.leave();
    return std::nullopt;
}

// Waits without limit (retry_count does not apply) and rides through transient faults (a
// server down or restarting, a majority unreachable, a busy pool, a lost reply), retrying with
// a growing pause up to max_retry_interval, so it returns only with the lock held. Errors
// that retrying cannot cure (bad credentials, a server that refuses the script, a non-Redis
// peer) propagate.
void lock_core::lock() {
    const auto max_pause = std::max(c_.waiting.max_retry_interval, milliseconds(10));
    const random_source rnd = [](std::uint64_t lo, std::uint64_t hi) {
        return random_between(lo, hi);
    };
    auto pause = milliseconds(10);
    for (;;) {
        try {
            if (acquire_until(forever(), true)) return;
        } catch (const auth_error&) {
            throw;
        } catch (const connection_error&) {  // quorum_unreachable included
        } catch (const timeout_error&) {
        } catch (const pool_exhausted&) {
        } catch (const outcome_unknown&) {}
        std::this_thread::sleep_for(pause + jitter(pause, rnd));
        pause = std::min(pause * 2, max_pause);
    }
}

extend_result lock_core::extend_round(const std::string& token, milliseconds ttl,
                                      lock_clock::time_point t0) {
    auto round = engine_.extend(token, ttl, t0);
    if (const auto failure = run(round, {})) std::rethrow_exception(failure);
    return engine_.decide_extend(round, ttl, lease_now());
}

bool lock_core::extend(milliseconds ttl) {
    if (ttl.count() <= 0) throw invalid_argument("extend: ttl must be > 0");
    return extend_hold(std::nullopt, ttl) == extend_result::extended;
}

// A pool that gives up at once (borrow_timeout zero) must not make a resend spin.
void lock_core::pace_resend() { std::this_thread::sleep_for(resend_pace); }

std::optional<lock_acquisition> lock_core::take_hold(bool& floor) {
    {
        // Only a commit changes it, and no commit comes before this holding is released.
        detail::lock_guard l(mu);
        floor = floor_needed_;
    }
    return hold_state::take_hold();
}

bool lock_core::release() {
    bool floor = false;
    auto a = take_hold(floor);
    if (!a) return false;
    leave_on_exit leave{gate};
    // Decided at a majority, and still sent to every node, also those that need a connect
    // first: a node left out would keep our key, and its waiters asleep, until its TTL.
    auto round = engine_.release(*a, floor, lease_now());
    auto failure = run(round, {.deadline = std::nullopt, .reach_all = true});
    // Nodes whose pools were busy (or still connecting) got nothing: send to them again while
    // the engine says so; the nodes that answered keep their answers.
    for (auto again = engine_.resend(round, lease_now()); !again.empty();
         again = engine_.resend(round, lease_now())) {
        pace_resend();
        failure = run(round, {.deadline = std::nullopt, .reach_all = true, .only = again});
    }
    if (failure) std::rethrow_exception(failure);
    switch (engine_.decide_release(round)) {
        case release_verdict::released: return true;
        case release_verdict::not_ours: return false;
        case release_verdict::unknown: break;
    }
    throw outcome_unknown(engine_.release_unknown(round));
}

// Lockable::unlock: the release is sent and not waited for (each connection's next user
// skips its reply), or, when this object re-locks right after its unlocks, held back for the
// next attempt to renew in place (release_deferral.hpp), at most until it is due.
void lock_core::unlock() noexcept {
    bool floor = false;
    auto a = take_hold(floor);
    if (!a) return;
    leave_on_exit leave{gate};
    if (deferred_ && deferred_->deferral.on_unlock(lease_now())) {
        auto& d = *deferred_;
        try {
            bool arm = false;
            lock_clock::time_point due;
            {
                detail::lock_guard l(d.mu);
                d.back = held_back{std::move(*a), floor};
                d.due = due = d.deferral.due();
                arm = !std::exchange(d.flush_armed, true);
            }
            if (arm) {
                // Made at the first held-back release, not with the object: a timer costs
                // memory, and an object may never hold a release back.
                if (!d.flush)
                    d.flush = std::make_unique<detail::timer>(rt->timers(),
                                                              [this] { return flush_tick(); });
                d.flush->arm(due);
            }
            return;
        } catch (...) {
            // No timer to send it later: send it now, and let the next hold-back arm one.
            {
                detail::lock_guard l(d.mu);
                d.flush_armed = false;
            }
            if (auto back = take_held_back()) send_release(back->held, back->floor);
            return;
        }
    }
    send_release(*a, floor);
}

void lock_core::send_release(const lock_acquisition& held, bool floor,
                             std::span<const std::size_t> only) noexcept {
    try {
        // Not dropped on a busy pool: nodes nothing reached get it again within the engine's
        // window (a short wait for a connection), the others are not waited for.
        auto round = engine_.release(held, floor, lease_now());
        transport_->send(round, {.deadline = std::nullopt, .reach_all = false, .only = only});
        resend_release(round);
    } catch (...) {
        // Not sent: keys left behind expire after their TTL.
    }
}

void lock_core::resend_release(lock_round& round) {
    for (auto again = engine_.resend(round, lease_now()); !again.empty();
         again = engine_.resend(round, lease_now())) {
        pace_resend();
        transport_->send(round, {.deadline = std::nullopt, .reach_all = false, .only = again});
    }
}

std::optional<lock_core::held_back> lock_core::take_held_back() {
    if (!deferred_) return std::nullopt;
    detail::lock_guard l(deferred_->mu);
    return std::exchange(deferred_->back, std::nullopt);
}

void lock_core::deferral_on_acquire() {
    if (deferred_) deferred_->deferral.on_acquire(lease_now());
}

// The flush timer: sends a held-back release once it is due (a new unlock() moves the due
// time; an acquire call takes the release and leaves nothing to send). It runs on the
// runtime's tick workers, in this lock's lane, so it never sleeps there: nodes a busy pool left unsent
// are resent on later ticks, one pacing interval apart, within the engine's window.
std::optional<lock_clock::time_point> lock_core::flush_tick() {
    auto& d = *deferred_;  // the timer exists only with it
    try {
        if (d.flushing) {
            auto again = engine_.resend(*d.flushing, lease_now());
            if (!again.empty()) {
                transport_->send(*d.flushing,
                                 {.deadline = std::nullopt, .reach_all = false, .only = again});
                if (!d.flushing->unsent().empty()) return lease_now() + resend_pace;
            }
            d.flushing.reset();
        }
    } catch (...) {
        d.flushing.reset();  // keys left behind expire after their TTL
    }
    std::optional<held_back> back;
    {
        detail::lock_guard l(d.mu);
        if (d.back && lease_now() < d.due) return d.due;
        back = std::exchange(d.back, std::nullopt);
        if (!back) {
            d.flush_armed = false;
            return std::nullopt;
        }
        d.flushed = back;
        d.flushed_until = lease_now() + engine_.config().resend_window + flush_in_flight;
    }
    try {
        d.flushing =
            std::make_unique<lock_round>(engine_.release(back->held, back->floor, lease_now()));
        transport_->send(*d.flushing, {});
        if (!d.flushing->unsent().empty()) return lease_now() + resend_pace;
    } catch (...) {}
    d.flushing.reset();
    detail::lock_guard l(d.mu);
    if (d.back) return d.due;  // held back again meanwhile
    d.flush_armed = false;
    return std::nullopt;
}

boost::signals2::scoped_connection lock_core::on_lost(
    const std::function<void(const std::string&)>& h) {
    return connect_lost(h);
}

std::vector<node_outcome> lock_core::last_outcomes() const {
    detail::lock_guard l(mu);
    return last_;
}

}  // namespace redcoord::detail
