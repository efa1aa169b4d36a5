#include "action_gate.hpp"
#include "actions.hpp"
#include "host_check.hpp"
#include "json_out.hpp"
#include "key_scan.hpp"
#include "page.hpp"

#include <redcoord/core/errors.hpp>
#include <redcoord/core/keys.hpp>
#include <redcoord/core/log.hpp>
#include <redcoord/core/master_pools.hpp>
#include <redcoord/core/runtime.hpp>
#include <redcoord/core/token.hpp>
#include <redcoord/election/acl.hpp>
#include <redcoord/election/inspect.hpp>
#include <redcoord/http/dashboard.hpp>
#include <redcoord/jobs/acl.hpp>
#include <redcoord/jobs/inspect.hpp>
#include <redcoord/jobs/job_queue.hpp>
#include <redcoord/limit/acl.hpp>
#include <redcoord/limit/inspect.hpp>
#include <redcoord/lock/acl.hpp>
#include <redcoord/lock/inspect.hpp>
#include <redcoord/queue/acl.hpp>
#include <redcoord/queue/inspect.hpp>
#include <redcoord/signaling/acl.hpp>
#include <redcoord/signaling/inspect.hpp>

#include <algorithm>
#include <array>
#include <charconv>
#include <functional>
#include <optional>

namespace redcoord {

namespace {

using detail::json_out;

std::int64_t epoch_ms(std::chrono::system_clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

void write_lock(json_out& j, const lock_inspection& v) {
    j.field("held", v.held).field("holder", v.holder).field("label", v.label);
    j.field("ttl_left_ms", v.ttl_left);
    j.field("fencing_counter", v.fencing_counter).field("release_notice", v.release_notice);
    j.field("turn_owner", v.turn_owner).field("turn_left_ms", v.turn_left);
    j.field("next_in_turn", v.next_in_turn);
    j.field("fair_queue_length", static_cast<std::uint64_t>(v.fair_queue.size()));
    j.key("fair_queue").begin_array();
    for (std::size_t i = 0; i < v.fair_queue.size() && i < 20; ++i) j.value(v.fair_queue[i]);
    j.end_array();
}

void write_election(json_out& j, const election_inspection& v) {
    j.field("leader", v.leader).field("epoch", v.epoch).field("term_left_ms", v.term_left);
    j.field("rounds", v.rounds).field("last_epoch", v.last_epoch);
    j.key("candidates").begin_array();
    for (const auto& c : v.candidates)
        j.begin_object()
            .field("identity", c.identity)
            .field("expires_in_ms", c.expires_in)
            .end_object();
    j.end_array();
}

void write_queue(json_out& j, const queue_inspection& v) {
    j.field("ready", static_cast<std::uint64_t>(v.ready));
    j.field("dead", static_cast<std::uint64_t>(v.dead));
    j.field("in_flight", static_cast<std::uint64_t>(v.in_flight()));
    j.field("expired_consumers", static_cast<std::uint64_t>(v.expired()));
    j.field("oldest_ready_age_ms", v.oldest_ready_age);
    j.key("consumers").begin_array();
    for (const auto& c : v.consumers) {
        j.begin_object()
            .field("id", c.id)
            .field("in_flight", static_cast<std::uint64_t>(c.in_flight));
        j.field("lease_left_ms", c.lease_left)
            .field("oldest_in_flight_age_ms", c.oldest_in_flight_age);
        j.end_object();
    }
    j.end_array();
}

void write_job(json_out& j, const job_info& v) {
    j.begin_object().field("id", v.id).field("state", to_string(v.state));
    j.field("attempts", v.attempts).field("max_attempts", v.max_attempts);
    j.field("error", v.error).field("payload", v.payload).field("worker", v.worker);
    j.field("payload_bytes", static_cast<std::uint64_t>(v.payload.size()));
    // Flows: what it waits for (and still does), and who waits for it.
    for (const auto* list : {&v.dependencies, &v.pending_dependencies, &v.dependents}) {
        j.key(list == &v.dependencies           ? "dependencies"
              : list == &v.pending_dependencies ? "pending_dependencies"
                                                : "dependents")
            .begin_array();
        for (const auto& id : *list) j.value(id);
        j.end_array();
    }
    j.key("finished_at_ms");
    if (v.finished_at)
        j.value(epoch_ms(*v.finished_at));
    else
        j.null();
    j.end_object();
}

void write_barrier(json_out& j, const barrier_inspection& v) {
    j.field("generation", v.generation);
    j.key("parties");
    if (v.parties)
        j.value(static_cast<std::uint64_t>(*v.parties));
    else
        j.null();
    for (const auto* list : {&v.arrivals, &v.lapsed}) {
        j.key(list == &v.arrivals ? "arrivals" : "lapsed").begin_array();
        for (const auto& a : *list)
            j.begin_object()
                .field("member", a.member)
                .field("lease_left_ms", a.lease_left)
                .end_object();
        j.end_array();
    }
}

void write_leases(json_out& j, std::string_view key, const std::vector<lease_view>& leases) {
    j.key(key).begin_array();
    for (const auto& l : leases)
        j.begin_object()
            .field("holder", l.holder)
            .field("label", l.label)
            .field("count", l.count)
            .field("ttl_left_ms", l.ttl_left)
            .end_object();
    j.end_array();
}

// A limiter's state as the limit part reads it for `redcoord inspect` (inspect_semaphore()
// and the others), judged with the N, rate and burst, limit and window their latest
// acquisition or admission stored (null while unknown).
void write_limiter(json_out& j, connection_pool& pool, const detail::primitive_ref& r,
                   const std::string& prefix) {
    if (r.kind == "semaphore") {
        const auto v = inspect_semaphore(pool, r.name, prefix);
        j.field("held", v.held);
        j.field("permits", v.permits);
        j.field("left", v.permits ? std::optional(*v.permits - std::min(*v.permits, v.held))
                                  : std::nullopt);
        write_leases(j, "holders", v.holders);
        j.field("waiters", static_cast<std::uint64_t>(v.waiters));
        j.field("fencing_counter", v.fencing_counter);
    } else if (r.kind == "rwlock") {
        const auto v = inspect_rw_lock(pool, r.name, prefix);
        j.key("writer");
        if (v.writer) {
            j.begin_object().field("holder", v.writer->holder).field("label", v.writer->label);
            j.field("ttl_left_ms", v.writer->ttl_left).end_object();
        } else {
            j.null();
        }
        write_leases(j, "readers", v.readers);
        j.field("waiting_writers", static_cast<std::uint64_t>(v.waiting_writers));
        j.field("waiting_readers", static_cast<std::uint64_t>(v.waiting_readers));
        j.field("fencing_counter", v.fencing_counter);
    } else if (r.kind == "rate") {
        const auto v = inspect_rate_limiter(pool, r.name, prefix);
        j.field("idle", v.idle);
        j.field("burst", v.burst);
        j.field("remaining", v.burst ? std::optional(v.remaining) : std::nullopt);
        j.field("full_after_ms",
                static_cast<std::int64_t>(
                    std::chrono::ceil<std::chrono::milliseconds>(v.full_after).count()));
    } else if (r.kind == "window") {
        const auto v = inspect_sliding_window(pool, r.name, prefix);
        j.field("idle", v.idle);
        j.field("used", v.used);
        j.field("limit", v.limit);
        j.field("remaining", v.limit ? std::optional(v.remaining) : std::nullopt);
        j.field("window_ms",
                v.window ? std::optional(std::chrono::ceil<std::chrono::milliseconds>(*v.window))
                         : std::nullopt);
        j.field("reset_after_ms",
                static_cast<std::int64_t>(
                    std::chrono::ceil<std::chrono::milliseconds>(v.reset_after).count()));
    }
}

http_response text(int status, std::string body) {
    http_response r;
    r.status = status;
    r.body = std::move(body);
    r.headers.emplace_back("Cache-Control", "no-store");
    r.headers.emplace_back("X-Content-Type-Options", "nosniff");
    return r;
}

}  // namespace

struct dashboard::impl {
    std::shared_ptr<connection_pool> pool;
    dashboard_options opts;
    std::string csrf = random_token();      // per process: embedded in the page
    std::unique_ptr<master_pools> masters;  // the nodes to scan: each master of a cluster

