#include "runtime_services.hpp"

#include <redcoord/core/detail/observe.hpp>

namespace redcoord::detail {

metric_desc describe(metric m, const metrics_options& o) {
    const auto d = [](const char* n, const char* h) { return metric_desc{n, h, {}}; };
    switch (m) {
        case metric::lock_acquire_seconds: {
            auto r = d("redcoord_lock_acquire_seconds",
                       "Time an acquire call took, from its start to its answer (kind: lock, "
                       "fair_lock, redlock; "
                       "outcome: acquired, timeout, error).");
            r.buckets = o.seconds_buckets;
            return r;
        }
        case metric::lock_lost_total:
            return d("redcoord_lock_lost_total",
                     "Holdings lost before their release: the validity ended unconfirmed (watchdog "
                     "or extension "
                     "failed) or the key was taken over.");
        case metric::redlock_quorum_failures_total:
            return d("redcoord_redlock_quorum_failures_total",
                     "Redlock acquire rounds that could not reach a majority of the nodes.");
        case metric::election_leader:
            return d("redcoord_election_leader",
                     "1 while this elector leads the election, else 0.");
        case metric::election_terms_total:
            return d("redcoord_election_terms_total",
                     "Leaderships (terms) this process's electors won.");
        case metric::signal_delivery_seconds: {
            auto r = d("redcoord_signal_delivery_seconds",
                       "Publish-to-delivery time of a signal's first copy, for signals published "
                       "on the same host "
                       "and boot (the sender's steady clock in the envelope id); other hosts' are "
                       "not observed.");
            r.buckets = o.seconds_buckets;
            return r;
        }
        case metric::queue_ready:
            return d("redcoord_queue_ready",
                     "Messages waiting in the queue, sampled (LLEN) at each scrape.");
        case metric::queue_in_flight:
            return d("redcoord_queue_in_flight",
                     "Messages popped and not yet settled, over every registered consumer, sampled "
                     "at each scrape.");
        case metric::queue_dead:
            return d("redcoord_queue_dead",
                     "Messages in the dead-letter list, sampled (LLEN) at each scrape.");
        case metric::queue_redeliveries_total:
            return d("redcoord_queue_redeliveries_total",
                     "Messages returned to the queue by this process: nacked, or recovered from "
                     "dead consumers.");
        case metric::queue_dead_letters_total:
            return d("redcoord_queue_dead_letters_total",
                     "Messages this process moved to the dead-letter list (max_attempts reached).");
        case metric::pool_in_use:
            return d("redcoord_pool_in_use",
                     "Connections currently leased from the pools of an endpoint.");
        case metric::reconnects_total:
            return d("redcoord_reconnects_total",
                     "Connections opened again after one to the same endpoint broke (link: pool, "
                     "pubsub).");
        case metric::jobs:
            return d("redcoord_jobs",
                     "Jobs of a job queue in each state (waiting, delayed, active, completed, "
                     "failed, dead), sampled (ZCARD) at each scrape.");
        case metric::jobs_paused:
            return d("redcoord_jobs_paused",
                     "1 while a job queue is paused (job_queue::pause(): no new claims), else 0; "
                     "sampled (EXISTS) at each scrape.");
        case metric::jobs_settled_total:
            return d("redcoord_jobs_settled_total",
                     "Job attempts this process's workers settled (outcome: completed; retried, "
                     "failed or dead after a failure; lost when the worker no longer held the "
                     "job).");
        case metric::job_run_seconds: {
            auto r = d("redcoord_job_run_seconds",
                       "Time a job handler ran, from its start to its return (outcome: "
                       "completed, failed).");
            r.buckets = o.seconds_buckets;
            return r;
        }
        case metric::jobs_stalled_total:
            return d("redcoord_jobs_stalled_total",
                     "Jobs this process's workers took back from stalled workers (their lease "
                     "lapsed) and retried.");
        case metric::jobs_ticks_total:
            return d("redcoord_jobs_ticks_total",
                     "Ticks of repeatable jobs this process's scheduler added as jobs.");
        case metric::rate_limited_total:
            return d("redcoord_rate_limited_total",
                     "Requests this process's limiters refused (kind: rate, window).");
        case metric::semaphore_permits:
            return d("redcoord_semaphore_permits",
                     "Semaphore permits this process holds (state: held).");
        case metric::semaphore_acquire_seconds: {
            auto r = d("redcoord_semaphore_acquire_seconds",
                       "Time a semaphore acquire call took, from its start to its answer "
                       "(outcome: acquired, timeout, error).");
            r.buckets = o.seconds_buckets;
            return r;
        }
        case metric::rwlock_holds:
            return d("redcoord_rwlock_holds",
                     "Read-write lock holds this process has (mode: read, write).");
        case metric::rwlock_acquire_seconds: {
            auto r = d("redcoord_rwlock_acquire_seconds",
                       "Time a read-write lock acquire call took, from its start to its answer "
                       "(mode: read, write; outcome: acquired, timeout, error).");
            r.buckets = o.seconds_buckets;
            return r;
        }
    }
    return d("redcoord_unknown", "");
}

metrics_scope::metrics_scope(const runtime& rt) : m_(runtime_services::metrics(rt)) {
    if (m_) o_ = runtime_services::metrics_settings(rt);
}

std::string metrics_scope::name(std::string_view resource) const {
    return o_.resource_names ? std::string(resource) : std::string();
}

std::string metrics_scope::identity(std::string_view identity) const {
    return o_.identities ? std::string(identity) : std::string();
}

counter_handle metrics_scope::counter(metric m, const metric_labels& labels) const noexcept {
    if (!m_) return {};
    try {
        return counter_handle(m_->counter(describe(m, o_), labels));
    } catch (...) {
        return {};  // a backend that refuses a series must not cost the object
    }
}

gauge_handle metrics_scope::gauge(metric m, const metric_labels& labels) const noexcept {
    if (!m_) return {};
    try {
        return gauge_handle(m_->gauge(describe(m, o_), labels));
    } catch (...) {
        return {};
    }
}

histogram_handle metrics_scope::histogram(metric m, const metric_labels& labels) const noexcept {
    if (!m_) return {};
    try {
        return histogram_handle(m_->histogram(describe(m, o_), labels));
    } catch (...) {
        return {};
    }
}

std::shared_ptr<void> metrics_scope::collector(std::function<void()> fn) const noexcept {
    if (!m_) return {};
    try {
        return m_->add_collector(std::move(fn));
    } catch (...) {
        return {};
    }
}

void sampled_gauges::start(const metrics_scope& ms,
                           const std::vector<std::pair<metric, metric_labels>>& series,
                           std::function<std::vector<double>()> sample) {
    if (!ms) return;
    gauges_.reserve(series.size());
    for (const auto& [m, labels] : series) gauges_.push_back(ms.gauge(m, labels));
    collector_ = ms.collector([this, sample = std::move(sample)] {
        const auto v = sample();  // a throw keeps the last values (the backend swallows it)
        for (std::size_t i = 0; i < gauges_.size() && i < v.size(); ++i) gauges_[i].set(v[i]);
    });
}

void sampled_gauges::reset() noexcept {
    collector_.reset();
    for (const auto& g : gauges_) g.set(0);
}

}  // namespace redcoord::detail
