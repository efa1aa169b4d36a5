#include "party.hpp"

#include "signaling_scripts.hpp"

#include <redcoord/core/deadline.hpp>
#include <redcoord/core/detail/snapshot.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/core/keys.hpp>
#include <redcoord/core/script.hpp>
#include <redcoord/signaling/latch.hpp>
#include <redcoord_lua/signaling.hpp>

namespace redcoord {

namespace {
// signaling/src/lua/latch_count_down.lua. Counts stay <= 2^53 (checked by the caller), so the
// Lua doubles and the integer text Redis writes for them are exact.
const script count_down_script(detail::latch_count_down_lua, cluster_publish::sharded);

void check_count(std::uint64_t n, const char* what) {
    if (n > latch_max_count)
        throw invalid_argument(std::string(what) + " " + std::to_string(n) +
                               " is above the largest exact latch count 2^53");
}
}  // namespace

namespace detail {
const script& latch_script() { return count_down_script; }
}  // namespace detail

latch::latch(signal_hub& hub, std::string name, std::uint64_t count, latch_options opts)
    : hub_(hub), name_(std::move(name)), opts_(opts) {
    validate_name(name_, "latch name");
    if (opts_.recheck_interval.count() <= 0)
        throw invalid_argument("latch_options::recheck_interval must be > 0");
    if (opts_.ttl.count() <= 0 || opts_.ttl > std::chrono::hours(24 * 366))
        throw invalid_argument("latch_options::ttl must be > 0 and <= 366 days");
    check_count(count, "latch count");
    key_ = make_key(hub_.options().prefix, "latch", name_);
    (void)hub_.master().command(
        {"SET", key_, std::to_string(count), "NX", "PX", std::to_string(opts_.ttl.count())});
}

std::uint64_t latch::count_down(std::uint64_t n) {
    if (n == 0) throw invalid_argument("latch::count_down needs n >= 1");
    check_count(n, "latch::count_down n");
    const std::string envelope = hub_.envelope({});
    auto& pool = hub_.master();
    // Borrowed apart from the script so its failures (no connection, a refused connect, a
    // busy pool) are known to have sent nothing: they stand as they are.
    auto c = pool.borrow_for(key_);
    reply r;
    try {
        r = count_down_script.run(
            *c, {key_}, {std::to_string(n), key_, envelope, std::to_string(opts_.ttl.count())});
    } catch (const reply_error& e) {
        if (std::string(e.what()).find("does not exist") != std::string::npos)
            throw error("latch '" + name_ + "' does not exist (its key was deleted or expired)");
        if (std::string_view(e.what()).find("READONLY") != std::string_view::npos) {
            // A demoted master, as script::run(pool) handles it: no connection to it is
            // reused, and the poisoned one tells a Sentinel pool's resolver on its way back.
            c->poison();
            pool.clear_idle();
        }
        throw;
    } catch (const cluster_unavailable&) {
        throw;  // every node it reached refused it (TRYAGAIN, CLUSTERDOWN): nothing ran
    } catch (const error& e) {
        // Sent, reply lost: the server may have counted down. A retry could count twice and
        // open the latch early, so the caller must be told it is unknown.
        throw outcome_unknown("latch '" + name_ + "': count_down sent, reply lost (" + e.what() +
                              "); the count may or may not have been decremented");
    }
    return static_cast<std::uint64_t>(std::max<std::int64_t>(0, r.integer()));
}

std::uint64_t latch::count() {
    // Digits only (counter_of): stoull would accept "-5" (as 2^64 - 5) and stop at "9.2e+18".
    return detail::counter_of(hub_.master().command({"GET", key_}), "latch '" + name_ + "' key")
        .value_or(0);
}

bool latch::wait(std::chrono::milliseconds timeout) {
    const auto deadline = deadline_after(timeout);
    auto w = hub_.listen({key_});  // subscribe first, then read state, then wait
    auto open = [&] {
        auto v = hub_.master().command({"GET", key_}).maybe_text();
        return v && (*v == "0" || (!v->empty() && (*v)[0] == '-'));
    };
    for (;;) {
        if (open()) return true;
        if (!detail::await_wake(w, deadline, opts_.recheck_interval)) return false;
    }
}

void latch::reset(std::uint64_t count) {
    check_count(count, "latch count");
    (void)hub_.master().command(
        {"SET", key_, std::to_string(count), "PX", std::to_string(opts_.ttl.count())});
}

}  // namespace redcoord