    using item_writer = std::function<void(json_out&, const detail::primitive_ref&)>;

    // One `api/` page: discover names of `kinds`, then write each with `write`.
    http_response api_page(const http_request& req, std::string_view pattern_kind,
                           std::span<const std::string_view> kinds, const item_writer& write) {
        const auto from = detail::parse_scan_position(req.param("cursor").value_or(""));
        if (!from) return text(400, "bad cursor\n");
        const auto nodes = masters->get();
        std::vector<connection_pool*> raw;
        raw.reserve(nodes.size());
        for (const auto& n : nodes) raw.push_back(n.get());
        if (from->node > raw.size()) return text(400, "bad cursor\n");
        detail::scan_limits lim{opts.page_size, opts.scan_count, opts.max_scan_calls};
        const auto page = detail::discover(
            raw, opts.prefix, detail::scan_pattern(opts.prefix, pattern_kind), kinds, *from, lim);
        json_out j(opts.max_value_bytes);
        j.begin_object().field("prefix", opts.prefix).key("items").begin_array();
        for (const auto& ref : page.found) {
            // Each primitive is written apart and inserted whole, so one that fails halfway
            // (an ACL refusal of one key) leaves valid JSON: its name and the error.
            json_out item(opts.max_value_bytes);
            item.begin_object().field("kind", ref.kind).field("name", ref.name);
            try {
                write(item, ref);
                j.raw(item.end_object().text());
            } catch (const connection_error&) {
                throw;  // the server is gone: the whole page fails (502)
            } catch (const timeout_error&) {
                throw;
            } catch (const std::exception& e) {
                j.begin_object().field("kind", ref.kind).field("name", ref.name);
                j.field("error", std::string_view(e.what())).end_object();
            }
        }
        j.end_array().field("next", page.next).end_object();
        http_response r = text(200, j.text());
        r.content_type = "application/json";
        return r;
    }

