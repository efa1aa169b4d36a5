#include "connection_impl.hpp"
#include "pool_access.hpp"
#include "runtime_services.hpp"
#include "slot_router.hpp"

#include <redcoord/core/deadline.hpp>
#include <redcoord/core/detail/master_source.hpp>
#include <redcoord/core/detail/observe.hpp>
#include <redcoord/core/detail/pool_hooks.hpp>
#include <redcoord/core/detail/refusal.hpp>
#include <redcoord/core/detail/thread_name.hpp>
#include <redcoord/core/hash_slot.hpp>
#include <redcoord/core/pool.hpp>

#include <algorithm>
#include <limits>
#include <memory>
#include <optional>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

namespace redcoord {

struct connection_pool::state {
    std::shared_ptr<redcoord::runtime> rt;
    // Observability: a connection broke (poisoned, or a connect failed) since the last one
    // opened, so the next one opened is a reconnect (counted and logged). Under mu.
    bool broken = false;
    // When a connection last broke or a connect failed (under mu). borrow() checks an idle
    // connection last used before then (PING) before handing it out: a restarted server
    // leaves every idle connection dead, and each would otherwise fail one caller's command.
    std::chrono::steady_clock::time_point broke_at{};
    detail::counter_handle reconnects;  // redcoord_reconnects_total{link="pool"}; empty when off
    // redcoord_pool_in_use{endpoint}, sampled at scrape: the collector adds this pool's change
    // since its last sample, so pools of one endpoint (several runtimes) sum up.
    detail::gauge_handle in_use_gauge;
    double in_use_reported = 0;  // under mu
    std::shared_ptr<void> collector;

    // With mu held, when a connection broke or a connect failed: true the first time since
    // the last (re)connect, when it is worth a record. A failure before any connection was
    // ever opened (a server not up yet) is no break: the first open is no reconnect.
    bool broke_locked() {
        broke_at = std::chrono::steady_clock::now();
        if (counters.created == 0) return false;
        return !std::exchange(broken, true);
    }
    bool mark_broken() {
        std::lock_guard g(mu);
        return broke_locked();
    }
    // With mu held, when a connection was opened: true when it is a reconnect.
    bool opened_locked() {
        ++counters.created;
        return std::exchange(broken, false);
    }
    void log_broken() const noexcept {
        detail::runtime_services(*rt).emit(log_level::warning, "pool",
                                           "connection to the server lost",
                                           {{"endpoint", ep.to_string()}});
    }
    void log_reconnected() const noexcept {
        reconnects.inc();
        detail::runtime_services(*rt).emit(log_level::info, "pool", "reconnected",
                                           {{"endpoint", ep.to_string()}});
    }
    endpoint ep;
    pool_options opts;
    mutable std::mutex mu;
    std::condition_variable cv;
    std::deque<std::unique_ptr<connection>> idle;
    std::size_t open = 0;     // idle + leased + being opened
    std::size_t blocked = 0;  // borrowers waiting for a connection to come back
    pool_stats counters;
    std::function<std::unique_ptr<connection>(std::chrono::milliseconds)> connector;
    // Fan-out reconnect backoff after a failed connect (see connect_bounded).
    std::chrono::milliseconds backoff{0};
    std::chrono::steady_clock::time_point retry_after{};
    bool last_connect_timed_out = false;  // the failure behind retry_after was a timeout
    // Fan-out's background dial (see borrow_bounded): at most one per pool, given the whole
    // connect_timeout however short the round that started it, so a connect + handshake that
    // outlasts a round lands in `idle` for the next round instead of being thrown away. Joined
    // by ~connection_pool (it only touches this state, which the pool outlives it by).
    std::thread dialer;
    bool dialing = false;
    std::chrono::steady_clock::time_point dial_started{};
    std::uint64_t dials_done = 0;  // bumped when a background dial ends, either way
    std::string dial_error;        // why the last background dial failed, else empty

