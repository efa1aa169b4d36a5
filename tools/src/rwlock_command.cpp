// `redcoord rwlock NAME --read|--write [--ttl D] [--wait D] [--grace D] -- CMD ARGS...`
//
// Runs CMD while holding a share (--read) or the exclusive hold (--write) of an rw_lock, with
// the same supervision as `lock`: the watchdog extends the lease every ttl/3, CMD's process
// group is stopped when the hold is lost or its validity is about to run out (by the deadline
// reaper if redcoord itself is paused), and the hold is released when CMD exits.
#include "context.hpp"
#include "exit_codes.hpp"
#include "held_run.hpp"

#include <redcoord/core/pool.hpp>
#include <redcoord/limit/rw_lock.hpp>

#include <memory>

namespace redcoord::cli {
namespace {

using std::chrono::milliseconds;

struct rwlock_args : held_args {
    bool read = false;
    bool write = false;
};

// One hold of an rw_lock behind held_lock's face.
class held_rw : public held_lock {
public:
    held_rw(connection_pool& pool, std::string name, rw_lock_options o, bool write)
        : rw_(pool, std::move(name), std::move(o)), write_(write) {}
    std::optional<lock_acquisition> acquire(milliseconds wait) override {
        if (!(write_ ? rw_.try_lock_for(wait) : rw_.try_lock_shared_for(wait))) return std::nullopt;
        return current();
    }
    bool release() override {
        if (!held()) return false;
        const bool ok = !rw_.lost();
        if (write_)
            rw_.unlock();
        else
            rw_.unlock_shared();
        return ok;
    }
    bool lost() const override { return rw_.lost(); }
    std::optional<lock_acquisition> current() const override {
        if (!held()) return std::nullopt;
        return lock_acquisition{"", rw_.valid_until(),
                                write_ ? rw_.fencing_token() : rw_.shared_fencing_token()};
    }
    boost::signals2::scoped_connection on_lost(std::function<void()> f) override {
        return rw_.on_lost([f = std::move(f)](const std::string&) { f(); });
    }

private:
    bool held() const { return write_ ? rw_.owns_lock() : rw_.shared_count() > 0; }
    rw_lock rw_;
    bool write_;
};

int run_rwlock(context& ctx, const rwlock_args& a) {
    check_held_ttl(a);
    signal_source signals;
    wakeup wake;
    connection_pool pool(ctx.single_endpoint("rwlock"));
    // A server that accepts connections but never answers must end the run, not be retried.
    (void)pool.borrow();
    rw_lock_options o;
    o.timing.ttl = a.ttl;
    o.watchdog = true;
    o.prefix = ctx.opts.prefix;
    o.label = a.label;
    held_rw lock(pool, a.name, o, a.write);
    const auto lost_slot = lock.on_lost([&wake] { wake.notify(); });
    int status = 0;
    const auto got = acquire_sliced(ctx, a, lock, signals, status);
    if (!got) return status;
    const std::string mode = a.write ? "write" : "read";
    return run_held(ctx, a, lock, *got, signals, wake,
                    [&mode](json_object& e) { e.add("mode", mode); },
                    {"REDCOORD_LOCK_MODE=" + mode});
}

}  // namespace

void add_rwlock_command(CLI::App& app, context& ctx) {
    auto a = std::make_shared<rwlock_args>();
    auto* sub = app.add_subcommand(
        "rwlock", "Run CMD while holding a read-write lock: a share (--read) or it all (--write)");
    sub->footer(
        "Many --read runs may hold NAME at once, or one --write run. A waiting writer stops new\n"
        "readers (a writer's intent; it lapses within about a second if the writer dies), so\n"
        "readers cannot starve it. Each run's hold is its own lease, extended every TTL/3 while\n"
        "CMD runs and released when CMD exits; a dead run's hold returns after --ttl.\n"
        "Supervision, exit codes and events are those of 'lock': if the hold is lost, or its\n"
        "validity comes within min(--grace, TTL/4) without an extension, CMD's group gets\n"
        "SIGTERM, then SIGKILL after --grace, and redcoord exits 125. CMD sees REDCOORD_LOCK,\n"
        "REDCOORD_LOCK_MODE (read, write), REDCOORD_FENCING_TOKEN and REDCOORD_DEADLINE_MS.\n"
        "One server only (a URL of Sentinel or Cluster counts as one).");
    add_held_options(*sub, *a, "Read-write lock");
    auto* read = sub->add_flag("--read", a->read, "Hold a share (many readers at once)");
    auto* write = sub->add_flag("--write", a->write, "Hold it exclusively (one writer)");
    read->excludes(write);
    sub->callback([a, &ctx, sub] {
        if (!a->read && !a->write) throw CLI::RequiredError("--read or --write");
        if (sub->count("--wait") > 0) a->wait = a->wait_value;
        ctx.run = [a, &ctx] { return run_rwlock(ctx, *a); };
    });
}

}  // namespace redcoord::cli