    http_response api(const http_request& req, std::string_view what) {
        const auto& pre = opts.prefix;
        connection_pool& p = *pool;
        if (what == "locks") {
            static constexpr std::array<std::string_view, 1> k{"lock"};
            return api_page(req, "lock", k, [&](json_out& j, const detail::primitive_ref& r) {
                write_lock(j, inspect_lock(p, r.name, pre));
            });
        }
        if (what == "elections") {
            static constexpr std::array<std::string_view, 1> k{"election"};
            return api_page(req, "election", k, [&](json_out& j, const detail::primitive_ref& r) {
                write_election(j, inspect_election(p, r.name, pre));
            });
        }
        if (what == "queues") {
            static constexpr std::array<std::string_view, 1> k{"queue"};
            return api_page(req, "queue", k, [&](json_out& j, const detail::primitive_ref& r) {
                write_queue(j, inspect_queue(p, r.name, pre));
            });
        }
        if (what == "barriers") {
            static constexpr std::array<std::string_view, 1> k{"barrier"};
            return api_page(req, "barrier", k, [&](json_out& j, const detail::primitive_ref& r) {
                write_barrier(j, inspect_barrier(p, r.name, pre));
            });
        }
        if (what == "jobs") {
            static constexpr std::array<std::string_view, 1> k{"jobs"};
            return api_page(req, "jobs", k, [&](json_out& j, const detail::primitive_ref& r) {
                write_jobs(j, r.name);
            });
        }
        if (what == "jobs/list") return job_list(req);
        if (what == "limits") {
            static constexpr std::array<std::string_view, 4> k{"semaphore", "rwlock", "rate",
                                                               "window"};
            return api_page(req, "", k, [&](json_out& j, const detail::primitive_ref& r) {
                write_limiter(j, p, r, pre);
            });
        }
        return text(404, "not found\n");
    }

