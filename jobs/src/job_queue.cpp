#include "job_fields.hpp"
#include "job_flow.hpp"
#include "job_groups.hpp"
#include "job_queue_impl.hpp"
#include "job_queue_keys.hpp"
#include "job_replies.hpp"
#include "job_scripts.hpp"
#include "replicated_run.hpp"

#include <redcoord/core/detail/observe.hpp>
#include <redcoord/core/detail/refusal.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/core/keys.hpp>
#include <redcoord/core/runtime.hpp>
#include <redcoord/core/token.hpp>
#include <redcoord/jobs/cron.hpp>
#include <redcoord/jobs/inspect.hpp>
#include <redcoord/jobs/job_queue.hpp>
#include <redcoord/jobs/time_zone.hpp>
#include <redcoord/queue/limits.hpp>

#include <algorithm>
#include <array>

namespace redcoord {

namespace {

using std::chrono::milliseconds;

// In job_state's order.
constexpr std::array<std::string_view, 7> state_names{
    "waiting", "delayed", "active", "completed", "failed", "dead", "waiting_children"};

void check(const job_options& o, std::string_view payload) {
    if (!o.id.empty()) validate_name(o.id, "job id");
    if (o.priority < 0 || o.priority > detail::max_job_priority)
        throw invalid_argument("job_options::priority must be in 0.." +
                               std::to_string(detail::max_job_priority));
    if (o.max_attempts < 1) throw invalid_argument("job_options::max_attempts must be >= 1");
    if (o.delay.count() < 0) throw invalid_argument("job_options::delay must be >= 0");
    if (o.timeout.count() < 0) throw invalid_argument("job_options::timeout must be >= 0");
    if (o.deadline.count() < 0) throw invalid_argument("job_options::deadline must be >= 0");
    o.backoff.validate();
    detail::check_dependencies(o);
    detail::check_group_options(o);
    if (payload.size() > max_payload_limit)
        throw payload_too_large("job_queue: a payload of " + std::to_string(payload.size()) +
                                " bytes exceeds " + std::to_string(max_payload_limit));
}

std::string ms_arg(milliseconds d) { return std::to_string(d.count()); }

// The ARGV values of one job: 7 for job_add_script() (`stride` 7), 9 with its dependencies
// for job_add_flow_script(), 12 with its group, dedupe window and debounce for
// job_add2_script().
void append_job(std::vector<std::string>& argv, const std::string& id, std::string_view payload,
                const job_options& o, std::size_t stride) {
    std::int64_t run_at = 0;
    if (o.run_at)
        run_at = std::max<std::int64_t>(
            1, std::chrono::duration_cast<milliseconds>(o.run_at->time_since_epoch()).count());
    argv.insert(argv.end(),
                {id, std::string(payload), detail::encode_job_options(o), ms_arg(o.timeout),
                 ms_arg(o.delay), std::to_string(run_at), ms_arg(o.deadline)});
    if (stride == 7) return;
    std::string deps;
    for (const auto& d : o.depends_on) {
        if (!deps.empty()) deps += '\n';  // names never hold LF
        deps += d;
    }
    argv.push_back(std::move(deps));
    argv.emplace_back(o.on_dependency_failure == dependency_failure::ignore ? "i" : "f");
    if (stride == 9) return;
    argv.insert(argv.end(),
                {o.group.value_or(std::string()), ms_arg(o.dedupe_for), ms_arg(o.debounce)});
}

struct counts_and_pause {
    job_counts counts;
    bool paused = false;
};

// One round trip: every state's ZCARD (and, for the metrics, whether the queue is paused).
// @throws as the pool's commands; permission_error naming ZCARD when refused.
counts_and_pause read_counts(connection_pool& pool, const std::string& base, bool with_pause) {
    auto c = pool.borrow_for(base);
    std::vector<std::vector<std::string>> cmds;
    cmds.reserve(state_names.size() + 2);
    for (auto s : state_names) cmds.push_back({"ZCARD", base + ":" + std::string(s)});
    cmds.push_back({"GET", base + ":gwaiting"});  // the ready jobs of every group
    if (with_pause) cmds.push_back({"EXISTS", base + ":paused"});
    const auto r = c->pipeline(cmds);
    counts_and_pause out;
    job_counts& n = out.counts;
    std::uint64_t* into[] = {&n.waiting, &n.delayed, &n.active,          &n.completed,
                             &n.failed,  &n.dead,    &n.waiting_children};
    for (std::size_t i = 0; i < state_names.size(); ++i) {
        if (r[i].is_error()) detail::throw_reply_error(r[i].text(), "ZCARD", "job_queue::counts");
        *into[i] = static_cast<std::uint64_t>(std::max<std::int64_t>(0, r[i].integer()));
    }
    const auto& grouped = r.at(state_names.size());
    if (grouped.is_error()) detail::throw_reply_error(grouped.text(), "GET", "job_queue::counts");
    if (grouped.is_string())
        n.waiting +=
            static_cast<std::uint64_t>(std::max<std::int64_t>(0, std::stoll(grouped.text())));
    if (with_pause) {
        const auto& p = r.at(state_names.size() + 1);
        if (p.is_error()) detail::throw_reply_error(p.text(), "EXISTS", "job_queue::counts");
        out.paused = p.integer() == 1;
    }
    return out;
}

// The redcoord_jobs gauges, one per state, and redcoord_jobs_paused, sampled at each scrape
// (null when metrics are off). The sample reads its keys and the pool, which outlives every
// copy of the queue, never the job_queue object, so the copies of a queue share it.
std::shared_ptr<void> observe(connection_pool& pool, const std::string& name,
                              std::shared_ptr<const detail::job_keys> keys) {
    const detail::metrics_scope ms(*pool.runtime());
    if (!ms) return {};
    std::vector<std::pair<detail::metric, metric_labels>> series;
    series.reserve(state_names.size() + 1);
    for (auto s : state_names)
        series.push_back(
            {detail::metric::jobs, {{"name", ms.name(name)}, {"state", std::string(s)}}});
    series.push_back({detail::metric::jobs_paused, {{"name", ms.name(name)}}});
    auto g = std::make_shared<detail::sampled_gauges>();
    g->start(ms, series, [&pool, keys = std::move(keys)] {
        // Bounded by the pool's timeouts.
        const auto [n, paused] = read_counts(pool, keys->base, true);
        return std::vector<double>{
            static_cast<double>(n.waiting),          static_cast<double>(n.delayed),
            static_cast<double>(n.active),           static_cast<double>(n.completed),
            static_cast<double>(n.failed),           static_cast<double>(n.dead),
            static_cast<double>(n.waiting_children), paused ? 1.0 : 0.0};
    });
    return g;
}

}  // namespace

std::string_view to_string(job_state s) noexcept {
    const auto i = static_cast<std::size_t>(s);
    return i < state_names.size() ? state_names[i] : "unknown";
}

job_queue::job_queue(connection_pool& pool, std::string_view name, job_queue_options opts) {
    validate_name(name, "job queue name");
    if (opts.keep_completed.count() <= 0)
        throw invalid_argument("job_queue_options::keep_completed must be > 0");
    if (opts.result_ttl.count() < 0)
        throw invalid_argument("job_queue_options::result_ttl must be >= 0");
    if (opts.rate_interval.count() <= 0)
        throw invalid_argument("job_queue_options::rate_interval must be > 0");
    if (opts.replication.replicas > 0 && opts.replication.timeout.count() <= 0)
        throw invalid_argument(
            "job_queue_options::replication.timeout must be > 0 when replication.replicas > 0");
    auto keys = std::make_shared<const detail::job_keys>(detail::make_job_keys(opts.prefix, name));
    auto observer = observe(pool, std::string(name), keys);
    impl_ = std::make_shared<const impl>(
        impl{pool, std::string(name), std::move(opts), std::move(keys), std::move(observer)});
}

add_result job_queue::add(std::string_view payload, const job_options& opts) {
    std::vector<std::pair<std::string, job_options>> one;
    one.emplace_back(std::string(payload), opts);
    return add_batch(one).at(0);
}

std::vector<add_result> job_queue::add_batch(
    const std::vector<std::pair<std::string, job_options>>& jobs) {
    if (jobs.empty()) return {};
    std::vector<std::string> ids;
    ids.reserve(jobs.size());
    bool flow = false, format2 = false;
    for (const auto& [payload, o] : jobs) {
        check(o, payload);
        ids.push_back(o.id.empty() ? random_token() : o.id);
        flow = flow || !o.depends_on.empty();
        format2 = format2 || detail::needs_format2(o);
    }
    const std::size_t stride = format2 ? 12 : flow ? 9 : 7;
    // A flow's jobs go after the jobs of the call they depend on (the server checks each
    // dependency against the jobs before it).
    std::vector<std::size_t> order(jobs.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::vector<std::pair<std::string, job_options>> sent;
    if (flow) {
        std::vector<std::vector<std::string>> deps;
        deps.reserve(jobs.size());
        for (const auto& j : jobs) deps.push_back(j.second.depends_on);
        order = detail::flow_order(ids, deps);
    }
    if (stride > 7) {
        sent.reserve(jobs.size());
        for (const auto i : order) {
            sent.push_back(jobs[i]);
            sent.back().second.id = ids[i];
        }
    }
    std::vector<std::string> argv{impl_->keys->wake};
    argv.reserve(1 + jobs.size() * stride);
    for (const auto i : order) append_job(argv, ids[i], jobs[i].first, jobs[i].second, stride);
    std::vector<std::string_view> args(argv.begin(), argv.end());
    const std::array<std::string_view, 1> k{impl_->keys->base};
    const auto& s = stride == 12  ? detail::job_add2_script()
                    : stride == 9 ? detail::job_add_flow_script()
                                  : detail::job_add_script();
    const auto refused = [&](const std::string& text) {
        if (stride == 7) return;
        detail::throw_if_dependency_refusal(text, sent);
        detail::throw_if_debounce_refusal(text, sent);
    };
    detail::replicated_reply_of_queue w;
    try {
        w = detail::run_replicated(impl_->pool, impl_->opts, s, k, args);
    } catch (const reply_error& e) {
        refused(e.what());
        throw;
    }
    if (!w.confirmed)
        detail::throw_unconfirmed("job_queue: add to '" + impl_->name + "'", w.acks, impl_->opts);
    const reply& r = w.result;
    if (r.is_error()) refused(r.text());
    const auto answers = detail::decode_add(r, ids.size());
    std::vector<add_result> out(jobs.size());
    for (std::size_t n = 0; n < order.size(); ++n) {
        const auto i = order[n];
        out[i] = {ids[i], answers[n].added, answers[n].debounced, answers[n].state};
    }
    return out;
}

std::vector<add_result> job_queue::add_flow(const flow_job& root) {
    return add_batch(detail::flatten_flow(root));
}

std::optional<job_info> job_queue::get(std::string_view id) {
    validate_name(id, "job id");
    const auto g =
        detail::decode_get(detail::job_get_script().run(impl_->pool, {impl_->keys->base}, {id}));
    if (!g) return std::nullopt;
    return detail::to_job_info(std::string(id), *g);
}

std::optional<job_state> job_queue::cancel(std::string_view id) {
    validate_name(id, "job id");
    return detail::decode_state_or_nil(
        detail::job_cancel_script().run(impl_->pool, {impl_->keys->base},
                                        {id, impl_->keys->cancel}),
        "jobs_cancel");
}

bool job_queue::pause() {
    return detail::decode_flag(
        detail::job_pause_script().run(impl_->pool, {impl_->keys->base}, {"1", impl_->keys->wake}),
        "jobs_pause");
}

bool job_queue::resume() {
    return detail::decode_flag(
        detail::job_pause_script().run(impl_->pool, {impl_->keys->base}, {"0", impl_->keys->wake}),
        "jobs_pause");
}

bool job_queue::paused() {
    auto c = impl_->pool.borrow_for(impl_->keys->base);
    return c->command({"EXISTS", impl_->keys->base + ":paused"}).integer() == 1;
}

bool job_queue::retry(std::string_view id) {
    validate_name(id, "job id");
    return detail::decode_flag(
        detail::job_retry_script().run(impl_->pool, {impl_->keys->base}, {id, impl_->keys->wake}),
        "jobs_retry");
}

std::optional<job_state> job_queue::remove(std::string_view id) {
    validate_name(id, "job id");
    return detail::decode_state_or_nil(
        detail::job_remove_script().run(impl_->pool, {impl_->keys->base}, {id}), "jobs_remove");
}

std::size_t job_queue::clean(job_state state, std::chrono::milliseconds older_than,
                             std::size_t limit) {
    if (state != job_state::completed && state != job_state::failed && state != job_state::dead)
        throw invalid_argument("job_queue::clean: only completed, failed or dead jobs are cleaned");
    if (older_than.count() < 0) throw invalid_argument("job_queue::clean: older_than must be >= 0");
    constexpr std::size_t chunk = 1000;
    std::size_t removed = 0;
    while (limit == 0 || removed < limit) {
        const auto want = limit == 0 ? chunk : std::min(chunk, limit - removed);
        const auto n = static_cast<std::size_t>(detail::decode_count(
            detail::job_clean_script().run(
                impl_->pool, {impl_->keys->base},
                {std::string(to_string(state)), ms_arg(older_than), std::to_string(want)}),
            "jobs_clean"));
        removed += n;
        if (static_cast<std::size_t>(n) < want) break;
    }
    return removed;
}

job_counts job_queue::counts() { return read_counts(impl_->pool, impl_->keys->base, false).counts; }

std::uint32_t job_queue::set_group_limit(std::string_view group, std::uint32_t limit) {
    detail::validate_group(group);
    const auto previous = detail::decode_count(
        detail::job_group_limit_script().run(impl_->pool, {impl_->keys->base},
                                             {group, std::to_string(limit), impl_->keys->wake}),
        "jobs_group_limit");
    return static_cast<std::uint32_t>(std::min<std::uint64_t>(previous, UINT32_MAX));
}

std::vector<group_counts> job_queue::groups() {
    return inspect_jobs(impl_->pool, impl_->name, impl_->opts.prefix).groups;
}

void job_queue::repeat(std::string_view name, std::string_view payload, const repeat_options& o) {
    validate_name(name, "repeat name");
    if (!o.job.id.empty())
        throw invalid_argument("repeat_options::job.id must be empty (each tick has its own id)");
    if (detail::needs_format2(o.job))
        throw invalid_argument(
            "repeat_options::job: group, dedupe_for and debounce are not for repeatable jobs");
    check(o.job, payload);
    if (o.every.count() < 0) throw invalid_argument("repeat_options::every must be >= 0");
    if ((o.every.count() > 0) == !o.cron.empty())
        throw invalid_argument("repeat_options: give either every (> 0) or cron, not both");
    if (!o.cron.empty()) {
        (void)cron_schedule(o.cron);
        (void)time_zone::load(o.time_zone);
    }
    const std::string options = detail::encode_job_options(o.job), timeout = ms_arg(o.job.timeout),
                      deadline = ms_arg(o.job.deadline), every = ms_arg(o.every);
    (void)detail::job_repeat_set_script().run(
        impl_->pool, {impl_->keys->base},
        {name, payload, options, timeout, deadline, every, o.cron, o.time_zone,
         o.missed == repeat_options::missed_ticks::skip ? "skip" : "catch_up"});
}

bool job_queue::remove_repeat(std::string_view name) {
    validate_name(name, "repeat name");
    return detail::decode_flag(
        detail::job_repeat_remove_script().run(impl_->pool, {impl_->keys->base}, {name}),
        "jobs_repeat_remove");
}

std::vector<std::string> job_queue::list(job_state state, std::size_t limit, std::size_t offset) {
    // Active jobs are scored by the end of their visibility, which follows their start.
    const std::string stop = limit == 0 ? "-1" : std::to_string(offset + limit - 1);
    const auto r =
        impl_->pool.command({"ZRANGE", impl_->keys->base + ":" + std::string(to_string(state)),
                             std::to_string(offset), stop});
    std::vector<std::string> ids;
    for (const auto& e : r.elements())
        ids.emplace_back(state == job_state::active ? detail::active_member_id(e.text())
                                                    : std::string_view(e.text()));
    return ids;
}

const std::string& job_queue::name() const noexcept { return impl_->name; }
connection_pool& job_queue::pool() noexcept { return impl_->pool; }
const job_queue_options& job_queue::options() const noexcept { return impl_->opts; }

}  // namespace redcoord
