#include "job_fields.hpp"
#include "job_queue_keys.hpp"
#include "job_scripts.hpp"
#include "replicated_run.hpp"

#include <redcoord/core/detail/observe.hpp>
#include <redcoord/core/detail/refusal.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/core/keys.hpp>
#include <redcoord/core/runtime.hpp>
#include <redcoord/core/token.hpp>
#include <redcoord/jobs/cron.hpp>
#include <redcoord/jobs/job_queue.hpp>
#include <redcoord/jobs/time_zone.hpp>
#include <redcoord/queue/limits.hpp>

#include <array>

namespace redcoord {

namespace {

using std::chrono::milliseconds;

constexpr std::array<std::string_view, 6> state_names{"waiting",   "delayed", "active",
                                                      "completed", "failed",  "dead"};

job_state parse_state(std::string_view s) {
    for (std::size_t i = 0; i < state_names.size(); ++i)
        if (state_names[i] == s) return static_cast<job_state>(i);
    throw error("job_queue: unknown job state '" + std::string(s) + "' on the server");
}

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
    if (payload.size() > max_payload_limit)
        throw payload_too_large("job_queue: a payload of " + std::to_string(payload.size()) +
                                " bytes exceeds " + std::to_string(max_payload_limit));
}

std::string ms_arg(milliseconds d) { return std::to_string(d.count()); }

// The 7 ARGV values of one job in job_add_script().
void append_job(std::vector<std::string>& argv, const std::string& id, std::string_view payload,
                const job_options& o) {
    std::int64_t run_at = 0;
    if (o.run_at)
        run_at = std::max<std::int64_t>(
            1, std::chrono::duration_cast<milliseconds>(o.run_at->time_since_epoch()).count());
    argv.insert(argv.end(),
                {id, std::string(payload), detail::encode_job_options(o), ms_arg(o.timeout),
                 ms_arg(o.delay), std::to_string(run_at), ms_arg(o.deadline)});
}

// One round trip: every state's ZCARD. @throws as the pool's commands; permission_error
// naming ZCARD when refused.
job_counts read_counts(connection_pool& pool, const std::string& base) {
    auto c = pool.borrow_for(base);
    std::vector<std::vector<std::string>> cmds;
    cmds.reserve(state_names.size());
    for (auto s : state_names) cmds.push_back({"ZCARD", base + ":" + std::string(s)});
    const auto r = c->pipeline(cmds);
    job_counts n;
    std::uint64_t* into[] = {&n.waiting, &n.delayed, &n.active, &n.completed, &n.failed, &n.dead};
    for (std::size_t i = 0; i < r.size(); ++i) {
        if (r[i].is_error()) detail::throw_reply_error(r[i].text(), "ZCARD", "job_queue::counts");
        *into[i] = static_cast<std::uint64_t>(std::max<std::int64_t>(0, r[i].integer()));
    }
    return n;
}

// The redcoord_jobs gauges, one per state, sampled at each scrape (null when metrics are
// off). The sample reads its keys and the pool, which outlives every copy of the queue, never
// the job_queue object, so the copies of a queue share it.
std::shared_ptr<void> observe(connection_pool& pool, const std::string& name,
                              std::shared_ptr<const job_queue::keys> keys) {
    const detail::metrics_scope ms(*pool.runtime());
    if (!ms) return {};
    std::vector<std::pair<detail::metric, metric_labels>> series;
    series.reserve(state_names.size());
    for (auto s : state_names)
        series.push_back(
            {detail::metric::jobs, {{"name", ms.name(name)}, {"state", std::string(s)}}});
    auto g = std::make_shared<detail::sampled_gauges>();
    g->start(ms, series, [&pool, keys = std::move(keys)] {
        const auto n = read_counts(pool, keys->base);  // bounded by the pool's timeouts
        return std::vector<double>{static_cast<double>(n.waiting), static_cast<double>(n.delayed),
                                   static_cast<double>(n.active),  static_cast<double>(n.completed),
                                   static_cast<double>(n.failed),  static_cast<double>(n.dead)};
    });
    return g;
}

}  // namespace

std::string_view to_string(job_state s) noexcept {
    const auto i = static_cast<std::size_t>(s);
    return i < state_names.size() ? state_names[i] : "unknown";
}

job_queue::job_queue(connection_pool& pool, std::string_view name, job_queue_options opts)
    : pool_(pool), name_(name), opts_(std::move(opts)) {
    validate_name(name_, "job queue name");
    if (opts_.keep_completed.count() <= 0)
        throw invalid_argument("job_queue_options::keep_completed must be > 0");
    if (opts_.result_ttl.count() < 0)
        throw invalid_argument("job_queue_options::result_ttl must be >= 0");
    if (opts_.rate_interval.count() <= 0)
        throw invalid_argument("job_queue_options::rate_interval must be > 0");
    if (opts_.replicas > 0 && opts_.replica_timeout.count() <= 0)
        throw invalid_argument("job_queue_options::replica_timeout must be > 0 when replicas > 0");
    keys_ = std::make_shared<const keys>(detail::make_job_keys(opts_.prefix, name_));
    observer_ = observe(pool_, name_, keys_);
}

add_result job_queue::add(std::string_view payload, const job_options& opts) {
    std::vector<std::pair<std::string, job_options>> one;
    one.emplace_back(std::string(payload), opts);
    return add_batch(one).at(0);
}

