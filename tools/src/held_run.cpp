#include "held_run.hpp"

#include "exit_codes.hpp"
#include "supervisor.hpp"

#include <redcoord/core/errors.hpp>

#include <algorithm>

namespace redcoord::cli {

using std::chrono::milliseconds;

void add_held_options(CLI::App& sub, held_args& a, const std::string& what) {
    sub.add_option("name", a.name, what + " name")->required();
    sub.add_option("command", a.command, "CMD ARGS... (after --)")->required();
    add_duration(sub, "--ttl", a.ttl, "Lease time (at least 200ms)");
    add_duration(sub, "--wait", a.wait_value,
                 "Give up (exit 124) when others keep it this long (default: wait forever); an "
                 "unreachable server is not waited out (exit 120)",
                 false);
    add_duration(sub, "--grace", a.grace, "Time between SIGTERM and SIGKILL when stopping CMD");
    sub.add_option("--label", a.label,
                   "Who holds it, as inspect and the dashboard show it (default <host>:<pid>; '' "
                   "for none; informative only)");
}

void check_held_ttl(const held_args& a) {
    if (a.ttl < min_lease)
        throw invalid_argument("--ttl must be at least " + format_duration(min_lease) +
                               " (the lock is extended every TTL/3 and CMD is stopped when "
                               "less than TTL/4 is left: shorter is lost before it is extended)");
}

int not_acquired(const context& ctx, const held_args& a) {
    print_note("lock '" + a.name + "' not acquired within " +
               format_duration(a.wait.value_or(forever)));
    emit_event(ctx, json_object().add("event", "not_acquired").add("name", a.name));
    return timed_out;
}

std::optional<lock_acquisition> acquire_sliced(const context& ctx, const held_args& a,
                                               held_lock& lock, signal_source& signals,
                                               int& status) {
    const auto deadline = std::chrono::steady_clock::now() + a.wait.value_or(forever);
    std::optional<lock_acquisition> got;
    for (; !got;) {
        const auto left =
            std::chrono::duration_cast<milliseconds>(deadline - std::chrono::steady_clock::now());
        got = lock.acquire(std::clamp(left, milliseconds(0), milliseconds(250)));
        if (got) break;
        if (auto sig = signals.wait_termination(milliseconds(0))) {
            status = signal_exit(*sig);
            return std::nullopt;
        }
        if (left <= milliseconds(0)) {
            status = not_acquired(ctx, a);
            return std::nullopt;
        }
    }
    if (auto sig = signals.wait_termination(milliseconds(0))) {
        lock.release();
        status = signal_exit(*sig);
        return std::nullopt;
    }
    return got;
}

int run_held(const context& ctx, const held_args& a, held_lock& lock, const lock_acquisition& got,
             signal_source& signals, const wakeup& wake,
             const std::function<void(json_object&)>& describe, std::vector<std::string> env) {
    auto acquired = json_object()
                        .add("event", "acquired")
                        .add("name", a.name)
                        .add("fencing_token", got.fencing_token);
    if (describe) describe(acquired);
    emit_event(ctx, acquired);

    env.insert(env.begin(), {"REDCOORD_LOCK=" + a.name,
                             "REDCOORD_FENCING_TOKEN=" + std::to_string(got.fencing_token)});
    supervise_result r;
    try {
        supervise_options so;
        so.grace = a.grace;
        so.early_window = std::min(a.grace, a.ttl / 4);
        r = supervise(
            a.command, std::move(env), &signals, wake,
            [&] {
                hold_state st;
                st.lost = lock.lost();
                if (auto c = lock.current())
                    st.valid_until = c->valid_until;
                else
                    st.lost = true;
                return st;
            },
            so);
    } catch (const exec_failure& e) {
        try {
            lock.release();
        } catch (...) {}
        print_note(e.what());
        return e.code();
    }

    bool released = false;
    try {
        released = lock.release();
    } catch (const std::exception& e) {
        print_note(std::string("release of lock '") + a.name + "' failed: " + e.what());
    }
    switch (r.reason) {
        case stop_reason::exited:
            emit_event(ctx, json_object()
                                .add("event", "released")
                                .add("name", a.name)
                                .add("status", r.status)
                                .add("released", released));
            return r.status;
        case stop_reason::lost:
            print_note("lock '" + a.name + "' lost; CMD was stopped (its status " +
                       std::to_string(r.status) + ")");
            emit_event(
                ctx,
                json_object().add("event", "lost").add("name", a.name).add("status", r.status));
            return lost;
        case stop_reason::signal: return interrupted_exit(ctx, a.name, r.signo, r.status);
    }
    return internal;
}

}  // namespace redcoord::cli
