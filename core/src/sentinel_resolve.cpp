#include "sentinel_resolve.hpp"

#include <redcoord/core/deadline.hpp>

#include <algorithm>

namespace redcoord::detail {

using std::chrono::milliseconds;

std::size_t choose_master(std::span<const master_candidate> cands) noexcept {
    const bool disagree = cands.size() > 1 && cands[1].votes > 0;
    if (disagree) return 0;
    std::size_t oldest = 0;
    for (std::size_t i = 0; i < cands.size(); ++i) {
        if (!cands[i].suspected_since) return i;
        if (*cands[i].suspected_since < *cands[oldest].suspected_since) oldest = i;
    }
    return oldest;
}

sentinel_resolve::sentinel_resolve(resolve_timing timing, std::vector<host_port> sentinels,
                                   std::string where, std::string service)
    : timing_(timing), sentinels_(std::move(sentinels)), where_(std::move(where)),
      service_(std::move(service)), auth_refused_(sentinels_.size(), false) {}

std::optional<sentinel_resolve::time_point> sentinel_resolve::suspected_since(
    const host_port& addr, time_point now) const {
    for (const auto& [a, t] : suspects_)
        if (a == addr && now - t < timing_.suspect_window) return t;
    return std::nullopt;
}

sentinel_resolve::step sentinel_resolve::next(time_point now, time_point deadline) {
    if (current_ && !stale_) return {step::kind::use, *current_, {}};
    // Another caller is asking the sentinels: share its answer.
    if (resolving_) {
        if (now >= deadline) return {step::kind::round_timeout, {}, {}};
        return {step::kind::wait, {}, deadline};
    }
    // Rounds that did not end with a confirmed master are spaced by the back-off, so a
    // failover does not cause a thundering herd against the sentinels.
    if (now < next_round_) {
        if (now >= deadline) return {step::kind::backoff_timeout, {}, {}};
        return {step::kind::wait, {}, std::min(next_round_, deadline)};
    }
    resolving_ = true;
    ++rounds_;
    cands_.clear();
    return {step::kind::ask, {}, {}};
}

void sentinel_resolve::end_round(time_point now) {
    resolving_ = false;
    backoff_ =
        backoff_.count() == 0 ? timing_.backoff_min : std::min(backoff_ * 2, timing_.backoff_max);
    next_round_ = deadline_after(backoff_, now);
}

void sentinel_resolve::abort(time_point now, std::string what) {
    end_round(now);
    last_failure_ = std::move(what);
}

sentinel_resolve::verdict sentinel_resolve::answers(std::span<const master_answer> answers,
                                                    time_point now) {
    // Votes in the sentinels' order, so ties go to the address the earlier sentinel named,
    // whatever order the answers arrived in.
    std::vector<std::pair<host_port, std::size_t>> votes;
    int unknown = 0, auth = 0;
    std::string detail;
    for (std::size_t i = 0; i < answers.size(); ++i) {
        const auto& a = answers[i];
        const std::string who =
            "sentinel " + (i < sentinels_.size() ? addr_text(sentinels_[i]) : std::string("?"));
        const bool known = i < auth_refused_.size();
        switch (a.what) {
            case master_answer::kind::master: {
                auto it = std::find_if(votes.begin(), votes.end(),
                                       [&](auto& e) { return e.first == a.addr; });
                if (it == votes.end())
                    votes.emplace_back(a.addr, 1);
                else
                    ++it->second;
                break;
            }
            case master_answer::kind::unknown: ++unknown; break;
            case master_answer::kind::refused:
                if (a.auth) ++auth;
                detail = who + ": " + a.text;
                break;
            case master_answer::kind::bad_reply: detail = who + ": " + a.text; break;
            case master_answer::kind::unreachable: {
                // A pool in reconnect back-off says "failed recently": keep the earlier cause.
                bool refused = a.auth;
                if (known) {
                    if (a.failed_recently)
                        refused = auth_refused_[i];
                    else
                        auth_refused_[i] = refused;
                }
                if (refused) ++auth;
                detail = who + ": " + (refused ? std::string("authentication refused") : a.text);
                break;
            }
        }
        if (a.what != master_answer::kind::unreachable && known) auth_refused_[i] = false;
    }
    verdict v;
    if (votes.empty()) {
        if (auth > 0) {
            v.what = verdict::kind::auth_refused;
            v.message =
                "sentinels of " + where_ + " refused authentication (check the sentinel password)";
        } else if (unknown > 0) {
            v.what = verdict::kind::unknown_service;
            v.message = "no sentinel of " + where_ + " monitors a service named '" + service_ + "'";
        } else {
            v.what = verdict::kind::unreachable;
            v.message = "no sentinel of " + where_ + " answered" +
                        (detail.empty() ? std::string() : " (last: " + detail + ")");
        }
        abort(now, v.message);
        return v;
    }
    std::stable_sort(votes.begin(), votes.end(),
                     [](auto& a, auto& b) { return a.second > b.second; });
    cands_.clear();
    for (auto& [hp, n] : votes) cands_.push_back({hp, n, std::nullopt});
    majority_.reset();
    if (cands_.front().votes * 2 > sentinels_.size()) majority_ = cands_.front().addr;
    // The sentinels name the new master only after their next INFO of the promoted replica
    // (up to a second after its promotion); while every named address is failing, the replica
    // the failover leader flagged "promoted" is worth trying (connect() still checks its role).
    if (std::all_of(cands_.begin(), cands_.end(),
                    [&](auto& c) { return suspected_since(c.addr, now).has_value(); })) {
        v.what = verdict::kind::need_promoted;
        return v;
    }
    return choose(now);
}

sentinel_resolve::verdict sentinel_resolve::promoted(std::span<const host_port> replicas,
                                                     time_point now) {
    for (const auto& hp : replicas)
        if (std::none_of(cands_.begin(), cands_.end(), [&](auto& c) { return c.addr == hp; }))
            cands_.push_back({hp, 0, std::nullopt});
    return choose(now);
}

sentinel_resolve::verdict sentinel_resolve::choose(time_point now) {
    end_round(now);
    for (auto& c : cands_) c.suspected_since = suspected_since(c.addr, now);
    verdict v;
    v.what = verdict::kind::chosen;
    v.addr = cands_[choose_master(cands_)].addr;
    v.change = set_master(v.addr);
    cands_.clear();
    return v;
}

master_change sentinel_resolve::set_master(const host_port& hp) {
    master_change changed;
    if (current_ && *current_ != hp) {
        ++switches_;
        changed.emplace(*current_, hp);
    }
    current_ = hp;
    stale_ = false;
    return changed;
}

master_change sentinel_resolve::announced(const host_port& to) {
    auto ch = set_master(to);
    backoff_ = milliseconds(0);
    next_round_ = {};
    std::erase_if(suspects_, [&](auto& s) { return s.first == to; });
    return ch;
}

void sentinel_resolve::confirm(const host_port& addr) {
    if (current_ != addr) return;
    backoff_ = milliseconds(0);
    next_round_ = {};
    std::erase_if(suspects_, [&](auto& s) { return s.first == addr; });
}

void sentinel_resolve::report_failure(const host_port& addr, time_point now) {
    // Failures older than the window no longer count (keeps the list to recent ones).
    std::erase_if(suspects_, [&](auto& s) {
        return !(now - s.second < timing_.suspect_window) && s.first != addr;
    });
    auto it =
        std::find_if(suspects_.begin(), suspects_.end(), [&](auto& s) { return s.first == addr; });
    if (it == suspects_.end())
        suspects_.emplace_back(addr, now);
    else
        it->second = now;
    if (current_ == addr) stale_ = true;
}

bool sentinel_resolve::accept(const host_port& addr, const std::optional<std::string>& role) const {
    if (role) return *role == "master";
    // ROLE, HELLO and INFO all refused to this user: trust only a majority's answer.
    return majority_ == addr;
}

}  // namespace redcoord::detail