    // The background dial's body: a new connection goes to `idle` (the slot was booked by
    // whoever started the dial), a failure frees the slot and starts the dial backoff.
    void dial_in_background() noexcept {
        std::unique_ptr<connection> c;
        std::string why;
        bool timed_out = false;
        try {
            c = connect(ep.connect_timeout);
        } catch (const timeout_error& e) {
            why = e.what();
            timed_out = true;
        } catch (const std::exception& e) {
            why = e.what();
        } catch (...) {
            why = "unknown failure while connecting";
        }
        if (!c) {
            if (why.empty()) why = "connector returned no connection";
            connect_failed(timed_out);
        }
        std::unique_lock g(mu);
        bool again = false;
        if (c) {
            again = opened_locked();
            --counters.in_use;
            backoff = std::chrono::milliseconds(0);
            idle.push_back(std::move(c));
        }
        dial_error = std::move(why);
        dialing = false;
        ++dials_done;
        cv.notify_all();
        g.unlock();
        if (again) log_reconnected();
    }

    // Books a failed connect_bounded(): the slot is freed and the next dial backs off.
    void connect_failed(bool timed_out) {
        std::unique_lock g(mu);
        const bool first = broke_locked();
        --open;
        --counters.in_use;
        ++counters.errors;
        backoff =
            std::clamp(backoff * 2, std::chrono::milliseconds(10), std::chrono::milliseconds(500));
        retry_after = std::chrono::steady_clock::now() + backoff;
        last_connect_timed_out = timed_out;
        cv.notify_one();
        g.unlock();
        if (first) log_broken();
    }

    // Set for a Sentinel endpoint: new connections go to the master it resolves (`resolver`
    // is `sentinel` as the pool uses it).
    std::shared_ptr<sentinel_resolver> sentinel;
    std::shared_ptr<detail::master_source> resolver;
    // Set for a Cluster endpoint: every lease comes from its node pools instead of this state.
    std::shared_ptr<detail::slot_router> cluster;
    // Set on a cluster router's node pool: told of each connection that broke.
    std::function<void()> on_broken;

    std::unique_ptr<connection> connect(std::chrono::milliseconds connect_timeout) {
        if (connector) return connector(connect_timeout);
        if (resolver) return std::make_unique<connection>(resolver->connect(connect_timeout));
        return std::make_unique<connection>(detail::open_connection(ep, connect_timeout));
    }

    // With Sentinel, a connection to anything but the current master is stale (failover).
    bool stale(const connection& c) const {
        if (!resolver) return false;
        auto m = resolver->cached_master();
        return m && (c.where().host != m->host || c.where().port != m->port);
    }

    static bool owes_replies(connection& c) noexcept {
        return !detail::connection_access::get(c).owed.empty();
    }

