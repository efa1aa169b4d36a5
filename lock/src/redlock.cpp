#include <redcoord/lock/redlock.hpp>

#include "acquire_loop.hpp"
#include "hold_common.hpp"
#include "release_waiter.hpp"
#include "scripts.hpp"
#include "watchdog.hpp"

#include <redcoord/core/fan_out.hpp>
#include <redcoord/core/keys.hpp>
#include <redcoord/core/token.hpp>

#include <boost/signals2/signal.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <utility>

namespace redcoord {

using clock_type = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace detail {
void validate(const redlock_options& o, std::size_t n) {
    if (n == 0) throw invalid_argument("redlock needs at least one node");
    if (o.ttl.count() <= 0) throw invalid_argument("redlock_options::ttl must be > 0");
    if (!(o.drift_factor >= 0.0 && o.drift_factor < 0.5))
        throw invalid_argument("redlock_options::drift_factor must be in [0, 0.5)");
    if (validity(o.ttl, std::chrono::microseconds(0), o.drift_factor).count() <= 0)
        throw invalid_argument("redlock_options::ttl must exceed the drift allowance (ttl * drift_factor + 2 ms)");
    if (o.node_timeout.count() <= 0) throw invalid_argument("redlock_options::node_timeout must be > 0");
    if (o.node_timeout >= o.ttl) throw invalid_argument("redlock_options::node_timeout must be < ttl");
    if (o.retry_delay.count() <= 0) throw invalid_argument("redlock_options::retry_delay must be > 0");
    if (o.retry_jitter.count() < 0) throw invalid_argument("redlock_options::retry_jitter must be >= 0");
    if (o.wake_jitter.count() < 0) throw invalid_argument("redlock_options::wake_jitter must be >= 0");
    if (o.max_retry_interval.count() <= 0) throw invalid_argument("redlock_options::max_retry_interval must be > 0");
    if (o.contention_backoff.count() < 0) throw invalid_argument("redlock_options::contention_backoff must be >= 0");
    if (o.watchdog && o.max_extensions == 0)
        throw invalid_argument("redlock_options::max_extensions must be > 0 when the watchdog is on");
    if (o.watchdog && o.ttl < milliseconds(3))
        throw invalid_argument("redlock_options::ttl must be >= 3 ms with the watchdog (it extends at ttl/3)");
}
}  // namespace detail

namespace {

using status = node_outcome::status;

// Maps one fan-out result to a node outcome; `acquire` rounds answer the fencing token or
// {0, PTTL, holder id}, the others an integer 1/0.
node_outcome classify(const node_result& r, bool acquire) {
    node_outcome o;
    o.latency = r.latency;
    switch (r.state) {
        case node_result::status::pending: o.state = status::not_waited; return o;
        case node_result::status::timeout: o.state = status::timeout; o.detail = r.error; return o;
        case node_result::status::connection_failed: o.state = status::unreachable; o.detail = r.error; return o;
        case node_result::status::pool_exhausted: o.state = status::busy; o.detail = r.error; return o;
        case node_result::status::connecting: o.state = status::connecting; o.detail = r.error; return o;
        case node_result::status::answered: break;
    }
    const reply& v = *r.value;
    try {
        if (v.is_error()) {
            o.state = status::error;
            o.detail = v.text();
        } else if (acquire && v.is_integer()) {
            if (v.integer() < 1) throw protocol_error("unexpected acquire reply");
            o.state = status::yes;
            o.fence = static_cast<std::uint64_t>(v.integer());
        } else if (acquire) {
            const auto& e = v.elements();
            if (e.size() < 2 || e[0].integer() != 0) throw protocol_error("unexpected acquire reply");
            o.state = status::no;
            o.pttl = e[1].integer();
            if (e.size() > 2) o.holder = e[2].text();
        } else {
            o.state = v.integer() == 1 ? status::yes : status::no;
        }
    } catch (const error& e) {
        o.state = status::error;
        o.detail = e.what();
    }
    return o;
}

struct tally {
    std::size_t yes = 0, no = 0, failed = 0;
};

// The most frequent non-empty value and how often it occurs ({"", 0} when none): one holding
// on a majority of the nodes is one client holding the lock.
std::pair<std::string_view, std::size_t> most_common(const std::vector<std::string_view>& values) {
    std::map<std::string_view, std::size_t> votes;
    std::pair<std::string_view, std::size_t> best{{}, 0};
    for (auto v : values)
        if (!v.empty())
            if (auto c = ++votes[v]; c > best.second) best = {v, c};
    return best;
}

tally count(const std::vector<node_outcome>& outs) {
    tally t;
    for (const auto& o : outs) {
        if (o.state == status::yes) ++t.yes;
        else if (o.state == status::no) ++t.no;
        else if (o.state != status::not_waited && o.state != status::busy) ++t.failed;
    }
    return t;
}

}  // namespace

struct redlock::impl : detail::hold_state {
    using extend_result = detail::extend_result;

