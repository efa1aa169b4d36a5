#include "inspect_limit.hpp"

#include "limit_options.hpp"

#include <redcoord/core/errors.hpp>
#include <redcoord/limit/inspect.hpp>
#include <redcoord/limit/rate_limiter.hpp>

#include <vector>

namespace redcoord::cli {
namespace {

using std::chrono::milliseconds;

std::string lease_json(const lease_view& v) {
    return json_object()
        .add("holder", v.holder)
        .add("label", v.label)
        .add("count", v.count)
        .add("ttl_ms", static_cast<std::int64_t>(v.ttl_left.count()))
        .str();
}

std::string leases_json(const std::vector<lease_view>& vs) {
    std::vector<std::string> items;
    items.reserve(vs.size());
    for (const auto& v : vs) items.push_back(lease_json(v));
    return json_array(items);
}

json_object& add_counter(json_object& o, const std::optional<std::uint64_t>& c) {
    return c ? o.add("fencing_counter", *c) : o.add_raw("fencing_counter", "null");
}

std::string counter_text(const std::optional<std::uint64_t>& c) {
    return c ? std::to_string(*c) : "-";
}

std::string lease_text(const lease_view& v) {
    return v.holder + (v.label.empty() ? "" : " " + v.label) +
           (v.count > 1 ? " x" + std::to_string(v.count) : "") + " (ttl " +
           format_duration(v.ttl_left) + ")";
}

void print_semaphore(const context& ctx, const std::string& name, std::uint64_t given,
                     const semaphore_inspection& v) {
    // --permits, else N as the latest acquisition stored it.
    const std::uint64_t permits = given > 0 ? given : v.permits.value_or(0);
    const bool known = permits > 0;
    const auto left = known && permits > v.held ? permits - v.held : 0;
    if (ctx.opts.json) {
        json_object o;
        o.add("kind", "semaphore").add("name", name).add("held", v.held);
        known ? o.add("permits", permits).add("left", left)
              : o.add_raw("permits", "null").add_raw("left", "null");
        o.add_raw("holders", leases_json(v.holders))
            .add("waiters", static_cast<std::uint64_t>(v.waiters));
        add_counter(o, v.fencing_counter);
        print_line(o.str());
        return;
    }
    print_line(
        "semaphore '" + name + "': " + std::to_string(v.held) + " held" +
        (known ? " of " + std::to_string(permits) + ", " + std::to_string(left) + " left" : "") +
        ", " + std::to_string(v.waiters) + " waiting");
    for (const auto& h : v.holders) print_line("    " + lease_text(h));
    print_line("  fencing counter   " + counter_text(v.fencing_counter));
}

void print_rwlock(const context& ctx, const std::string& name, const rw_lock_inspection& v) {
    if (ctx.opts.json) {
        json_object o;
        o.add("kind", "rwlock").add("name", name);
        v.writer ? o.add_raw("writer", lease_json(*v.writer)) : o.add_raw("writer", "null");
        o.add_raw("readers", leases_json(v.readers))
            .add("waiting_writers", static_cast<std::uint64_t>(v.waiting_writers))
            .add("waiting_readers", static_cast<std::uint64_t>(v.waiting_readers));
        add_counter(o, v.fencing_counter);
        print_line(o.str());
        return;
    }
    const std::string state = v.writer            ? std::string("held by a writer")
                              : v.readers.empty() ? std::string("free")
                                                  : std::to_string(v.readers.size()) + " readers";
    print_line("rwlock '" + name + "': " + state + ", " + std::to_string(v.waiting_writers) +
               " writers and " + std::to_string(v.waiting_readers) + " readers waiting");
    if (v.writer) print_line("  writer            " + lease_text(*v.writer));
    if (!v.readers.empty()) print_line("  readers");
    for (const auto& r : v.readers) print_line("    " + lease_text(r));
    print_line("  fencing counter   " + counter_text(v.fencing_counter));
}

void print_limiter(const context& ctx, const std::string& name, const rate_limiter_inspection& v) {
    const auto full = std::chrono::ceil<milliseconds>(v.full_after);
    if (ctx.opts.json) {
        json_object o;
        o.add("kind", "limit").add("name", name);
        v.burst ? o.add("burst", *v.burst).add("remaining", v.remaining)
                : o.add_raw("burst", "null").add_raw("remaining", "null");
        print_line(o.add("full_after_ms", static_cast<std::int64_t>(full.count()))
                       .add("idle", v.idle)
                       .str());
        return;
    }
    const std::string left =
        v.burst ? std::to_string(v.remaining) + " of " + std::to_string(*v.burst) + " left"
                : std::string("rate and burst unknown (give --rate)");
    print_line("limit '" + name + "': " + left +
               (v.idle ? std::string(" (idle)") : ", full again in " + format_duration(full)));
}

void print_window(const context& ctx, const std::string& name, const sliding_window_inspection& v) {
    const auto reset = std::chrono::ceil<milliseconds>(v.reset_after);
    if (ctx.opts.json) {
        json_object o;
        o.add("kind", "window").add("name", name).add("used", v.used);
        v.limit ? o.add("limit", *v.limit).add("remaining", v.remaining)
                : o.add_raw("limit", "null").add_raw("remaining", "null");
        v.window
            ? o.add("window_ms",
                    static_cast<std::int64_t>(std::chrono::ceil<milliseconds>(*v.window).count()))
            : o.add_raw("window_ms", "null");
        print_line(o.add("reset_after_ms", static_cast<std::int64_t>(reset.count()))
                       .add("idle", v.idle)
                       .str());
        return;
    }
    std::string line = "window '" + name + "': " + std::to_string(v.used) + " used";
    if (v.limit && v.window)
        line += " of " + std::to_string(*v.limit) + " per " +
                format_duration(std::chrono::ceil<milliseconds>(*v.window)) + ", " +
                std::to_string(v.remaining) + " left";
    line += v.idle ? std::string(" (idle)") : ", empty again in " + format_duration(reset);
    print_line(line);
}

}  // namespace

bool is_limit_kind(const std::string& kind) {
    return kind == "semaphore" || kind == "rwlock" || kind == "limit";
}

void add_limit_inspect_options(CLI::App& sub, const std::string& kind, limit_inspect_args& a) {
    if (kind == "semaphore")
        sub.add_option("--permits", a.permits, "The semaphore's N, to show the permits left")
            ->check(CLI::PositiveNumber);
    if (kind == "limit") {
        sub.add_option("--rate", a.rate,
                       "The limiter's rate, as 'redcoord limit' takes it (default: as the "
                       "latest admission stored it)");
        sub.add_option("--burst", a.burst, "The limiter's burst (with --rate)")
            ->capture_default_str();
        sub.add_flag("--window", a.window,
                     "NAME is a sliding_window_limiter (its limit and window as the latest "
                     "admission stored them)");
    }
}

std::function<void()> make_limit_printer(const context& ctx, const std::string& kind,
                                         const std::string& name, const limit_inspect_args& a,
                                         connection_pool& pool) {
    const std::string prefix = ctx.opts.prefix;
    if (kind == "semaphore")
        return [&ctx, &pool, name, prefix, n = a.permits] {
            print_semaphore(ctx, name, n, inspect_semaphore(pool, name, prefix));
        };
    if (kind == "rwlock")
        return [&ctx, &pool, name, prefix] {
            print_rwlock(ctx, name, inspect_rw_lock(pool, name, prefix));
        };
    if (a.window) {
        if (!a.rate.empty()) throw invalid_argument("inspect limit: --window takes no --rate");
        return [&ctx, &pool, name, prefix] {
            print_window(ctx, name, inspect_sliding_window(pool, name, prefix));
        };
    }
    if (a.rate.empty())
        return [&ctx, &pool, name, prefix] {
            print_limiter(ctx, name, inspect_rate_limiter(pool, name, prefix));
        };
    const auto o = limit_options(ctx, a.rate, a.burst);
    // Bad options are a usage error now, not a failed read that --watch would retry forever:
    // the constructor checks them and sends nothing.
    (void)rate_limiter(pool, name, o);
    return
        [&ctx, &pool, name, o] { print_limiter(ctx, name, inspect_rate_limiter(pool, name, o)); };
}

}  // namespace redcoord::cli
