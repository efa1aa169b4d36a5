#include "connection_impl.hpp"
#include "sentinel_parse.hpp"
#include "sentinel_resolve.hpp"

#include <redcoord/core/deadline.hpp>
#include <redcoord/core/detail/error_slot.hpp>
#include <redcoord/core/detail/thread_annotations.hpp>
#include <redcoord/core/fan_out.hpp>
#include <redcoord/core/pool.hpp>
#include <redcoord/core/sentinel.hpp>

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <span>
#include <string>

// The driver of the Sentinel resolver: the sentinels' pools, the fan-out of each round, the
// notification subscribers, connect() with its role check. Every decision (which master,
// when to ask again, how long to back off, which role to accept) is detail::sentinel_resolve's
// (sentinel_resolve.hpp); the parsers are in sentinel_parse.hpp.

namespace redcoord {

using clock_type = std::chrono::steady_clock;
using std::chrono::milliseconds;
using detail::addr_text;

namespace {

// What is left of `deadline` for one command on `c`, capped by its command_timeout.
// @throws timeout_error when nothing is left (a zero timeout would mean "wait forever").
milliseconds command_budget(const connection& c, clock_type::time_point deadline,
                            std::string_view what) {
    const auto left = time_left(deadline);
    if (left.count() <= 0)
        throw timeout_error("no time left to " + std::string(what) + " " +
                            addr_text({c.where().host, c.where().port}));
    const auto cap = c.where().command_timeout;
    return cap.count() > 0 ? std::min(left, cap) : left;
}

// The role one command reports, or nullopt when the user may not run it (NOPERM, or an
// unknown command on an old server) or the reply holds no role.
template <class Parse>
std::optional<std::string> ask_role(connection& c, clock_type::time_point deadline,
                                    std::initializer_list<std::string_view> argv, Parse parse) {
    try {
        return parse(c.command_for(command_budget(c, deadline, "verify the role of"),
                                   std::span<const std::string_view>(argv.begin(), argv.size())));
    } catch (const reply_error&) {
        return std::nullopt;
    }
}

// The node's role ("master", "slave", "replica", "sentinel", ...), asked with the first of
// ROLE, HELLO 2 and INFO replication the ACL user may run: ROLE is @admin @dangerous and INFO
// @dangerous, so a least-privilege user typically has only HELLO. nullopt when all three are
// refused. Every command ends by `deadline`.
// @throws timeout_error, connection_error, protocol_error on transport failures.
std::optional<std::string> probe_role(connection& c, clock_type::time_point deadline) {
    if (auto role = ask_role(c, deadline, {"ROLE"}, detail::role_from_role_reply)) return role;
    if (auto role = ask_role(c, deadline, {"HELLO", "2"}, detail::role_from_hello)) return role;
    return ask_role(c, deadline, {"INFO", "replication"}, detail::role_from_info);
}

}  // namespace

struct sentinel_resolver::impl {
    sentinel_resolver* owner = nullptr;
    endpoint ep;
    sentinel_options opts;
    std::vector<endpoint> sentinel_eps;
    std::vector<std::unique_ptr<connection_pool>> pools;  // one small pool per sentinel

    mutable detail::mutex mu;
    std::condition_variable cv;  // a round ended, or the master or a suspect changed
    std::optional<detail::sentinel_resolve> engine REDCOORD_GUARDED_BY(mu);
    bool notifications_started REDCOORD_GUARDED_BY(mu) = false;
    // Declared last: destroyed (threads joined) before anything their handlers touch.
    std::vector<std::unique_ptr<subscriber>> subs REDCOORD_GUARDED_BY(mu);

    void announce(const detail::master_change& ch) noexcept {
        if (!ch) return;
        try {
            owner->master_changed_(ch->first, ch->second);
        } catch (...) {
            // A throwing slot must not break resolution; slots report their own errors.
        }
    }