    // Up to jobs_listed jobs of `st` from `offset`, as a JSON array (none read when `total` says
    // the state is empty).
    std::string job_page(job_queue& q, job_state st, std::uint64_t total, std::size_t offset) {
        json_out list(opts.max_value_bytes);
        list.begin_array();
        if (total > offset && opts.jobs_listed > 0)
            for (const auto& id : q.list(st, opts.jobs_listed, offset))
                if (auto info = q.get(id)) write_job(list, *info);
        return list.end_array().text();
    }

    // `api/jobs/list?name=Q&state=S&offset=N`: one page of a queue's jobs in a state (failed,
    // dead, waiting_children, waiting, delayed, completed), jobs_listed per page, with the
    // offsets of the pages before and after it (null at either end).
    http_response job_list(const http_request& req) {
        const auto name = req.param("name").value_or("");
        validate_name(name, "job queue name");
        const auto state = req.param("state").value_or("failed");
        std::optional<job_state> st;
        for (auto s : {job_state::failed, job_state::dead, job_state::waiting_children,
                       job_state::waiting, job_state::delayed, job_state::completed})
            if (to_string(s) == state) st = s;
        if (!st) return text(400, "bad state\n");
        const auto off_text = req.param("offset").value_or("0");
        std::size_t offset = 0;
        const auto [end, ec] =
            std::from_chars(off_text.data(), off_text.data() + off_text.size(), offset);
        if (ec != std::errc() || end != off_text.data() + off_text.size())
            return text(400, "bad offset\n");
        job_queue_options qo;
        qo.prefix = opts.prefix;
        job_queue q(*pool, name, qo);
        // The inspect script's counts: what a read-only dashboard user may run.
        const auto c = inspect_jobs(*pool, name, opts.prefix).counts;
        const std::uint64_t total = *st == job_state::failed             ? c.failed
                                    : *st == job_state::dead             ? c.dead
                                    : *st == job_state::waiting_children ? c.waiting_children
                                    : *st == job_state::waiting          ? c.waiting
                                    : *st == job_state::delayed          ? c.delayed
                                                                         : c.completed;
        const std::uint64_t per = opts.jobs_listed;
        json_out j(opts.max_value_bytes);
        j.begin_object().field("name", name).field("state", state);
        j.field("offset", static_cast<std::uint64_t>(offset)).field("limit", per);
        j.field("total", total).key("jobs").raw(job_page(q, *st, total, offset));
        j.key("prev_offset");
        if (offset > 0 && per > 0)
            j.value(offset > per ? static_cast<std::uint64_t>(offset) - per : std::uint64_t{0});
        else
            j.null();
        j.key("next_offset");
        if (per > 0 && offset + per < total)
            j.value(static_cast<std::uint64_t>(offset) + per);
        else
            j.null();
        http_response r = text(200, j.end_object().text());
        r.content_type = "application/json";
        return r;
    }

    void write_jobs(json_out& j, const std::string& name) {
        const auto v = inspect_jobs(*pool, name, opts.prefix);
        const auto& c = v.counts;
        j.key("counts").begin_object().field("waiting", c.waiting).field("delayed", c.delayed);
        j.field("active", c.active).field("completed", c.completed).field("failed", c.failed);
        j.field("dead", c.dead).field("waiting_children", c.waiting_children).end_object();
        j.field("paused", v.paused);
        j.field("jobs_listed", static_cast<std::uint64_t>(opts.jobs_listed));
        j.field("oldest_waiting_age_ms", v.oldest_waiting_age);
        j.field("scheduler", v.scheduler).field("scheduler_epoch", v.scheduler_epoch);
        j.key("repeats").begin_array();
        for (const auto& r : v.repeats) {
            j.begin_object().field("name", r.name).field("every_ms", r.every).field("cron", r.cron);
            j.field("time_zone", r.time_zone).field("last_tick_at_ms", r.last_tick_ms).end_object();
        }
        j.end_array();
        j.key("groups").begin_array();
        for (const auto& g : v.groups) {
            j.begin_object().field("name", g.name).field("waiting", g.waiting);
            j.field("active", g.active).field("limit", static_cast<std::uint64_t>(g.limit));
            j.end_object();
        }
        j.end_array();
        // The lists read each job through job_queue (its get script): a user limited to
        // what `redcoord inspect` reads may not run it, and then only the lists are missing.
        try {
            job_queue_options qo;
            qo.prefix = opts.prefix;
            job_queue q(*pool, name, qo);
            const auto failed = job_page(q, job_state::failed, c.failed, 0);
            const auto dead = job_page(q, job_state::dead, c.dead, 0);
            const auto waiting = job_page(q, job_state::waiting_children, c.waiting_children, 0);
            j.key("failed_jobs").raw(failed).key("dead_jobs").raw(dead);
            j.key("waiting_children_jobs").raw(waiting);
        } catch (const connection_error&) {
            throw;
        } catch (const timeout_error&) {
            throw;
        } catch (const std::exception& e) {
            j.field("jobs_error", std::string_view(e.what()));
        }
    }

