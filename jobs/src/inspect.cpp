#include "job_queue_keys.hpp"
#include "job_replies.hpp"
#include "job_scripts.hpp"

#include <redcoord_lua/jobs.hpp>

#include <redcoord/core/keys.hpp>
#include <redcoord/core/script.hpp>
#include <redcoord/election/election_options.hpp>
#include <redcoord/jobs/inspect.hpp>

#include <algorithm>

namespace redcoord {

namespace detail {

const script& jobs_inspect_script() {
    static const script s(jobs_inspect_lua);
    return s;
}

}  // namespace detail

jobs_inspection inspect_jobs(connection_pool& pool, std::string_view name,
                             std::string_view prefix) {
    validate_name(name, "job queue name");
    const auto keys = detail::make_job_keys(prefix, name);
    const auto selector = make_election_keys(prefix, name).selector;
    const auto r = detail::jobs_inspect_script().run(pool, {keys.base, selector}, {});
    auto d = detail::decode_inspect(r);
    jobs_inspection v;
    v.counts = d.counts;
    if (d.oldest_waiting_added_ms)
        v.oldest_waiting_age = std::chrono::milliseconds(
            std::max<std::int64_t>(0, d.now_ms - *d.oldest_waiting_added_ms));
    if (d.scheduler) {
        v.scheduler = std::move(d.scheduler);
        v.scheduler_epoch = d.scheduler_epoch.value_or(0);
    }
    for (auto& e : d.repeats) {
        repeat_inspection rep;
        rep.name = std::move(e.name);
        rep.every = e.every;
        rep.cron = std::move(e.cron);
        rep.time_zone = std::move(e.time_zone);
        rep.missed = std::move(e.missed);
        rep.last_tick_ms = e.last_tick_ms;
        v.repeats.push_back(std::move(rep));
    }
    v.paused = d.paused;
    v.groups = std::move(d.groups);
    std::sort(v.repeats.begin(), v.repeats.end(),
              [](const auto& a, const auto& b) { return a.name < b.name; });
    return v;
}

}  // namespace redcoord
