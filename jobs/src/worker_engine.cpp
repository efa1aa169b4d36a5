#include "worker_engine.hpp"

#include <redcoord/core/detail/lease_schedule.hpp>

#include <algorithm>

namespace redcoord::detail {

worker_engine::worker_engine(worker_settings s, worker_clock::time_point now)
    : s_(s), next_beat_(now + beat_period()), watch_next_(now + beat_period()) {}

std::chrono::milliseconds worker_engine::beat_period() const noexcept {
    return s_.beat_period.count() > 0 ? s_.beat_period
                                      : lease_schedule(s_.lease, 0.0).renew_period();
}

std::size_t worker_engine::claim_size(double average_us) const noexcept {
    if (s_.prefetch <= 1 || average_us < 0) return 1;
    const double window_us = std::chrono::duration<double, std::micro>(s_.settle_delay).count();
    const double n = window_us / std::max(average_us, 1.0);
    return static_cast<std::size_t>(std::clamp(n, 1.0, static_cast<double>(s_.prefetch)));
}

bool worker_engine::housekeeping_due(worker_clock::time_point now) noexcept {
    if (now - last_housekeeping_ < s_.housekeeping_interval) return false;
    last_housekeeping_ = now;
    return true;
}

std::chrono::milliseconds worker_engine::idle_wait(std::int64_t wait_ms) const noexcept {
    auto wait = s_.poll_timeout;
    if (wait_ms >= 0) wait = std::min(wait, std::chrono::milliseconds(wait_ms));
    return wait;
}

std::optional<worker_clock::time_point> worker_engine::on_claimed(
    const std::vector<claimed_job_reply>& jobs, const std::string& token,
    worker_clock::time_point sent) {
    auto earliest = worker_clock::time_point::max();
    for (const auto& c : jobs) {
        held h{token, {}, {}, job_lease(s_.lease, sent)};
        earliest = std::min(earliest, h.lease.until());
        // Only a claim's first job may have a timeout (claim_next() keeps the others free of
        // them), so it starts at once and its timeout counts from the claim.
        if (c.timeout.count() > 0) {
            h.stop_at = sent + c.timeout - s_.timeout_margin;
            earliest = std::min(earliest, *h.stop_at);
        }
        jobs_.insert_or_assign(c.id, std::move(h));
    }
    // Its timeout, or the lease of a claim whose reply came late, may end before the watch's
    // next run.
    if (earliest >= watch_next_) return std::nullopt;
    watch_next_ = earliest;
    return earliest;
}

const worker_engine::held* worker_engine::find(const std::string& id,
                                               const std::string& token) const {
    const auto it = jobs_.find(id);
    return it != jobs_.end() && it->second.token == token ? &it->second : nullptr;
}

bool worker_engine::holds(const std::string& id, const std::string& token) const {
    return find(id, token) != nullptr;
}

std::stop_token worker_engine::stop_token(const std::string& id, const std::string& token) const {
    const auto* h = find(id, token);
    return h ? h->stop.get_token() : std::stop_token();
}

bool worker_engine::stop_requested(const std::string& id, const std::string& token) const {
    const auto* h = find(id, token);
    return h && h->stop.stop_requested();
}

std::optional<worker_clock::time_point> worker_engine::deadline(const std::string& id,
                                                                const std::string& token) const {
    const auto* h = find(id, token);
    if (!h || !h->stop_at) return std::nullopt;
    return *h->stop_at + s_.timeout_margin;
}

std::optional<worker_clock::time_point> worker_engine::held_until(const std::string& id,
                                                                  const std::string& token) const {
    const auto* h = find(id, token);
    if (!h || h->lease.gone()) return std::nullopt;
    return h->lease.until();
}

bool worker_engine::cancel(const std::string& id) {
    const auto it = jobs_.find(id);
    if (it == jobs_.end()) return false;
    it->second.stop.request_stop();
    return true;
}

void worker_engine::forget(const std::string& id, const std::string& token) {
    if (const auto it = jobs_.find(id); it != jobs_.end() && it->second.token == token)
        jobs_.erase(it);
}

bool worker_engine::settlement_queued(worker_clock::time_point now, bool more_to_run) noexcept {
    if (!more_to_run || flush_at_) return false;
    flush_at_ = now + s_.settle_delay;
    return true;
}

worker_clock::time_point worker_engine::upkeep_due() const noexcept {
    return flush_at_ ? std::min(next_beat_, *flush_at_) : next_beat_;
}

std::optional<beat_request> worker_engine::beat(worker_clock::time_point now) {
    if (now < next_beat_) return std::nullopt;
    next_beat_ = now + beat_period();
    beat_request r;
    for (auto& [id, h] : jobs_) {
        // A job given up is not made ours again: it lapses for another worker.
        if (h.lease.gone(now)) continue;
        r.jobs.emplace_back(id, h.token);
    }
    return r;
}

void worker_engine::fire(const std::string& id, held& h, stop_reason why,
                         std::vector<stop_decision>& out) {
    if (h.stop.stop_requested()) return;
    h.stop.request_stop();
    out.push_back({id, why});
}

std::vector<stop_decision> worker_engine::on_beat_reply(const beat_request& sent_jobs,
                                                        const std::vector<beat_status>& answers,
                                                        worker_clock::time_point sent,
                                                        worker_clock::time_point now) {
    std::vector<stop_decision> out;
    for (std::size_t i = 0; i < answers.size() && i < sent_jobs.jobs.size(); ++i) {
        const auto& [id, token] = sent_jobs.jobs[i];
        const auto it = jobs_.find(id);
        if (it == jobs_.end() || it->second.token != token) continue;
        switch (answers[i]) {
            case beat_status::held: it->second.lease.renewed(sent, now); break;
            case beat_status::cancelled:
                // Renewed all the same: the handler may take a moment to stop.
                it->second.lease.renewed(sent, now);
                fire(id, it->second, stop_reason::cancelled, out);
                break;
            case beat_status::lost: fire(id, it->second, stop_reason::lost, out); break;
        }
    }
    return out;
}

worker_engine::watch_outcome worker_engine::watch(worker_clock::time_point now) {
    watch_outcome w;
    w.next = now + beat_period();
    for (auto& [id, h] : jobs_) {
        if (h.lease.gone(now))
            fire(id, h, stop_reason::lease_lapsed, w.stopped);
        else
            w.next = std::min(w.next, h.lease.until());
        if (h.stop_at) {
            if (*h.stop_at <= now)
                fire(id, h, stop_reason::timed_out, w.stopped);
            else
                w.next = std::min(w.next, *h.stop_at);
        }
    }
    watch_next_ = w.next;
    return w;
}

}  // namespace redcoord::detail