    void on_notification(const pubsub_message& m) {
        const auto to = detail::parse_notification(m.channel, m.payload, ep.service);
        if (!to) return;
        detail::master_change ch;
        {
            detail::lock_guard lk(mu);
            ch = engine->announced(*to);
        }
        cv.notify_all();
        announce(ch);
    }

    void start_notifications_locked() REDCOORD_REQUIRES(mu) {
        if (notifications_started || !opts.follow_notifications) return;
        notifications_started = true;
        for (auto& sep : sentinel_eps) {
            auto s = std::make_unique<subscriber>(
                sep, [this](const pubsub_message& m) { on_notification(m); }, opts.notifications);
            (void)s->subscribe({"+switch-master", "+promoted-slave"}, milliseconds(0));
            subs.push_back(std::move(s));
        }
    }

    std::vector<connection_pool*> sentinel_pools() const {
        std::vector<connection_pool*> ps;
        for (auto& p : pools) ps.push_back(p.get());
        return ps;
    }

    // One round's questions: every sentinel at once, each answer parsed in sentinel order.
    std::vector<detail::master_answer> ask_sentinels() {
        fan_out_options fo;
        fo.timeout = opts.query_timeout;
        auto results =
            fan_out(sentinel_pools(), {"SENTINEL", "get-master-addr-by-name", ep.service}, fo);
        std::vector<detail::master_answer> out;
        out.reserve(results.size());
        for (auto& r : results)
            out.push_back(r.answered() ? detail::parse_master_answer(*r.value)
                                       : detail::unreachable_answer(r.error));
        return out;
    }

    // The replicas the sentinels flag "promoted" (asked only while every named master fails).
    std::vector<host_port> ask_promoted() {
        fan_out_options fo;
        fo.timeout = opts.query_timeout;
        std::vector<host_port> out;
        for (auto& r : fan_out(sentinel_pools(), {"SENTINEL", "replicas", ep.service}, fo)) {
            if (!r.answered() || !r.value->is_array()) continue;
            for (auto& hp : detail::promoted_replicas(detail::parse_replica_entries(*r.value)))
                if (std::find(out.begin(), out.end(), hp) == out.end()) out.push_back(hp);
        }
        return out;
    }

    [[noreturn]] static void fail(const detail::sentinel_resolve::verdict& v) {
        using k = detail::sentinel_resolve::verdict::kind;
        if (v.what == k::auth_refused) throw auth_error(v.message);
        if (v.what == k::unknown_service) throw unknown_service(v.message);
        throw sentinel_unreachable(v.message);
    }

    host_port master(milliseconds wait) REDCOORD_EXCLUDES(mu) {
        using step = detail::sentinel_resolve::step::kind;
        using verdict = detail::sentinel_resolve::verdict::kind;
        const auto deadline = deadline_after(wait);
        detail::unique_lock lk(mu);
        start_notifications_locked();
        for (;;) {
            const auto s = engine->next(clock_type::now(), deadline);
            switch (s.what) {
                case step::use: return s.addr;
                case step::wait: cv.wait_until(lk.native(), s.until); continue;
                case step::round_timeout:
                    throw timeout_error("no answer from the sentinels of " + ep.to_string() +
                                        " within " + std::to_string(wait.count()) + " ms");
                case step::backoff_timeout: {
                    const auto& last = engine->last_failure();
                    throw timeout_error("no master of " + ep.to_string() + " within " +
                                        std::to_string(wait.count()) + " ms" +
                                        (last.empty() ? "" : ": " + last));
                }
                case step::ask: break;
            }
            // This caller runs the round; the lock is not held during its I/O.
            std::exception_ptr err;
            std::vector<detail::master_answer> answers;
            lk.unlock();
            try {
                answers = ask_sentinels();
            } catch (...) {
                err = std::current_exception();
            }
            lk.lock();
            detail::sentinel_resolve::verdict v;
            if (!err) {
                v = engine->answers(answers, clock_type::now());
                if (v.what == verdict::need_promoted) {
                    std::vector<host_port> promoted;
                    lk.unlock();
                    try {
                        promoted = ask_promoted();
                    } catch (...) {
                        err = std::current_exception();
                    }
                    lk.lock();
                    if (!err) v = engine->promoted(promoted, clock_type::now());
                }
            }
            if (err) engine->abort(clock_type::now(), detail::message_of(err));
            cv.notify_all();
            if (err) std::rethrow_exception(err);
            if (v.what != verdict::chosen) fail(v);
            lk.unlock();
            announce(v.change);
            return v.addr;
        }
    }

