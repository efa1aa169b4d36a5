#include "barrier_keys.hpp"
#include "hub_core.hpp"
#include "party.hpp"

#include "signaling_scripts.hpp"

#include <redcoord/core/deadline.hpp>
#include <redcoord/core/keys.hpp>
#include <redcoord/core/script.hpp>
#include <redcoord/core/token.hpp>
#include <redcoord/signaling/barrier.hpp>
#include <redcoord_lua/signaling.hpp>

#include <thread>

namespace redcoord {

namespace {

// signaling/src/lua/barrier_phase.lua after the party fragment. Server time (TIME) scores
// the leases, so all lease math happens on one clock. A member whose generation moved on is
// told it passed only when the passed set names it: a lapsed, uncounted member and a member
// of a reset barrier get `lost`.
const script phase_script(std::string(detail::party_lua) + detail::barrier_phase_lua,
                          cluster_publish::sharded);

}  // namespace

namespace detail {
const script& barrier_script() { return phase_script; }

barrier_keys make_barrier_keys(std::string_view prefix, std::string_view name) {
    return {make_key(prefix, "barrier", name), make_key(prefix, "barrier", name, "arrived"),
            make_key(prefix, "barrier", name, "passed")};
}
}  // namespace detail

barrier_timeout::barrier_timeout(const std::string& name, std::size_t arrived, std::size_t parties,
                                 const std::string& what_happened)
    : timeout_error("barrier '" + name + "' timed out: " + std::to_string(arrived) + " of " +
                    std::to_string(parties) + " parties " + what_happened),
      arrived_(arrived), parties_(parties) {}

barrier_lease_lost::barrier_lease_lost(const std::string& what_barrier, std::uint64_t generation)
    : error(what_barrier +
            ": this member's lease lapsed (it stalled for longer than arrival_lease) and "
            "generation " +
            std::to_string(generation) + " went on without counting it; it did not pass"),
      generation_(generation) {}

barrier::barrier(signal_hub& hub, std::string name, std::size_t parties, barrier_options opts)
    : hub_(hub), name_(std::move(name)), parties_(parties), opts_(opts) {
    detail::validate_party("barrier", name_, parties_, opts_);
    auto k = detail::make_barrier_keys(hub_.options().prefix, name_);
    state_key_ = std::move(k.state);
    arrived_key_ = std::move(k.arrived);
    passed_key_ = std::move(k.passed);
    channel_ = state_key_;
}

// One run of the barrier script. `parties` 0 skips the party-count check (count, reset).
detail::phase_reply barrier::run(const std::string& member, std::size_t parties, const char* mode,
                                 std::uint64_t gen) {
    return detail::run_phase(
        phase_script, hub_.master(), {state_key_, arrived_key_, passed_key_},
        {member, std::to_string(parties), std::to_string(opts_.arrival_lease.count()), channel_,
         hub_.envelope({}), mode, std::to_string(gen),
         std::to_string(detail::passed_retention(opts_).count()),
         std::to_string(opts_.idle_ttl.count())},
        "barrier");
}

std::optional<barrier::pending_arrival> barrier::take_pending() {
    std::lock_guard lk(pending_mu_);
    const auto now = std::chrono::steady_clock::now();
    std::erase_if(pending_, [&](const auto& e) { return e.second.until <= now; });
    const auto it = pending_.find(std::this_thread::get_id());
    if (it == pending_.end()) return std::nullopt;
    auto p = std::move(it->second);
    pending_.erase(it);
    return p;
}

void barrier::keep_pending(std::string member, std::optional<std::uint64_t> generation) {
    // Past the passed-member retention the server can no longer tell this arrival apart.
    const auto until = std::chrono::steady_clock::now() + detail::passed_retention(opts_);
    std::lock_guard lk(pending_mu_);
    pending_[std::this_thread::get_id()] = {std::move(member), generation, until};
}

std::uint64_t barrier::arrive_and_wait(std::chrono::milliseconds timeout) {
    const auto deadline = deadline_after(timeout);
    {
        std::lock_guard lk(anchor_mu_);
        if (!anchor_) anchor_ = detail::hold_channel(hub_, channel_);
    }
    auto w = hub_.listen({channel_});  // subscribe first, then read state, then wait
    auto resumed = take_pending();
    std::string member = resumed ? resumed->member : random_token();
    std::optional<std::uint64_t> mine = resumed ? resumed->generation : std::nullopt;
    try {
        detail::phase_reply r;
        if (mine) {
            // Where the earlier call left it: passed, still waiting, or lapsed uncounted (then
            // this call arrives afresh, as any later arrival would).
            r = run(member, parties_, "refresh", *mine);
            if (r.code == detail::lost) {
                member = random_token();
                mine.reset();
            }
        }
        // Arriving again under a resumed id whose reply was lost refreshes that arrival when it
        // counts in the open generation: one party, one entry.
        if (!mine) {
            r = run(member, parties_, "arrive", 0);
            mine = r.generation;
        }
        for (;;) {
            if (r.code == detail::passed) return *mine;
            if (r.code == detail::lost) throw barrier_lease_lost("barrier '" + name_ + "'", *mine);
            if (!detail::await_wake(w, deadline, detail::refresh_period(opts_))) {
                r = run(member, parties_, "withdraw", *mine);
                if (r.code == detail::waiting) throw barrier_timeout(name_, r.count, parties_);
                continue;  // passed or lost while we gave up
            }
            r = run(member, parties_, "refresh", *mine);
        }
    } catch (const barrier_timeout&) {
        throw;  // withdrawn
    } catch (const barrier_lease_lost&) {
        throw;  // counts nowhere
    } catch (const error&) {
        keep_pending(member, mine);
        throw;
    }
}

std::size_t barrier::arrived() { return run("", 0, "count", 0).count; }

std::uint64_t barrier::generation() { return run("", 0, "count", 0).generation; }

bool barrier::reset() { return run("", 0, "reset", 0).code == detail::passed; }

std::size_t barrier::force_reset() { return run("", 0, "force", 0).count; }

}  // namespace redcoord