    impl(std::vector<connection_pool*> n, std::string r, redlock_options o)
        : hold_state(std::move(r), "redlock", o.prefix, {o.ttl, o.drift_factor, o.watchdog, o.max_extensions}),
          nodes(std::move(n)),
          opts(std::move(o)) {
        detail::validate(opts, nodes.size());
        std::set<connection_pool*> seen;
        for (auto* p : nodes) {
            if (!p) throw invalid_argument("redlock given a null node");
            if (!seen.insert(p).second) throw invalid_argument("redlock given the same node twice");
            // The watchdog's extension must never queue behind this object's own round.
            if (opts.watchdog && p->options().max_size < 2)
                throw invalid_argument("redlock_options::watchdog needs pools of max_size >= 2");
        }
    }

    std::vector<connection_pool*> nodes;
    redlock_options opts;
    std::vector<node_outcome> last;  // guarded by mu
    bool floor_needed = false;       // guarded by mu; see attempt()

    std::mutex waiter_mu;
    std::unique_ptr<detail::release_waiter> waiter;

    detail::contention_memory contention;  // only touched while the gate is held
    // Why the last round could not reach a majority (empty when it could). Only touched while
    // the gate is held.
    std::string unreachable;
    // What on_wait was last told, and when (only touched while the gate is held).
    std::string last_note;
    clock_type::time_point last_note_at{};

    // Tells the log sink what an acquire waits for: when it changes, and at most once a
    // second while it stays the same (a slow round repeats every node_timeout or so).
    void note_wait(const std::string& why) {
        if (!opts.on_wait) return;
        const auto now = clock_type::now();
        if (why == last_note && now - last_note_at < std::chrono::seconds(1)) return;
        last_note = why;
        last_note_at = now;
        try {
            opts.on_wait(why + "; waiting for a majority to answer");
        } catch (...) {
            // A log sink that throws must not cost the lock: ignored.
        }
    }

    // One round: the script on every node at once, decided as soon as a majority answered
    // either way (or every node has an outcome, or node_timeout passed).
    // `reach_all`: decided at a majority like acquire and extend, but the nodes not yet sent
    // to still get the script (a release must reach every node, also one that needs a connect).
    std::vector<node_outcome> round(const script& s, std::span<const std::string_view> keys,
                                    std::span<const std::string_view> args, bool acquire, bool until_all,
                                    bool reach_all = false) {
        const std::size_t n = nodes.size();
        fan_out_options fo;
        fo.timeout = opts.node_timeout;
        fo.tuning.reach_all = reach_all;
        // Decided early, a node still in flight ran the script unless SCRIPT FLUSH emptied its
        // cache since its connection last used it (a NOSCRIPT its next user skips). Rounds that
        // stop early are acquire and extend, for which "did not run" is the safe side: no key
        // taken, no validity claimed from that node.
        if (!until_all) {
            fo.stop_when = [n, acquire](std::span<const node_result> rs) {
                tally t;
                for (const auto& r : rs) {
                    // A busy local pool sent nothing and says nothing about the node.
                    if (r.state == node_result::status::pending || r.state == node_result::status::pool_exhausted)
                        continue;
                    auto o = classify(r, acquire);
                    if (o.state == status::yes) ++t.yes;
                    else if (o.state == status::no) ++t.no;
                    else ++t.failed;
                }
                return detail::decide(n, t.yes, t.no, t.failed) != detail::quorum_state::undecided;
            };
        }
        auto results = fan_out(nodes, s, keys, args, fo);
        std::vector<node_outcome> outs;
        outs.reserve(n);
        for (const auto& r : results) outs.push_back(classify(r, acquire));
        {
            std::lock_guard l(mu);
            last = outs;
        }
        return outs;
    }

