// `redcoord lock NAME [--fair | -n N] [--ttl D] [--wait D] [--grace D] -- CMD ARGS...`
//
// Runs CMD while holding the lock: one server -> distributed_lock (fair_lock with --fair: runs
// get the lock in the order they asked; with -n N one of N permits of a semaphore, consul's
// `lock -n`), several -> redlock (--fair and -n are then usage errors). The
// watchdog extends the lock every ttl/3; CMD's process group is stopped when the lock is lost
// or its validity is about to run out (by the deadline reaper if redcoord itself is paused),
// and the lock is released when CMD exits.
#include "context.hpp"
#include "exit_codes.hpp"
#include "held_run.hpp"
#include "metrics_listen.hpp"
#include "supervisor.hpp"

#include <redcoord/core/pool.hpp>
#include <redcoord/limit/semaphore.hpp>
#include <redcoord/lock/distributed_lock.hpp>
#include <redcoord/lock/fair_lock.hpp>
#include <redcoord/lock/redlock.hpp>

#include <algorithm>
#include <future>
#include <limits>
#include <memory>
#include <stop_token>

namespace redcoord::cli {
namespace {

using std::chrono::milliseconds;

struct lock_args : held_args {
    bool fair = false;
    std::uint64_t permits = 0;  // -n: 0 means a lock, N a semaphore of N permits
    std::string metrics_listen;
};

// distributed_lock, fair_lock and redlock behind held_lock's face.
template <class Lock>
class held_lock_of : public held_lock {
public:
    template <class... A>
    explicit held_lock_of(A&&... a) : lock_(std::forward<A>(a)...) {}
    std::optional<lock_acquisition> acquire(milliseconds wait) override {
        return lock_.acquire(wait);
    }
    bool release() override { return lock_.release(); }
    bool lost() const override { return lock_.lost(); }
    std::optional<lock_acquisition> current() const override { return lock_.current(); }
    boost::signals2::scoped_connection on_lost(std::function<void()> f) override {
        return lock_.on_lost([f = std::move(f)](const std::string&) { f(); });
    }
    Lock& get() noexcept { return lock_; }

private:
    Lock lock_;
};

/// One permit of a semaphore behind the lock's face (`lock -n N`). Its loss is seen by the
/// supervisor's check (lost() every tick), so on_lost connects nothing.
class held_permit : public held_lock {
public:
    held_permit(connection_pool& pool, std::string name, semaphore_options o)
        : sem_(pool, std::move(name), std::move(o)) {}
    std::optional<lock_acquisition> acquire(milliseconds wait) override {
        auto p = sem_.try_acquire_for(1, wait);
        if (!p) return std::nullopt;
        permit_ = std::move(*p);
        return current();
    }
    bool release() override { return permit_.release(); }
    bool lost() const override { return permit_.lost(); }
    std::optional<lock_acquisition> current() const override {
        if (!permit_.held()) return std::nullopt;
        return lock_acquisition{permit_.token(), permit_.valid_until(), permit_.fencing_token()};
    }
    boost::signals2::scoped_connection on_lost(std::function<void()>) override { return {}; }

private:
    semaphore sem_;
    permit permit_;
};

int run_lock(context& ctx, const lock_args& a) {
    check_held_ttl(a);
    signal_source signals;
    wakeup wake;
    const auto eps = ctx.endpoints();
    const auto metrics = start_metrics_listen(ctx, a.metrics_listen, eps);
    if (a.fair && eps.size() != 1)
        throw invalid_argument(
            "'lock --fair' takes one server (the queue of a fair lock is one list on one server); "
            "got " +
            std::to_string(eps.size()) + ": drop --fair to use Redlock");
    if (a.permits > 0 && (a.fair || eps.size() != 1))
        throw invalid_argument(
            "'lock -n' takes one server and no --fair (a semaphore's holders "
            "are one sorted set on one server)");
    std::vector<std::unique_ptr<connection_pool>> pools;
    pools.reserve(eps.size());
    for (const auto& ep : eps) pools.push_back(std::make_unique<connection_pool>(ep));
    // An acquire whose I/O times out reports "not acquired", so a server that accepts
    // connections but never answers kept `lock` retrying silently forever. One server is asked
    // first (its handshake, bounded by connect_timeout); Redlock must tolerate a minority down,
    // and its quorum checks say when a majority is not answering.
    if (pools.size() == 1) (void)pools.front()->borrow();

    std::unique_ptr<held_lock> lock;
    fair_lock* fair = nullptr;  // the same object as `lock`, with --fair
    if (a.permits > 0) {
        semaphore_options o;
        o.permits = a.permits;
        o.timing.ttl = a.ttl;
        o.watchdog = true;
        o.prefix = ctx.opts.prefix;
        o.label = a.label;
        lock = std::make_unique<held_permit>(*pools.front(), a.name, o);
    } else if (a.fair) {
        fair_lock_options o;
        o.timing.ttl = a.ttl;
        o.watchdog = true;
        o.max_extensions = std::numeric_limits<std::size_t>::max();
        o.prefix = ctx.opts.prefix;
        o.label = a.label;
        auto l = std::make_unique<held_lock_of<fair_lock>>(*pools.front(), a.name, o);
        fair = &l->get();
        lock = std::move(l);
    } else if (pools.size() == 1) {
        lock_options o;
        o.timing.ttl = a.ttl;
        o.watchdog = true;
        o.max_extensions = std::numeric_limits<std::size_t>::max();
        o.prefix = ctx.opts.prefix;
        o.label = a.label;
        lock = std::make_unique<held_lock_of<distributed_lock>>(*pools.front(), a.name, o);
    } else {
        redlock_options o;
        o.timing.ttl = a.ttl;
        o.watchdog = true;
        o.max_extensions = std::numeric_limits<std::size_t>::max();
        o.prefix = ctx.opts.prefix;
        o.label = a.label;
        std::vector<connection_pool*> nodes;
        nodes.reserve(pools.size());
        for (auto& p : pools) nodes.push_back(p.get());
        lock = std::make_unique<held_lock_of<redlock>>(nodes, a.name, o);
    }
    const auto lost_slot = lock->on_lost([&wake] { wake.notify(); });

    // A fair lock waits in one call (each slice would re-queue it at the back) and is
    // stopped by the signal; the others acquire in slices (acquire_sliced).
    std::optional<lock_acquisition> got;
    int status = 0;
    if (fair) {
        const auto deadline = std::chrono::steady_clock::now() + a.wait.value_or(forever);
        std::stop_source stop;
        wakeup done;
        auto pending = std::async(std::launch::async, [&] {
            struct notify_on_exit {
                const wakeup& w;
                ~notify_on_exit() { w.notify(); }
            } n{done};
            return fair->acquire_until(deadline, stop.get_token());
        });
        while (pending.wait_for(milliseconds(0)) != std::future_status::ready) {
            if (auto sig = signals.wait_termination(milliseconds(1000), done.fd())) {
                stop.request_stop();
                if (pending.get()) lock->release();  // its last attempt may still have won
                return signal_exit(*sig);
            }
        }
        got = pending.get();
        if (!got) return not_acquired(ctx, a);
        if (auto sig = signals.wait_termination(milliseconds(0))) {
            lock->release();
            return signal_exit(*sig);
        }
    } else {
        got = acquire_sliced(ctx, a, *lock, signals, status);
        if (!got) return status;
    }
    const auto servers = static_cast<std::uint64_t>(pools.size());
    return run_held(ctx, a, *lock, *got, signals, wake,
                    [servers](json_object& e) { e.add("servers", servers); }, {});
}

}  // namespace

void add_lock_command(CLI::App& app, context& ctx) {
    auto a = std::make_shared<lock_args>();
    auto* sub = app.add_subcommand(
        "lock", "Run CMD while holding a distributed lock (Redlock with several --redis)");
    sub->footer(
        "CMD runs in its own process group. The lock is extended every TTL/3 while CMD runs and "
        "released\n"
        "when CMD exits; redcoord then exits with CMD's status. If the lock is lost, or its "
        "validity comes\n"
        "within min(--grace, TTL/4) without an extension, CMD's group gets SIGTERM, then SIGKILL "
        "after\n"
        "--grace (at the latest when the validity ends), and redcoord exits 125.\n"
        "A reaper process started before CMD enforces the same deadline while redcoord is paused "
        "or\n"
        "stuck, and stops CMD at once if redcoord dies. CMD sees REDCOORD_LOCK, "
        "REDCOORD_FENCING_TOKEN and\n"
        "REDCOORD_DEADLINE_MS (validity left at its start). With --json, events are JSON lines on "
        "stderr\n"
        "(never waited for: dropped and counted when nobody reads them).\n"
        "With --fair (one server only) runs get the lock strictly in the order they asked for it "
        "(a FIFO\n"
        "queue in Redis; a waiter that dies is skipped within a second).\n"
        "With -n N (one server only) up to N runs hold the name at once, each its own permit of "
        "a\n"
        "semaphore (a lease extended every TTL/3; a dead run's permit returns after --ttl).\n"
        "A server that refuses the connection, the password or a command ends 'lock' at once (exit "
        "120,\n"
        "121, 122; with Redlock: too few servers for a majority), one that does not answer after "
        "its\n"
        "connect or command timeout: outages are not waited out, even with --wait.");
    add_held_options(*sub, *a, "Lock (resource)");
    sub->add_flag("--fair", a->fair, "Grant in request order (fair_lock; one server only)");
    sub->add_option("-n,--permits", a->permits,
                    "Hold one of N permits of a semaphore instead of a lock (N runs at once; one "
                    "server only)")
        ->check(CLI::PositiveNumber);
    add_metrics_listen(*sub, a->metrics_listen);
    sub->callback([a, &ctx, sub] {
        if (sub->count("--wait") > 0) a->wait = a->wait_value;
        ctx.run = [a, &ctx] { return run_lock(ctx, *a); };
    });
}

}  // namespace redcoord::cli