std::vector<add_result> job_queue::add_batch(
    const std::vector<std::pair<std::string, job_options>>& jobs) {
    if (jobs.empty()) return {};
    std::vector<std::string> argv{keys_->wake};
    argv.reserve(1 + jobs.size() * 7);
    std::vector<std::string> ids;
    ids.reserve(jobs.size());
    for (const auto& [payload, o] : jobs) {
        check(o, payload);
        ids.push_back(o.id.empty() ? random_token() : o.id);
        append_job(argv, ids.back(), payload, o);
    }
    std::vector<std::string_view> args(argv.begin(), argv.end());
    const std::array<std::string_view, 1> k{keys_->base};
    auto w = detail::run_replicated(pool_, opts_, detail::job_add_script(), k, args);
    if (!w.confirmed) detail::throw_unconfirmed("job_queue: add to '" + name_ + "'", w.acks, opts_);
    const reply& r = w.result;
    std::vector<add_result> out;
    const auto& e = r.elements();
    if (e.size() != 2 * ids.size()) throw error("job_queue: unexpected reply to add");
    for (std::size_t i = 0; i < ids.size(); ++i)
        out.push_back({ids[i], e[2 * i].integer() == 1, parse_state(e[2 * i + 1].text())});
    return out;
}

std::optional<job_info> job_queue::get(std::string_view id) {
    validate_name(id, "job id");
    const auto r = detail::job_get_script().run(pool_, {keys_->base}, {id});
    const auto& fields = r.elements().at(0).elements();
    if (fields.empty()) return std::nullopt;
    job_info j;
    j.id = std::string(id);
    // Server milliseconds since the epoch, as the scripts store them.
    const auto at = [](const std::string& ms) {
        return std::chrono::system_clock::time_point(std::chrono::milliseconds(std::stoll(ms)));
    };
    for (std::size_t i = 0; i + 1 < fields.size(); i += 2) {
        const auto& f = fields[i].text();
        const auto& v = fields[i + 1].text();
        if (f == "state") {
            j.state = parse_state(v);
        } else if (f == "payload") {
            j.payload = v;
        } else if (f == "o") {
            const auto o = detail::decode_job_options(v);
            j.priority = o.priority;
            j.max_attempts = o.max_attempts;
        } else if (f == "attempts") {
            j.attempts = static_cast<unsigned>(std::stoul(v));
        } else if (f == "progress") {
            j.progress = v;
        } else if (f == "error") {
            j.error = v;
        } else if (f == "worker") {
            j.worker = v;
        } else if (f == "added") {
            j.added_at = at(v);
        } else if (f == "started") {
            j.started_at = at(v);
        } else if (f == "finished") {
            j.finished_at = at(v);
        }
    }
    if (const auto& res = r.elements().at(1); res.is_string()) j.result = res.text();
    if (j.state == job_state::delayed && r.elements().size() > 2 && r.elements()[2].is_string())
        j.due_at = at(r.elements()[2].text());
    return j;
}

std::optional<job_state> job_queue::cancel(std::string_view id) {
    validate_name(id, "job id");
    const auto r = detail::job_cancel_script().run(pool_, {keys_->base}, {id, keys_->cancel});
    if (!r.is_string()) return std::nullopt;
    return parse_state(r.text());
}

bool job_queue::pause() {
    return detail::job_pause_script().run(pool_, {keys_->base}, {"1", keys_->wake}).integer() == 1;
}

bool job_queue::resume() {
    return detail::job_pause_script().run(pool_, {keys_->base}, {"0", keys_->wake}).integer() == 1;
}

bool job_queue::paused() {
    auto c = pool_.borrow_for(keys_->base);
    return c->command({"EXISTS", keys_->base + ":paused"}).integer() == 1;
}

bool job_queue::retry(std::string_view id) {
    validate_name(id, "job id");
    return detail::job_retry_script().run(pool_, {keys_->base}, {id, keys_->wake}).integer() == 1;
}

std::optional<job_state> job_queue::remove(std::string_view id) {
    validate_name(id, "job id");
    const auto r = detail::job_remove_script().run(pool_, {keys_->base}, {id});
    if (!r.is_string()) return std::nullopt;
    return parse_state(r.text());
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
        const auto n =
            detail::job_clean_script()
                .run(pool_, {keys_->base},
                     {std::string(to_string(state)), ms_arg(older_than), std::to_string(want)})
                .integer();
        removed += static_cast<std::size_t>(n);
        if (static_cast<std::size_t>(n) < want) break;
    }
    return removed;
}

job_counts job_queue::counts() { return read_counts(pool_, keys_->base); }

void job_queue::repeat(std::string_view name, std::string_view payload, const repeat_options& o) {
    validate_name(name, "repeat name");
    if (!o.job.id.empty())
        throw invalid_argument("repeat_options::job.id must be empty (each tick has its own id)");
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
        pool_, {keys_->base},
        {name, payload, options, timeout, deadline, every, o.cron, o.time_zone,
         o.missed == repeat_options::missed_ticks::skip ? "skip" : "catch_up"});
}

bool job_queue::remove_repeat(std::string_view name) {
    validate_name(name, "repeat name");
    return detail::job_repeat_remove_script().run(pool_, {keys_->base}, {name}).integer() == 1;
}

std::vector<std::string> job_queue::list(job_state state, std::size_t limit) {
    // Active jobs are scored by the end of their visibility, which follows their start.
    const std::string stop = limit == 0 ? "-1" : std::to_string(limit - 1);
    const auto r =
        pool_.command({"ZRANGE", keys_->base + ":" + std::string(to_string(state)), "0", stop});
    std::vector<std::string> ids;
    for (const auto& e : r.elements())
        ids.emplace_back(state == job_state::active ? detail::active_member_id(e.text())
                                                    : std::string_view(e.text()));
    return ids;
}

const std::string& job_queue::name() const noexcept { return name_; }
connection_pool& job_queue::pool() noexcept { return pool_; }
const job_queue_options& job_queue::options() const noexcept { return opts_; }

}  // namespace redcoord