    // Step 5's clean-up on every node, also those that refused (seed 004: "even the
    // instances it believed it was not able to lock"). It publishes only where a waiter
    // marked our key (it saw us as the majority holder and waits for our release).
    void unlock_all(const std::string& token) {
        const std::string_view keys[] = {key};
        const std::string_view args[] = {token};
        fan_out_options fo;
        fo.timeout = opts.node_timeout;
        (void)fan_out(nodes, detail::release_script(), keys, args, fo);
    }

    struct attempt_result {
        std::optional<lock_acquisition> got;
        detail::refusal why;       // when refused
        bool floor_needed = false;  // acquired: the release must raise the nodes' counters
    };

    // One round of step 2 and, when refused, step 5's clean-up. Refusals always identify the
    // holder (a majority of equal ids is one holding; anything else a split vote); with
    // ask::mark they also mark its key, so its release publishes.
    attempt_result attempt(detail::ask what) {
        unreachable.clear();
        auto token = random_token();
        const auto t0 = clock_type::now();
        const std::string_view keys[] = {key, fence_key};
        const std::string_view args[] = {token, ttl_arg, what == detail::ask::mark ? "1" : "0"};
        auto outs = round(detail::acquire_script(), keys, args, true, false);
        const auto elapsed = std::chrono::duration_cast<std::chrono::microseconds>(clock_type::now() - t0);
        const auto t = count(outs);
        const auto state = detail::decide(nodes.size(), t.yes, t.no, t.failed);
        attempt_result out;
        if (state == detail::quorum_state::reached &&
            detail::validity(opts.ttl, elapsed, opts.drift_factor).count() > 0) {
            std::uint64_t fence = 0;
            for (const auto& o : outs) fence = std::max(fence, o.fence);
            // The release raises lagging counters to our token only when fewer than a majority
            // already stand at it: any later majority shares a node with that majority, whose
            // INCR then exceeds our token anyway (the common case, and a cheaper release).
            std::size_t at_max = 0;
            for (const auto& o : outs) at_max += (o.state == status::yes && o.fence == fence) ? 1 : 0;
            out.floor_needed = at_max < detail::quorum(nodes.size());
            out.got = lock_acquisition{std::move(token), t0 + opts.ttl - detail::clock_drift(opts.ttl, opts.drift_factor),
                                       fence};
            return out;
        }
        // Step 5: unlock every node, also those believed not locked (a reply may be lost).
        unlock_all(token);
        if (state == detail::quorum_state::unreachable) {
            const auto slow = static_cast<std::size_t>(std::count_if(outs.begin(), outs.end(), [](const auto& o) {
                return o.state == status::timeout || o.state == status::connecting;
            }));
            std::string why = "redlock '" + resource + "': " + std::to_string(t.failed - slow) + " of " +
                              std::to_string(nodes.size()) + " nodes down or erroring, " + std::to_string(slow) +
                              " slow or still connecting; a majority of " +
                              std::to_string(detail::quorum(nodes.size())) + " is impossible";
            for (const auto& o : outs)
                if (!o.detail.empty()) {
                    why += " (" + o.detail + ")";
                    break;
                }
            // A call with no wait says so at once. A call with a wait tries again while it
            // lasts and throws only if its last attempt ended this way (not_acquired()), so
            // lock() waits for the nodes to come back: nodes that were only slow (no reply
            // within node_timeout, or still connecting) are retried like after a split vote,
            // each round costing node_timeout; nodes that refused the connection or answered
            // with an error would refuse again at once, so the retry backs off.
            if (what == detail::ask::nothing) throw quorum_unreachable(why);
            out.why.down = t.failed - slow > nodes.size() - detail::quorum(nodes.size());
            note_wait(why);
            unreachable = std::move(why);
            return out;
        }
        // Is there one holder with a majority (wait for its release), or a split vote / stale
        // minority keys (retry after a short random delay, step 5)?
        std::vector<std::string_view> holders;
        for (const auto& o : outs)
            if (o.state == status::no) holders.push_back(o.holder);
        const auto [top, votes] = most_common(holders);
        if (votes >= detail::quorum(nodes.size())) {
            out.why.one_holder = true;
            out.why.holder = top;
            for (const auto& o : outs)  // the smallest PTTL among the holder's nodes
                if (o.holder == top && o.pttl >= 0 && (out.why.pttl < 0 || o.pttl < out.why.pttl)) out.why.pttl = o.pttl;
        }
        return out;
    }