    bool accept(const host_port& addr, const std::optional<std::string>& role) const
        REDCOORD_EXCLUDES(mu) {
        detail::lock_guard lk(mu);
        return engine->accept(addr, role);
    }

    void confirm(const host_port& hp) REDCOORD_EXCLUDES(mu) {
        detail::lock_guard lk(mu);
        engine->confirm(hp);
    }

    void report_failure(const host_port& hp) noexcept REDCOORD_EXCLUDES(mu) {
        try {
            detail::lock_guard lk(mu);
            engine->report_failure(hp, clock_type::now());
        } catch (...) {}
        cv.notify_all();
    }
};

sentinel_resolver::sentinel_resolver(endpoint service, sentinel_options opts)
    : impl_(std::make_shared<impl>()) {
    if (!service.is_sentinel())
        throw invalid_argument("sentinel_resolver needs a redis-sentinel:// endpoint");
    if (service.service.empty()) throw invalid_argument("sentinel endpoint without a service name");
    if (opts.query_timeout.count() <= 0)
        throw invalid_argument("sentinel_options::query_timeout must be > 0");
    if (opts.backoff_min.count() < 0 || opts.backoff_max < opts.backoff_min)
        throw invalid_argument("sentinel_options: need 0 <= backoff_min <= backoff_max");
    auto& m = *impl_;
    m.owner = this;
    m.ep = std::move(service);
    m.opts = opts;
    if (!m.opts.notifications.runtime) m.opts.notifications.runtime = opts.runtime;
    for (auto& hp : m.ep.sentinels) {
        endpoint s;
        s.host = hp.host;
        s.port = hp.port;
        s.user = m.ep.sentinel_user;
        s.password = m.ep.sentinel_password;
        s.tls = m.ep.tls;
        s.connect_timeout = std::min(m.ep.connect_timeout, opts.query_timeout);
        s.command_timeout = opts.query_timeout;
        s.keepalive = m.ep.keepalive;
        m.sentinel_eps.push_back(s);
        m.pools.push_back(std::make_unique<connection_pool>(
            s, pool_options{.max_size = 4, .borrow_timeout = opts.query_timeout}, opts.runtime));
    }
    detail::lock_guard lk(m.mu);  // not shared yet; taken for the analysis
    m.engine.emplace(detail::resolve_timing{opts.backoff_min, opts.backoff_max}, m.ep.sentinels,
                     m.ep.to_string(), m.ep.service);
}

sentinel_resolver::~sentinel_resolver() {
    // Join the notification readers first: their handlers use this object.
    std::vector<std::unique_ptr<subscriber>> subs;
    {
        detail::lock_guard lk(impl_->mu);
        subs.swap(impl_->subs);
    }
    subs.clear();
}

host_port sentinel_resolver::master(milliseconds wait) { return impl_->master(wait); }
host_port sentinel_resolver::master() { return impl_->master(impl_->ep.connect_timeout); }

std::optional<host_port> sentinel_resolver::cached_master() const {
    detail::lock_guard lk(impl_->mu);
    return impl_->engine->current();
}

void sentinel_resolver::report_failure(const host_port& addr) noexcept {
    impl_->report_failure(addr);
}

connection sentinel_resolver::connect(milliseconds timeout) {
    auto& m = *impl_;
    const auto deadline = deadline_after(timeout);
    std::string last;
    bool unreachable = false;  // the last failure was "no sentinel answered"
    for (;;) {
        auto remaining = std::chrono::duration_cast<milliseconds>(deadline - clock_type::now());
        if (remaining.count() <= 0) break;
        host_port addr;
        try {
            addr = m.master(remaining);
        } catch (const unknown_service&) {
            throw;
        } catch (const auth_error&) {
            throw;
        } catch (const sentinel_unreachable& e) {
            last = e.what();
            unreachable = true;
            continue;
        } catch (const timeout_error&) {
            continue;  // master() waited out the backoff up to the deadline; keep the cause
        } catch (const error& e) {
            last = e.what();
            unreachable = false;
            continue;  // master() spaces the rounds by the backoff and honours the deadline
        }
        unreachable = false;
        try {
            auto c = detail::open_connection(m.ep.with_address(addr),
                                             std::min(remaining, m.ep.connect_timeout));
            const auto role = probe_role(c, deadline);
            if (m.accept(addr, role)) {
                m.confirm(addr);
                return c;
            }
            last = addr_text(addr) +
                   (role ? " is not a master (its role is " + *role + ")"
                         : " could not be asked its role (ROLE, HELLO and INFO refused to this "
                           "user) and no majority of sentinels named it");
        } catch (const auth_error&) {
            throw;  // the data nodes refused the endpoint's credentials: retrying cannot help
        } catch (const error& e) {
            last = e.what();
        }
        m.report_failure(addr);
    }
    std::string msg = "no master of " + m.ep.to_string() + " reachable within " +
                      std::to_string(timeout.count()) + " ms" +
                      (last.empty() ? std::string() : ": " + last);
    if (unreachable) throw sentinel_unreachable(msg);
    throw sentinel_error(msg);
}

std::vector<host_port> sentinel_resolver::replicas() {
    auto& m = *impl_;
    int unknown = 0, auth = 0;
    std::string last;
    for (std::size_t i = 0; i < m.pools.size(); ++i) {
        try {
            auto r = m.pools[i]->command({"SENTINEL", "replicas", m.ep.service});
            return detail::usable_replicas(detail::parse_replica_entries(r));
        } catch (const auth_error& e) {
            ++auth;
            last = e.what();
        } catch (const reply_error& e) {
            std::string t = e.what();
            if (t.find("No such master") != std::string::npos)
                ++unknown;
            else if (detail::is_auth_text(t))
                ++auth;
            last = t;
        } catch (const error& e) {
            last = e.what();
        }
    }
    if (auth > 0)
        throw auth_error("sentinels of " + m.ep.to_string() +
                         " refused authentication (check the sentinel password)");
    if (unknown > 0)
        throw unknown_service("no sentinel of " + m.ep.to_string() + " monitors a service named '" +
                              m.ep.service + "'");
    throw sentinel_unreachable("no sentinel of " + m.ep.to_string() +
                               " answered SENTINEL replicas" +
                               (last.empty() ? std::string() : " (last: " + last + ")"));
}

std::uint64_t sentinel_resolver::rounds() const {
    detail::lock_guard lk(impl_->mu);
    return impl_->engine->rounds();
}

std::uint64_t sentinel_resolver::switches() const {
    detail::lock_guard lk(impl_->mu);
    return impl_->engine->switches();
}

const endpoint& sentinel_resolver::where() const noexcept { return impl_->ep; }

// By value in the public API, as every on_*() of redcoord; Boost.Signals2's connect() copies
// from a const reference, so there is nothing to move.
// NOLINTNEXTLINE(performance-unnecessary-value-param): by value in the public API (see above)
boost::signals2::scoped_connection sentinel_resolver::on_master_changed(master_changed_slot slot) {
    return master_changed_.connect(slot);
}

}  // namespace redcoord
