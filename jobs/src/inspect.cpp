#include "job_queue_keys.hpp"
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
    const auto& e = r.elements();
    jobs_inspection v;
    const auto now = e.at(0).integer();
    const auto& c = e.at(1).elements();
    std::uint64_t* into[] = {&v.counts.waiting,   &v.counts.delayed, &v.counts.active,
                             &v.counts.completed, &v.counts.failed,  &v.counts.dead};
    for (std::size_t i = 0; i < 6 && i < c.size(); ++i)
        *into[i] = static_cast<std::uint64_t>(std::max<std::int64_t>(0, c[i].integer()));
    if (e.at(2).is_string())
        v.oldest_waiting_age =
            std::chrono::milliseconds(std::max<std::int64_t>(0, now - std::stoll(e.at(2).text())));
    if (e.at(3).is_string()) {
        v.scheduler = e.at(3).text();
        if (e.at(4).is_string()) v.scheduler_epoch = std::stoull(e.at(4).text());
    }
    for (const auto& item : e.at(5).elements()) {
        const auto& f = item.elements();
        repeat_inspection rep;
        rep.name = f.at(0).text();
        rep.every = std::chrono::milliseconds(std::stoll(f.at(1).text()));
        rep.cron = f.at(2).is_string() ? f.at(2).text() : std::string();
        rep.time_zone = f.at(3).is_string() ? f.at(3).text() : std::string();
        rep.missed = f.at(4).is_string() ? f.at(4).text() : std::string();
        rep.last_tick_ms = f.at(5).is_string() ? std::stoll(f.at(5).text()) : 0;
        v.repeats.push_back(std::move(rep));
    }
    v.paused = e.size() > 6 && e.at(6).integer() == 1;
    std::sort(v.repeats.begin(), v.repeats.end(),
              [](const auto& a, const auto& b) { return a.name < b.name; });
    return v;
}

}  // namespace redcoord