    bool actions_on() const { return opts.allow_actions && !opts.action_token.empty(); }

    void log_action(log_level level, std::string_view what, std::string_view name,
                    std::string_view id, std::string_view key, std::string_view outcome) const {
        pool->runtime()->emit(level, "dashboard", "dashboard action",
                              {{"action", what}, {"name", name}, {"id", id}, {key, outcome}});
    }

    // `POST api/actions/<what>`: judged by the gate, then run and logged.
    http_response action(const http_request& req, std::string_view what) {
        const auto& names = detail::action_names();
        if (std::find(names.begin(), names.end(), what) == names.end())
            return text(404, "no such action\n");
        const detail::action_settings gate{actions_on(), opts.action_token, csrf,
                                           opts.max_action_body_bytes};
        const auto name = detail::form_param(req, "name").value_or("");
        const auto id = detail::form_param(req, "id").value_or("");
        if (const auto no = detail::check_action(req, gate)) {
            // Past the method check, with actions on, a refusal is someone trying: worth a
            // record (its answer's line, without the newline).
            if (no->status != 405 && actions_on()) {
                std::string_view why = no->message;
                if (!why.empty() && why.back() == '\n') why.remove_suffix(1);
                log_action(log_level::warning, what, name, id, "refused", why);
            }
            auto r = text(no->status, no->message);
            if (no->status == 405) r.headers.emplace_back("Allow", "POST");
            return r;
        }
        try {
            const auto done =
                detail::run_action(*pool, opts.prefix, what, req, opts.max_value_bytes);
            log_action(log_level::info, what, name, id, "outcome", done.outcome);
            auto r = text(200, done.json);
            r.content_type = "application/json";
            return r;
        } catch (const invalid_argument& e) {
            log_action(log_level::warning, what, name, id, "outcome", e.what());
            return text(400, std::string(e.what()) + "\n");
        } catch (const std::exception& e) {
            log_action(log_level::error, what, name, id, "outcome", e.what());
            return text(502, "redis at " + pool->where().to_string() + ": " + e.what() + "\n");
        }
    }

