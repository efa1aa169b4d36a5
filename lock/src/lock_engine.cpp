#include "lock_engine.hpp"

#include "scripts.hpp"

#include <redcoord/core/detail/lease_schedule.hpp>
#include <redcoord/core/errors.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

namespace redcoord::detail {

using std::chrono::microseconds;
using std::chrono::milliseconds;
using status = node_outcome::status;

std::chrono::microseconds validity(std::chrono::milliseconds ttl, std::chrono::microseconds elapsed,
                                   double drift_factor) noexcept {
    return lease_schedule(ttl, drift_factor).validity_left(elapsed);
}

quorum_state decide(std::size_t n, std::size_t yes, std::size_t no, std::size_t failed) noexcept {
    const std::size_t q = quorum(n);
    if (yes >= q) return quorum_state::reached;
    // A majority is impossible once more than n - q nodes are out; name the cause.
    if (failed > n - q) return quorum_state::unreachable;
    if (no + failed > n - q) return quorum_state::refused;
    return quorum_state::undecided;
}

namespace {

enum flag : unsigned char {
    seen = 1,
    may_hold = 2,
    unconfirmed = 4
};

// Reads one node's reply to the round's command. The acquire script answers the fencing
// token (>= 1), -2 - PTTL (refused, ask::nothing) or {0, PTTL, holder id}; extend and
// release 1 or 0. A reply of another shape is an error: a
// peer that is not this lock's Redis.
void read_reply(round_kind kind, const reply& v, node_outcome& o) {
    try {
        if (v.is_error()) {
            o.state = status::error;
            o.detail = v.text();
            return;
        }
        switch (kind) {
            case round_kind::acquire:
                if (v.is_integer()) {
                    if (v.integer() == 0) throw protocol_error("unexpected acquire reply");
                    if (v.integer() > 0) {
                        o.state = status::yes;
                        o.fence = static_cast<std::uint64_t>(v.integer());
                    } else {
                        o.state = status::no;
                        o.pttl = -2 - v.integer();
                    }
                } else {
                    const auto& e = v.elements();
                    if (e.size() < 2 || e[0].integer() != 0)
                        throw protocol_error("unexpected acquire reply");
                    o.state = status::no;
                    o.pttl = e[1].integer();
                    if (e.size() > 2) o.holder = e[2].text();
                    if (e.size() > 4) {
                        o.turn_left = e[3].integer();
                        o.yielding = e[4].integer() == 1;
                    }
                }
                return;
            case round_kind::extend:
            case round_kind::release: o.state = v.integer() == 1 ? status::yes : status::no; return;
        }
    } catch (const error& e) {
        o.state = status::error;
        o.detail = e.what();
    }
}

// The most frequent value and how often it occurs ({"", 0} when none). Empty values (holder
// unknown) count only when `empty_counts`: a single node's refusal is one holding whatever
// its id, while on N nodes unknown ids prove nothing.
std::pair<std::string_view, std::size_t> most_common(const std::vector<node_outcome>& outs,
                                                     status st, bool empty_counts) {
    std::map<std::string_view, std::size_t> votes;
    std::pair<std::string_view, std::size_t> best{{}, 0};
    for (const auto& o : outs)
        if (o.state == st && (empty_counts || !o.holder.empty()))
            if (auto c = ++votes[o.holder]; c > best.second) best = {o.holder, c};
    return best;
}

}  // namespace

lock_round::lock_round(round_kind kind, std::size_t n, lock_clock::time_point start,
                       lock_clock::time_point deadline)
    : kind_(kind), start_(start), deadline_(deadline), first_(start), outs_(n), flags_(n, 0) {}

void lock_round::on_result(std::size_t node, const node_result& r, lock_clock::time_point now,
                           std::optional<std::size_t> acks) {
    node_outcome o;
    o.latency = std::chrono::duration_cast<microseconds>(now - start_);
    unsigned char f = seen;
    switch (r.state) {
        case node_result::status::pending: o.state = status::not_waited; break;
        case node_result::status::timeout:
            o.state = status::timeout;
            o.detail = r.error;
            break;
        case node_result::status::connection_failed:
            o.state = status::unreachable;
            o.detail = r.error;
            break;
        case node_result::status::pool_exhausted:
        case node_result::status::not_sent:
            o.state = status::busy;
            o.detail = r.error;
            break;
        case node_result::status::connecting:
            o.state = status::connecting;
            o.detail = r.error;
            break;
        case node_result::status::answered:
            if (now > deadline_) {
                o.state = status::timeout;
                o.detail = "answered after the round's deadline";
            } else {
                read_reply(kind_, *r.value, o);
                if (o.state == status::yes && acks && *acks < replicas_) {
                    f |= unconfirmed;
                    o.detail = std::to_string(*acks) + " of " + std::to_string(replicas_) +
                               " replicas acknowledged";
                }
            }
            break;
    }
    // Busy pools and connects under way sent nothing; a clean refusal took nothing.
    if (kind_ == round_kind::acquire && o.state != status::no && o.state != status::busy &&
        o.state != status::connecting)
        f |= may_hold;
    outs_[node] = std::move(o);
    flags_[node] = static_cast<char>(f);
}

void lock_round::on_not_sent(std::size_t node, node_outcome::status why, std::string detail) {
    node_outcome o;
    o.state = why;
    o.detail = std::move(detail);
    outs_[node] = std::move(o);
    flags_[node] = static_cast<char>(seen);
}

std::vector<std::size_t> lock_round::unsent() const {
    std::vector<std::size_t> out;
    for (std::size_t i = 0; i < outs_.size(); ++i)
        if ((flags_[i] & seen) &&
            (outs_[i].state == status::busy || outs_[i].state == status::connecting))
            out.push_back(i);
    return out;
}

lock_round::tally lock_round::count() const {
    tally t;
    for (std::size_t i = 0; i < outs_.size(); ++i) {
        const auto s = outs_[i].state;
        if (s == status::yes)
            ++((flags_[i] & unconfirmed) ? t.unconfirmed : t.yes);
        else if (s == status::no)
            ++t.no;
        else if (s != status::not_waited && s != status::busy)
            ++t.failed;
    }
    return t;
}

quorum_state lock_round::state() const {
    const auto t = count();
    const std::size_t n = outs_.size();
    // An acquisition too few replicas acknowledged is a refusal to retry, not a node down;
    // an extension of that kind is merely unconfirmed.
    if (kind_ == round_kind::acquire) return decide(n, t.yes, t.no + t.unconfirmed, t.failed);
    return decide(n, t.yes, t.no, t.failed + t.unconfirmed);
}

bool lock_round::decided() const {
    if (kind_ == round_kind::release) {
        // Nodes nothing reached (busy, connecting) are resent (lock_engine::resend), so they
        // are open like those in flight, not failed: a fan-out must not stop, leaving a sent
        // deletion not waited for, because a connect was under way elsewhere.
        const auto t = count();
        const std::size_t n = outs_.size(), q = quorum(n);
        std::size_t open = 0;
        for (const auto& o : outs_)
            open += (o.state == status::not_waited || o.state == status::busy ||
                     o.state == status::connecting)
                        ? 1
                        : 0;
        return t.yes >= q || t.no > n - q || t.yes + open < q;
    }
    return state() != quorum_state::undecided;
}

node_command lock_round::command() const {
    node_command c;
    c.lua = lua_;
    c.key_store = {key_, fence_key_, turn_key_, waiting_key_};
    c.nkeys = nkeys_;
    if (kind_ == round_kind::release)
        c.arg_store = {token_, arg2_, arg3_, tombstone_arg_};
    else
        c.arg_store = {token_,     arg2_,     arg3_,      owner_,          turn_arg_,
                       grace_arg_, previous_, floor_arg_, registered_arg_, tombstone_arg_};
    c.nargs = nargs_;
    return c;
}

lock_engine::lock_engine(lock_engine_config c)
    : c_(std::move(c)), ttl_arg_(std::to_string(c_.ttl.count())),
      turn_arg_(std::to_string(c_.handoff_after.count())),
      grace_arg_(std::to_string(c_.grace.count())) {}

lock_round lock_engine::make_round(round_kind k, lock_clock::time_point now) const {
    const auto deadline =
        c_.round_timeout.count() > 0 ? now + c_.round_timeout : lock_clock::time_point::max();
    lock_round r(k, c_.nodes, now, deadline);
    r.replicas_ = c_.replicas;
    r.key_ = c_.key;
    r.fence_key_ = c_.fence_key;
    return r;
}

lock_round lock_engine::acquire(std::string token, ask what, lock_clock::time_point now,
                                const attempt_context& ctx) const {
    auto r = make_round(round_kind::acquire, now);
    r.lua_ = &acquire_script();
    r.nkeys_ = 2;
    r.token_ = std::move(token);
    r.arg2_ = ttl_arg_;
    const bool short_reply = what == ask::nothing && !c_.name_holders;
    r.arg3_ = short_reply ? "-" : what == ask::mark ? "1" : "0";
    if (!c_.owner.empty()) {
        r.nkeys_ = 4;
        r.turn_key_ = c_.turn_key;
        r.waiting_key_ = c_.waiting_key;
        r.nargs_ = 10;
        r.tombstone_arg_ = c_.tombstones ? "1" : "0";
        r.owner_ = c_.owner;
        r.turn_arg_ = turn_arg_;
        r.grace_arg_ = grace_arg_;
        if (ctx.previous) r.previous_ = ctx.previous->token;
        r.floor_arg_ =
            ctx.previous && ctx.previous_floor ? std::to_string(ctx.previous->fencing_token) : "0";
        r.registered_arg_ = ctx.registered ? "1" : "0";
        return r;
    }
    // The third argument only when asked for: without fairness, try_lock sends two.
    r.nargs_ = short_reply ? 2 : 3;
    return r;
}

acquire_verdict lock_engine::decide_acquire(const lock_round& r, lock_clock::time_point now) const {
    const std::size_t n = c_.nodes, q = quorum(n);
    const auto t = r.count();
    const auto state = decide(n, t.yes, t.no + t.unconfirmed, t.failed);
    const auto elapsed = std::chrono::duration_cast<microseconds>(now - r.start_);
    acquire_verdict v;
    if (state == quorum_state::reached && validity(c_.ttl, elapsed, c_.drift_factor).count() > 0) {
        // The fencing token is the largest of the granting nodes' counters. The release raises
        // lagging counters to it only when fewer than a majority already stand at it: any later
        // majority shares a node with that majority, whose INCR then exceeds it anyway.
        std::uint64_t fence = 0;
        auto granted = [&](std::size_t i) {
            return r.outs_[i].state == status::yes && !(r.flags_[i] & unconfirmed);
        };
        for (std::size_t i = 0; i < n; ++i)
            if (granted(i)) fence = std::max(fence, r.outs_[i].fence);
        std::size_t at_max = 0;
        for (std::size_t i = 0; i < n; ++i)
            at_max += (granted(i) && r.outs_[i].fence == fence) ? 1 : 0;
        v.floor_needed = at_max < q;
        v.got = lock_acquisition{
            r.token_, lease_schedule(c_.ttl, c_.drift_factor).valid_until(r.start_), fence};
        return v;
    }
    // Step 5: every node that may hold our key gets it back (a reply may have been lost, a
    // yes may have come too late, or the majority or the validity fell short).
    for (std::size_t i = 0; i < n; ++i)
        if (r.flags_[i] & may_hold) v.give_back.push_back(i);
    if (state == quorum_state::unreachable) {
        const auto slow = static_cast<std::size_t>(
            std::count_if(r.outs_.begin(), r.outs_.end(), [](const auto& o) {
                return o.state == status::timeout || o.state == status::connecting;
            }));
        v.unreachable = c_.label + ": " + std::to_string(t.failed - slow) + " of " +
                        std::to_string(n) + " nodes down or erroring, " + std::to_string(slow) +
                        " slow or still connecting; a majority of " + std::to_string(q) +
                        " is impossible";
        for (const auto& o : r.outs_)
            if (!o.detail.empty()) {
                v.unreachable += " (" + o.detail + ")";
                break;
            }
        // Slow nodes are retried like a split vote; nodes that refuse at once are waited for.
        v.why.down = t.failed - slow > n - q;
        return v;
    }
    // One holding on a majority (wait for its release), or a split vote / stale minority keys
    // (retry after a short random delay, step 5)?
    std::size_t yielding = 0;
    for (const auto& o : r.outs_) yielding += (o.state == status::no && o.yielding) ? 1 : 0;
    if (yielding > 0) {
        // Our turn is over where the lock is free and someone waits: let them in (a split
        // of yields and grants retries after a pause, like a split vote).
        v.why.yielding = true;
        return v;
    }
    const auto [top, votes] = most_common(r.outs_, status::no, n == 1);
    if (votes >= q) {
        v.why.one_holder = true;
        v.why.holder = std::string(top);
        // The smallest PTTL and turn among the holder's nodes: waking early costs an
        // attempt, waking late leaves the lock idle.
        bool first = true;
        for (const auto& o : r.outs_) {
            if (o.state != status::no || o.holder != top) continue;
            if (o.pttl >= 0 && (v.why.pttl < 0 || o.pttl < v.why.pttl)) v.why.pttl = o.pttl;
            v.why.turn_left = first ? o.turn_left : std::min(v.why.turn_left, o.turn_left);
            first = false;
        }
    }
    return v;
}

lock_round lock_engine::give_back(const lock_round& acquire_round,
                                  lock_clock::time_point now) const {
    auto r = make_round(round_kind::release, now);
    r.lua_ = &release_script();
    r.nkeys_ = 1;
    r.token_ = acquire_round.token_;
    r.nargs_ = 1;
    // each node given may hold our key: a key left there refuses our next attempts
    r.every_node_ = true;
    if (c_.tombstones) {
        r.nkeys_ = 2;
        r.nargs_ = 4;
        r.arg2_ = "0";
        r.arg3_ = ttl_arg_;
        r.tombstone_arg_ = ttl_arg_;
    }
    return r;
}

lock_round lock_engine::extend(std::string token, milliseconds ttl,
                               lock_clock::time_point now) const {
    auto r = make_round(round_kind::extend, now);
    r.lua_ = &extend_script();
    r.nkeys_ = 1;
    r.token_ = std::move(token);
    r.arg2_ = std::to_string(ttl.count());
    r.nargs_ = 2;
    return r;
}

extend_result lock_engine::decide_extend(const lock_round& r, milliseconds ttl,
                                         lock_clock::time_point now) const {
    const std::size_t n = c_.nodes, q = quorum(n);
    const auto t = r.count();
    const auto elapsed = std::chrono::duration_cast<microseconds>(now - r.start_);
    if (t.yes >= q && validity(ttl, elapsed, c_.drift_factor).count() > 0)
        return extend_result::extended;
    if (t.no > n - q) return extend_result::lost;
    return extend_result::not_confirmed;
}

lock_round lock_engine::release(const lock_acquisition& held, bool floor_needed,
                                lock_clock::time_point now) const {
    auto r = make_round(round_kind::release, now);
    r.lua_ = &release_script();
    r.token_ = held.token;
    // The counter, floor and its TTL only when needed.
    r.nkeys_ = floor_needed ? 2 : 1;
    r.nargs_ = floor_needed ? 3 : 1;
    if (floor_needed) {
        r.arg2_ = std::to_string(held.fencing_token);
        r.arg3_ = ttl_arg_;
    }
    if (c_.tombstones) {
        r.nkeys_ = 2;
        r.nargs_ = 4;
        if (!floor_needed) r.arg2_ = "0";
        r.arg3_ = ttl_arg_;
        r.tombstone_arg_ = ttl_arg_;
    }
    return r;
}

release_verdict lock_engine::decide_release(const lock_round& r) const {
    const std::size_t n = c_.nodes, q = quorum(n);
    const auto t = r.count();
    if (t.yes >= q) return release_verdict::released;
    if (t.no > n - q) return release_verdict::not_ours;
    return release_verdict::unknown;
}

std::vector<std::size_t> lock_engine::resend(lock_round& r, lock_clock::time_point now) const {
    if (r.kind_ != round_kind::release || now >= r.first_ + c_.resend_window) return {};
    auto nodes = r.unsent();
    // Decided: released, or not ours, or a majority of deletions out of reach even if every
    // unsent node (and every one still in flight) deleted its key.
    const std::size_t n = c_.nodes, q = quorum(n);
    const auto t = r.count();
    const auto in_flight =
        static_cast<std::size_t>(std::count_if(r.outs_.begin(), r.outs_.end(), [](const auto& o) {
            return o.state == status::not_waited;
        }));
    if (nodes.empty()) return {};
    if (!r.every_node_ && (t.yes >= q || t.no > n - q || t.yes + nodes.size() + in_flight < q))
        return {};
    for (auto i : nodes) {
        r.outs_[i] = node_outcome{};
        r.flags_[i] = 0;
    }
    if (!nodes.empty()) {
        r.start_ = now;
        r.deadline_ =
            c_.round_timeout.count() > 0 ? now + c_.round_timeout : lock_clock::time_point::max();
    }
    return nodes;
}

std::string lock_engine::release_unknown(const lock_round& r) const {
    const auto t = r.count();
    return c_.label + ": release answered by too few nodes (" + std::to_string(t.yes) +
           " deleted, " + std::to_string(t.no) + " not ours, " + std::to_string(t.failed) +
           " failed); keys left expire after their TTL";
}

}  // namespace redcoord::detail