    // Who holds the lock, by a plain GET on every node, decided like a round: one holding
    // on a majority, or none possible any more. A node that fails is simply not a vote.
    // Does not touch last_outcomes().
    detail::refusal look() {
        const std::size_t q = detail::quorum(nodes.size());
        // The holdings read so far, and how many nodes are still in flight.
        auto holdings = [](std::span<const node_result> rs, std::size_t& open) {
            std::vector<std::string_view> values;
            open = 0;
            for (const auto& r : rs) {
                if (r.state == node_result::status::pending) ++open;
                else if (r.state == node_result::status::answered && r.value->is_string())
                    values.push_back(detail::without_mark(r.value->text()));
            }
            return values;
        };
        fan_out_options fo;
        fo.timeout = opts.node_timeout;
        fo.stop_when = [&](std::span<const node_result> rs) {
            std::size_t open = 0;
            const auto best = most_common(holdings(rs, open)).second;
            return best >= q || best + open < q;  // decided: a majority, or none can form
        };
        const auto results = fan_out(nodes, std::vector<std::string>{"GET", key}, fo);
        std::size_t open = 0;
        const auto [top, votes] = most_common(holdings(results, open));
        detail::refusal out;
        if (votes >= q) {
            out.one_holder = true;
            out.holder = top;
        }
        return out;
    }

    detail::release_waiter& release_waiter() {
        std::lock_guard l(waiter_mu);
        if (!waiter) {
            // A majority of the nodes, chosen at random per object, is enough to hear a release:
            // a holder needs a majority too, so any lock held while all of ours are down would
            // share a node with them. Fewer links mean fewer reader threads woken per release.
            std::vector<endpoint> eps;
            for (auto* p : nodes) eps.push_back(p->where());
            for (std::size_t i = eps.size(); i > 1; --i)
                std::swap(eps[i - 1], eps[random_between(0, i - 1)]);
            eps.resize(detail::quorum(eps.size()));
            waiter = std::make_unique<detail::release_waiter>(std::move(eps), channel);
        }
        return *waiter;
    }

    detail::wait_settings wait_settings() const {
        detail::wait_settings ws;
        ws.retry_delay = opts.retry_delay;
        ws.retry_jitter = opts.retry_jitter;
        ws.wake_jitter = opts.wake_jitter;
        ws.max_retry_interval = opts.max_retry_interval;
        ws.contention_backoff = opts.contention_backoff;
        ws.jitter_first_retry = true;
        ws.retry_count = opts.retry_count;
        return ws;
    }

    void commit(const attempt_result& r) {
        {
            std::lock_guard l(mu);  // read by the release of this holding, which comes after
            floor_needed = r.floor_needed;
        }
        commit_hold(*r.got);
    }

    // The wait ended without the lock: if the last round could not reach a majority, that
    // is the answer (quorum_unreachable), not "held by someone else". Called with the gate
    // held: `unreachable` is the gate holder's.
    void not_acquired() {
        if (!unreachable.empty()) throw quorum_unreachable(std::exchange(unreachable, {}));
    }

    std::optional<lock_acquisition> acquire_until(clock_type::time_point deadline) {
        return detail::gated_acquire(*this, deadline);
    }

    // One extension round (compare-and-pexpire on every node at once). Extended only with a
    // majority within the validity the new ttl leaves; lost once a majority can no longer say
    // yes (enough nodes answered that the key is not ours); otherwise (nodes slow, down, or
    // this process's pools busy) not confirmed, and retried while the old validity lasts.
    extend_result extend_round(const std::string& token, milliseconds ttl, clock_type::time_point t0) override {
        const std::string_view keys[] = {key};
        const std::string ttl_text = detail::ms_arg(ttl);
        const std::string_view args[] = {token, ttl_text};
        auto outs = round(detail::extend_script(), keys, args, false, false);
        const auto elapsed = std::chrono::duration_cast<std::chrono::microseconds>(clock_type::now() - t0);
        const auto t = count(outs);
        const std::size_t n = nodes.size(), q = detail::quorum(n);
        if (t.yes >= q && detail::validity(ttl, elapsed, opts.drift_factor).count() > 0) return extend_result::extended;
        if (t.no > n - q) return extend_result::lost;
        return extend_result::not_confirmed;
    }

    // Clears the local holding; nullopt when nothing was held. `floor`: whether the release
    // must raise the nodes' fencing counters.
    std::optional<lock_acquisition> take_hold(bool& floor) {
        {
            // Only commit() changes it, and no commit comes before this holding is released.
            std::lock_guard l(mu);
            floor = floor_needed;
        }
        return hold_state::take_hold();
    }