    std::optional<http_response> handle(const http_request& req) {
        const auto& base = opts.base_path;
        if (req.path.compare(0, base.size(), base) != 0 &&
            req.path + "/" != base)  // `/ops` for a base of `/ops/`
            return std::nullopt;
        const std::string_view rest =
            req.path.size() >= base.size() ? std::string_view(req.path).substr(base.size()) : "";
        const bool page = rest.empty() || rest == "index.html";
        const bool asset = rest == "app.js" || rest == "app.css";
        const bool api_route = rest.substr(0, 4) == "api/";
        if (!page && !asset && !api_route) return std::nullopt;
        if (!detail::host_allowed(req.host, opts.allowed_hosts))
            return text(403,
                        "host not allowed: reach the dashboard by an IP address or localhost, or "
                        "add this name to its allowed hosts (--allow-host)\n");
        if (rest.substr(0, 12) == "api/actions/") return action(req, rest.substr(12));
        if (req.method != "GET" && req.method != "HEAD") {
            auto r = text(405, "the dashboard is read-only here (actions: POST api/actions/)\n");
            r.headers.emplace_back("Allow", "GET, HEAD");
            return r;
        }
        if (rest == "api/actions") {
            json_out j(opts.max_value_bytes);
            j.begin_object().field("enabled", actions_on()).key("csrf");
            if (actions_on())
                j.value(csrf);
            else
                j.null();
            j.key("actions").begin_array();
            if (actions_on())
                for (const auto a : detail::action_names()) j.value(a);
            j.end_array().end_object();
            auto r = text(200, j.text());
            r.content_type = "application/json";
            return r;
        }
        if (page && req.path + "/" == base) {
            auto r = text(308, "");
            r.headers.emplace_back("Location", base);
            return r;
        }
        if (page || asset) {
            http_response r;
            if (page) {
                r.content_type = "text/html; charset=utf-8";
                r.body = detail::dashboard_html(opts.refresh, actions_on() ? csrf : "");
            } else if (rest == "app.js") {
                r.content_type = "text/javascript; charset=utf-8";
                r.body = detail::dashboard_js();
            } else {
                r.content_type = "text/css; charset=utf-8";
                r.body = detail::dashboard_css();
            }
            r.headers.emplace_back("Content-Security-Policy",
                                   "default-src 'none'; script-src 'self'; style-src 'self'; "
                                   "connect-src 'self'; img-src 'self'; base-uri 'none'; "
                                   "form-action 'none'; frame-ancestors 'none'");
            r.headers.emplace_back("X-Content-Type-Options", "nosniff");
            r.headers.emplace_back("Referrer-Policy", "no-referrer");
            return r;
        }
        try {
            return api(req, rest.substr(4));
        } catch (const invalid_argument& e) {
            return text(400, std::string(e.what()) + "\n");
        } catch (const std::exception& e) {
            return text(502, "redis at " + pool->where().to_string() + ": " + e.what() + "\n");
        }
    }
};

dashboard::dashboard(std::shared_ptr<connection_pool> pool, dashboard_options opts) {
    if (!pool) throw invalid_argument("dashboard: null pool");
    const auto& b = opts.base_path;
    if (b.empty() || b.front() != '/' || b.back() != '/')
        throw invalid_argument("dashboard: base_path must start and end with '/'");
    if (opts.page_size == 0 || opts.scan_count == 0 || opts.max_scan_calls == 0 ||
        opts.max_value_bytes == 0 || opts.refresh.count() <= 0 || opts.max_action_body_bytes == 0)
        throw invalid_argument(
            "dashboard: page_size, scan_count, max_scan_calls, max_value_bytes and refresh "
            "must be > 0");
    if (opts.allow_actions && opts.action_token.empty())
        throw invalid_argument("dashboard: allow_actions needs an action_token");
    impl_ = std::make_shared<impl>();
    impl_->pool = std::move(pool);
    impl_->opts = std::move(opts);
    impl_->masters = std::make_unique<master_pools>(impl_->pool);
}

dashboard::~dashboard() = default;

std::optional<http_response> dashboard::handle(const http_request& req) const {
    return impl_->handle(req);
}

http_handler dashboard::handler() const {
    return [i = impl_](const http_request& req) { return i->handle(req); };
}

const dashboard_options& dashboard::options() const noexcept { return impl_->opts; }

acl_needs dashboard_acl_needs(std::string_view prefix, int db) {
    acl_needs n = lock_inspect_acl_needs(prefix, db);
    n.merge(election_inspect_acl_needs(prefix, db))
        .merge(signaling_inspect_acl_needs(prefix, db))
        .merge(queue_inspect_acl_needs(prefix, db))
        .merge(jobs_inspect_acl_needs(prefix, db))
        .merge(limit_inspect_acl_needs(prefix, db))
        // SCAN finds the primitives; the failed and dead job lists are job_queue::list()
        // (ZRANGE) and get(), whose script reads with HGETALL, GET and ZSCORE.
        .allow_commands({"scan", "zrange", "hgetall", "get", "zscore"});
    return n;
}

}  // namespace redcoord