    void give_back(std::unique_ptr<connection> c) noexcept {
        // A broken link may mean the master died: let the resolver ask the sentinels again.
        if (resolver && c->poisoned()) resolver->report_failure({c->where().host, c->where().port});
        if (on_broken && c->poisoned()) on_broken();
        if (c->poisoned() && mark_broken()) log_broken();
        bool drop = c->poisoned();
        if (!drop) {
            try {
                drop = stale(*c);
            } catch (...) {
                drop = true;
            }
        }
        std::lock_guard lk(mu);
        --counters.in_use;
        // Beyond max_idle a returned connection closes, unless a borrower waits for it: after
        // a burst (a thousand waiters retrying at once) the pool shrinks back by itself.
        // A connection that still owes replies (a detached release, possibly to be re-run as
        // EVAL on NOSCRIPT) is never trimmed: closing it could lose that command.
        if (!drop && idle.size() >= opts.max_idle && blocked == 0 && !owes_replies(*c)) {
            drop = true;
            ++counters.trimmed;
        }
        if (drop) {
            --open;
            ++counters.discarded;
        } else {
            idle.push_back(std::move(c));
        }
        cv.notify_one();
    }
};

pooled_connection::pooled_connection(std::shared_ptr<void> state,
                                     std::unique_ptr<connection> c) noexcept
    : state_(std::move(state)), conn_(std::move(c)) {}

pooled_connection::pooled_connection(pooled_connection&& o) noexcept
    : state_(std::move(o.state_)), conn_(std::move(o.conn_)) {}

pooled_connection& pooled_connection::operator=(pooled_connection&& o) noexcept {
    if (this != &o) {
        reset();
        state_ = std::move(o.state_);
        conn_ = std::move(o.conn_);
    }
    return *this;
}

pooled_connection::~pooled_connection() { reset(); }

void pooled_connection::reset() noexcept {
    if (conn_ && state_)
        static_cast<connection_pool::state*>(state_.get())->give_back(std::move(conn_));
    conn_.reset();
    state_.reset();
}

connection_pool::connection_pool(endpoint ep, pool_options opts,
                                 std::shared_ptr<redcoord::runtime> rt)
    : state_(std::make_shared<state>()) {
    if (opts.max_size == 0) throw invalid_argument("pool_options::max_size must be >= 1");
    if (opts.borrow_timeout.count() < 0)
        throw invalid_argument("pool_options::borrow_timeout must be >= 0");
    state_->rt = rt ? std::move(rt) : detail::runtime_services::default_runtime();
    if (ep.is_sentinel()) {
        auto b = detail::runtime_services(*state_->rt).sentinel(ep);
        state_->sentinel = std::move(b.resolver);
        state_->resolver = std::move(b.source);
    }
    state_->ep = std::move(ep);
    state_->opts = opts;
    if (state_->ep.is_cluster())
        state_->cluster = detail::runtime_services::cluster(state_->ep, opts, state_->rt);
    const detail::metrics_scope ms(*state_->rt);
    // A cluster pool's connections are its node pools', which report per node.
    if (ms && !state_->cluster) {
        const auto where = state_->ep.to_string();
        state_->reconnects =
            ms.counter(detail::metric::reconnects_total, {{"endpoint", where}, {"link", "pool"}});
        state_->in_use_gauge = ms.gauge(detail::metric::pool_in_use, {{"endpoint", where}});
        state_->collector = ms.collector([s = state_.get()] {
            std::lock_guard g(s->mu);
            const auto now = static_cast<double>(s->counters.in_use);
            s->in_use_gauge.add(now - std::exchange(s->in_use_reported, now));
        });
    }
    if (state_->resolver) {
        // One line per failover this pool follows (its next connections go to the new master).
        failover_ = state_->resolver->on_master_changed(
            [rt = std::weak_ptr(state_->rt), service = state_->ep.service](const host_port& from,
                                                                           const host_port& to) {
                if (auto r = rt.lock())
                    detail::runtime_services(*r).emit(
                        log_level::warning, "sentinel", "failover followed",
                        {{"service", service},
                         {"from", from.host + ":" + std::to_string(from.port)},
                         {"to", to.host + ":" + std::to_string(to.port)}});
            });
    }
}

const std::shared_ptr<redcoord::runtime>& connection_pool::runtime() const noexcept {
    return state_->rt;
}

connection_pool::~connection_pool() {
    failover_.disconnect();
    if (state_->collector) {
        state_->collector.reset();  // waits for a scrape in progress
        std::lock_guard g(state_->mu);
        state_->in_use_gauge.add(-std::exchange(state_->in_use_reported, 0.0));
    }
    std::thread dialer;
    {
        std::lock_guard g(state_->mu);
        dialer = std::move(state_->dialer);
    }
    // Bounded by the endpoint's connect_timeout; the dial touches only the state.
    if (dialer.joinable()) dialer.join();
    clear_idle();
}

namespace {
// The least time a borrow gives one health check or connect, whatever is left of its wait.
constexpr std::chrono::milliseconds borrow_step_minimum{100};
}  // namespace

pooled_connection connection_pool::borrow() {
    return borrow_within(state_->opts.borrow_timeout, false);
}

pooled_connection connection_pool::borrow_for(std::string_view key) {
    if (state_->cluster)
        return state_->cluster->borrow(hash_slot(key), state_->opts.borrow_timeout);
    return borrow();
}

pooled_connection connection_pool::borrow_for(std::string_view key,
                                              std::chrono::milliseconds wait) {
    if (state_->cluster) return state_->cluster->borrow(hash_slot(key), wait);
    return borrow(wait);
}

pooled_connection connection_pool::borrow(std::chrono::milliseconds wait) {
    return borrow_within(wait, true);
}

pooled_connection connection_pool::borrow_within(std::chrono::milliseconds wait, bool budget) {
    auto& s = *state_;
    if (s.cluster) return s.cluster->borrow(std::nullopt, wait);
    const auto deadline = deadline_after(wait);
    // The health checks and the connect share a timed caller's budget too (each still gets a
    // short minimum), so it returns near its budget however many idle connections a stalled
    // server left behind. A zero wait only refuses to queue for a free slot: its check and
    // connect keep the endpoint's timeouts (a best-effort leave or release must get through).
    auto within = [&](std::chrono::milliseconds cap) {
        if (!budget || wait.count() <= 0) return cap;
        const auto left = std::max(std::chrono::ceil<std::chrono::milliseconds>(
                                       deadline - std::chrono::steady_clock::now()),
                                   borrow_step_minimum);
        return cap.count() > 0 ? std::min(cap, left) : left;
    };
    for (;;) {
        std::unique_lock lk(s.mu);
        bool waited = false;
        while (s.idle.empty() && s.open >= s.opts.max_size) {
            if (!waited) {
                ++s.counters.waits;
                waited = true;
            }
            ++s.blocked;
            const auto status = s.cv.wait_until(lk, deadline);
            --s.blocked;
            if (status == std::cv_status::timeout && s.idle.empty() && s.open >= s.opts.max_size) {
                ++s.counters.errors;
                throw pool_exhausted("no free connection to " + s.ep.to_string() + " within " +
                                     std::to_string(wait.count()) + " ms (pool size " +
                                     std::to_string(s.opts.max_size) + ")");
            }
        }
        if (!s.idle.empty()) {
            // Newest first: warm sockets, and old ones age out through the health check.
            auto c = std::move(s.idle.back());
            s.idle.pop_back();
            ++s.counters.in_use;
            const bool suspect = c->last_used() <= s.broke_at;
            lk.unlock();
            auto age = std::chrono::steady_clock::now() - c->last_used();
            if (s.stale(*c)) {
                std::lock_guard g(s.mu);
                --s.counters.in_use;
                --s.open;
                ++s.counters.discarded;
                continue;
            }
            if (suspect || age >= s.opts.idle_check_after) {
                try {
                    const std::string_view ping[] = {"PING"};
                    c->command_for(within(s.ep.command_timeout), ping);
                } catch (const error&) {
                    bool first = false;
                    std::vector<std::unique_ptr<connection>> dropped;
                    {
                        std::lock_guard g(s.mu);
                        first = s.broke_locked();  // the server went away while it idled
                        --s.counters.in_use;
                        --s.open;
                        ++s.counters.discarded;
                        // Idle as long as this one or longer: as doomed; checking each would
                        // cost a check timeout apiece.
                        for (auto it = s.idle.begin(); it != s.idle.end();) {
                            if ((*it)->last_used() <= c->last_used()) {
                                dropped.push_back(std::move(*it));
                                it = s.idle.erase(it);
                                --s.open;
                                ++s.counters.discarded;
                            } else {
                                ++it;
                            }
                        }
                        if (!dropped.empty()) s.cv.notify_all();
                    }
                    if (first) s.log_broken();
                    continue;  // `dropped` closes outside the lock
                }
            }
            return pooled_connection(state_, std::move(c));
        }
        ++s.open;
        ++s.counters.in_use;
        lk.unlock();
        try {
            auto c = s.connect(within(s.ep.connect_timeout));
            bool again = false;
            {
                std::lock_guard g(s.mu);
                again = s.opened_locked();
            }
            if (again) s.log_reconnected();
            return pooled_connection(state_, std::move(c));
        } catch (...) {
            bool first = false;
            {
                std::lock_guard g(s.mu);
                first = s.broke_locked();
                --s.open;
                --s.counters.in_use;
                ++s.counters.errors;
                s.cv.notify_one();
            }
            if (first) s.log_broken();
            throw;
        }
    }
}

pooled_connection connection_pool::take_idle() noexcept {
    auto& s = *state_;
    if (s.cluster) return {};  // borrow_bounded() routes
    std::unique_ptr<connection> c;
    std::vector<std::unique_ptr<connection>> gone;  // closed outside the lock
    {
        std::lock_guard lk(s.mu);
        while (!s.idle.empty()) {
            c = std::move(s.idle.back());
            s.idle.pop_back();
            bool st = true;
            try {
                st = s.stale(*c);
            } catch (...) {}
            if (!st) break;
            --s.open;
            ++s.counters.discarded;
            gone.push_back(std::move(c));
        }
        if (!c) return {};
        ++s.counters.in_use;
    }
    return pooled_connection(state_, std::move(c));
}

pooled_connection connection_pool::borrow_bounded(std::chrono::milliseconds within,
                                                  std::string_view route_key) {
    auto& s = *state_;
    if (s.cluster)
        return s.cluster->borrow(
            route_key.empty() ? std::nullopt : std::optional(hash_slot(route_key)), within);
    const auto start = std::chrono::steady_clock::now();
    const auto wait_until = deadline_after(std::min(within, s.opts.borrow_timeout), start);
    const auto dial_until = deadline_after(within, start);
    std::unique_lock lk(s.mu);
    bool waited = false;
    // The background dial this call waits for ends when dials_done passes this (no_dial: none).
    // A plain value: GCC at -O1 reports a std::optional here as maybe uninitialised (a false
    // positive that fails a -Werror build).
    constexpr std::uint64_t no_dial = std::numeric_limits<std::uint64_t>::max();
    std::uint64_t waiting_for = no_dial;
    for (;;) {
        // An idle connection (returned by another thread, or our dial's) serves at once,
        // however the dial backoff stands.
        while (!s.idle.empty()) {
            auto c = std::move(s.idle.back());
            s.idle.pop_back();
            bool st = true;
            try {
                st = s.stale(*c);
            } catch (...) {}
            if (!st) {
                ++s.counters.in_use;
                lk.unlock();
                return pooled_connection(state_, std::move(c));
            }
            --s.open;
            ++s.counters.discarded;
            lk.unlock();
            c.reset();  // closed outside the lock
            lk.lock();
        }
        if (waiting_for != no_dial && s.dials_done != waiting_for) {
            // The dial we waited for ended without leaving us a connection.
            if (!s.dial_error.empty()) {
                if (s.last_connect_timed_out) throw timeout_error(s.dial_error);
                throw connection_error(s.dial_error);
            }
            waiting_for = no_dial;  // it connected, but another thread took it first: go again
            continue;
        }
        if (s.dialing) {
            // A connect is under way (ours or another round's): wait for it until `within`
            // ends, then say "still connecting": the dial goes on and feeds the next round.
            // A dial already older than `within` has shown itself slow: waiting for it again
            // would make every round (a detached release included) pay the whole wait until
            // the connect_timeout ends, so it is waited for only up to that age.
            if (waiting_for == no_dial) waiting_for = s.dials_done;
            const auto until = std::min(dial_until, s.dial_started + (dial_until - start));
            if (s.cv.wait_until(lk, until) == std::cv_status::timeout && s.idle.empty() &&
                s.dialing)
                throw detail::still_connecting("still connecting to " + s.ep.to_string() +
                                               " (the connect goes on in the background, within " +
                                               std::to_string(s.ep.connect_timeout.count()) +
                                               " ms)");
            continue;
        }
        if (s.open >= s.opts.max_size) {
            // Every connection is leased: wait for one to come back rather than call the node down.
            if (!waited) ++s.counters.waits;
            waited = true;
            ++s.blocked;
            const auto status = s.cv.wait_until(lk, wait_until);
            --s.blocked;
            if (status == std::cv_status::timeout && s.idle.empty() && s.open >= s.opts.max_size &&
                !s.dialing) {
                ++s.counters.errors;
                throw pool_exhausted("no free connection to " + s.ep.to_string() + " (all " +
                                     std::to_string(s.opts.max_size) +
                                     " leased); nothing was sent");
            }
            continue;
        }
        const auto now = std::chrono::steady_clock::now();
        if (now < s.retry_after) {
            // Same kind as the failure behind it: a server that was only slow is not "down".
            // The last dial's own reason leads, so "Connection refused" or a refused password
            // is what the caller reads, whichever attempt it happened to make.
            const std::string retry =
                std::string(s.last_connect_timed_out ? "timed out" : "failed") +
                " recently, retrying in " +
                std::to_string(
                    std::chrono::duration_cast<std::chrono::milliseconds>(s.retry_after - now)
                        .count()) +
                " ms";
            const std::string why = s.dial_error.empty()
                                        ? "cannot connect to " + s.ep.to_string() + ": " + retry
                                        : s.dial_error + " (" + retry + ")";
            if (s.last_connect_timed_out) throw timeout_error(why);
            throw connection_error(why);
        }
        start_dial(lk);
        waiting_for = s.dials_done;
    }
}

void connection_pool::start_dial(std::unique_lock<std::mutex>& lk) {
    auto& s = *state_;
    // Dial in the background with the whole connect_timeout, not what is left of a round:
    // on a loaded host a connect + handshake can outlast a 50 ms round, and a dial cut short
    // would be retried, and cut short, on every round.
    std::thread done = std::move(s.dialer);  // an earlier dial, already finished (not dialing)
    ++s.open;
    ++s.counters.in_use;
    try {
        s.dialer = std::thread([st = &s] {
            detail::name_this_thread("rc-pool-dial");
            st->dial_in_background();
        });
    } catch (const std::system_error& e) {
        --s.open;
        --s.counters.in_use;
        s.dialer = std::move(done);
        throw connection_error("cannot start a connect thread for " + s.ep.to_string() + ": " +
                               e.what());
    }
    s.dialing = true;
    s.dial_started = std::chrono::steady_clock::now();
    if (done.joinable()) {
        lk.unlock();
        done.join();  // it has ended already: only its exit is waited for
        lk.lock();
    }
}

void connection_pool::prepare() noexcept {
    auto& s = *state_;
    if (s.cluster) return;
    std::unique_lock lk(s.mu);
    if (!s.idle.empty() || s.dialing || s.open >= s.opts.max_size ||
        std::chrono::steady_clock::now() < s.retry_after)
        return;
    try {
        start_dial(lk);
    } catch (...) {
        // Out of threads: borrow_bounded() reports it when the round gets there.
    }
}

void connection_pool::reply_error_seen(connection& c, const reply_error& e) noexcept {
    // READONLY: this address is a replica now (a demoted master). Its connections are useless
    // for writes, so none is reused: the next borrow connects afresh, to the master the
    // resolver asks the sentinels for, or to whatever the address leads to after a failover.
    if (std::string_view(e.what()).find("READONLY") == std::string_view::npos) return;
    if (state_->resolver) state_->resolver->report_failure({c.where().host, c.where().port});
    c.poison();
    clear_idle();
}

namespace {
template <class Argv>
reply pooled_command(connection_pool& p, const Argv& argv) {
    auto c = p.where().is_cluster() ? p.borrow_for(detail::routing_key(argv)) : p.borrow();
    try {
        return c->command(argv);
    } catch (const reply_error& e) {
        detail::pool_access::reply_error_seen(p, *c, e);
        throw;
    }
}
}  // namespace

reply connection_pool::command(std::initializer_list<std::string_view> argv) {
    return pooled_command(*this, argv);
}

reply connection_pool::command(const std::vector<std::string>& argv) {
    return pooled_command(*this, argv);
}

std::shared_ptr<sentinel_resolver> connection_pool::sentinel() const noexcept {
    return state_->sentinel;
}

void connection_pool::clear_idle() noexcept {
    if (state_->cluster) state_->cluster->clear_idle();
    std::deque<std::unique_ptr<connection>> gone;
    {
        std::lock_guard lk(state_->mu);
        gone.swap(state_->idle);
        state_->open -= gone.size();
        state_->counters.discarded += gone.size();
        state_->cv.notify_all();
    }
}

pool_stats connection_pool::stats() const {
    if (state_->cluster) return state_->cluster->stats();
    std::lock_guard lk(state_->mu);
    pool_stats st = state_->counters;
    st.idle = state_->idle.size();
    return st;
}

const endpoint& connection_pool::where() const noexcept { return state_->ep; }

std::shared_ptr<const cluster_map> connection_pool::slot_map() const {
    if (!state_->cluster) return nullptr;
    return state_->cluster->map();
}
const pool_options& connection_pool::options() const noexcept { return state_->opts; }

namespace detail {

void set_pool_connector(connection_pool& pool,
                        std::function<std::unique_ptr<connection>()> connector) {
    pool_access::set_connector(pool, std::move(connector));
}

std::shared_ptr<const cluster_map> pool_access::fresh_slot_map(connection_pool& p) {
    if (!p.state_->cluster) return nullptr;
    p.state_->cluster->refresh(true);
    return p.state_->cluster->map();
}

void pool_access::set_cluster_node(
    connection_pool& p,
    std::function<std::unique_ptr<connection>(std::chrono::milliseconds)> connector,
    std::function<void()> on_broken) {
    auto& s = *p.state_;
    std::lock_guard lk(s.mu);
    s.connector = std::move(connector);
    s.on_broken = std::move(on_broken);
}

std::string_view routing_key(std::span<const std::string_view> argv) noexcept {
    if (argv.size() < 2) return {};
    auto is = [&](std::string_view verb) { return same_command(argv[0], verb); };
    // EVAL script numkeys key...: the first key, if any.
    if (is("EVAL") || is("EVALSHA") || is("EVAL_RO") || is("EVALSHA_RO") || is("FCALL") ||
        is("FCALL_RO"))
        return argv.size() > 3 && argv[2] != "0" ? argv[3] : std::string_view{};
    return argv[1];
}

std::string_view routing_key(std::initializer_list<std::string_view> argv) noexcept {
    return routing_key(std::span<const std::string_view>(argv.begin(), argv.size()));
}

std::string_view routing_key(const std::vector<std::string>& argv) noexcept {
    if (argv.size() < 2) return {};
    std::string_view first[4];
    const std::size_t n = std::min<std::size_t>(argv.size(), 4);
    for (std::size_t i = 0; i < n; ++i) first[i] = argv[i];
    return routing_key(std::span<const std::string_view>(first, n));
}

void pool_access::set_connector(connection_pool& p,
                                std::function<std::unique_ptr<connection>()> connector) {
    auto& s = *p.state_;
    std::lock_guard lk(s.mu);
    if (connector)
        s.connector = [c = std::move(connector)](std::chrono::milliseconds) { return c(); };
    else
        s.connector = nullptr;
}

}  // namespace detail
}  // namespace redcoord