    bool release() {
        bool with_floor = false;
        auto a = take_hold(with_floor);
        if (!a) return false;
        struct leave_on_exit {
            detail::local_gate& g;
            ~leave_on_exit() { g.leave(); }
        } leave{gate};
        const std::string floor = std::to_string(a->fencing_token);
        const std::string_view keys[] = {key, fence_key};
        const std::string_view args[] = {a->token, floor, ttl_arg};
        const std::size_t k = with_floor ? 2 : 1;  // the counter, floor and its TTL only when needed
        // Decided at a majority, and still sent to every node, also those that need a connect
        // first: a node left out would keep our key, and its waiters asleep, until its TTL.
        auto outs = round(detail::release_script(), std::span(keys, k), std::span(args, with_floor ? 3 : 1), false, false,
                          true);
        const auto t = count(outs);
        const std::size_t n = nodes.size(), q = detail::quorum(n);
        if (t.yes >= q) return true;
        if (t.no > n - q) return false;
        throw outcome_unknown("redlock '" + resource + "': release answered by too few nodes (" +
                              std::to_string(t.yes) + " deleted, " + std::to_string(t.no) + " not ours, " +
                              std::to_string(t.failed) + " failed); keys left expire after their TTL");
    }

    // Lockable::unlock: the release goes to every node and is not waited for (each
    // connection's next user skips its reply), so a holder that re-acquires pipelines both.
    void unlock() noexcept {
        bool with_floor = false;
        auto a = take_hold(with_floor);
        if (!a) return;
        try {
            const std::string floor = std::to_string(a->fencing_token);
            const std::string_view keys[] = {key, fence_key};
            const std::string_view args[] = {a->token, floor, ttl_arg};
            const std::size_t k = with_floor ? 2 : 1;
            fan_out_options fo;
            fo.timeout = opts.node_timeout;
            fo.tuning.detach = true;
            (void)fan_out(nodes, detail::release_script(), std::span(keys, k), std::span(args, with_floor ? 3 : 1), fo);
        } catch (...) {
            // Not sent: keys left behind expire after their TTL.
        }
        gate.leave();
    }
};

redlock::redlock(std::vector<connection_pool*> nodes, std::string resource, redlock_options opts)
    : impl_(std::make_unique<impl>(std::move(nodes), std::move(resource), std::move(opts))) {}

redlock::~redlock() {
    impl_->dog.reset();
    try {
        (void)impl_->release();
    } catch (...) {
        // Never throw from a destructor; keys left behind expire after their TTL.
    }
    std::lock_guard l(impl_->waiter_mu);
    impl_->waiter.reset();
}

std::optional<lock_acquisition> redlock::acquire(std::chrono::milliseconds wait) {
    return impl_->acquire_until(deadline_after(wait));
}

std::optional<lock_acquisition> redlock::acquire_until(clock_type::time_point deadline) {
    return impl_->acquire_until(deadline);
}

bool redlock::extend(std::chrono::milliseconds ttl) {
    if (ttl.count() <= 0) throw invalid_argument("extend: ttl must be > 0");
    return impl_->extend_hold(std::nullopt, ttl) == detail::extend_result::extended;
}

bool redlock::extend() { return extend(impl_->opts.ttl); }

bool redlock::release() { return impl_->release(); }

bool redlock::lost() const { return impl_->lost(); }
bool redlock::held() const { return impl_->is_held(); }
std::optional<lock_acquisition> redlock::current() const { return impl_->current(); }
std::uint64_t redlock::fencing_token() const { return impl_->fencing_token(); }
void redlock::check_held() const { impl_->check_held(); }

std::vector<node_outcome> redlock::last_outcomes() const {
    std::lock_guard l(impl_->mu);
    return impl_->last;
}

boost::signals2::connection redlock::on_lost(lost_handler h) {
    auto c = impl_->lost_signal.connect(std::move(h));
    impl_->arm_loss_notice();
    return c;
}

void redlock::lock() { detail::lock_blocking(*impl_, impl_->opts.max_retry_interval); }

bool redlock::try_lock() { return impl_->acquire_until(clock_type::now()).has_value(); }

void redlock::unlock() noexcept { impl_->unlock(); }

const std::string& redlock::resource() const noexcept { return impl_->resource; }
const std::string& redlock::key() const noexcept { return impl_->key; }
std::size_t redlock::size() const noexcept { return impl_->nodes.size(); }

}  // namespace redcoord
