#include "wake_wait.hpp"

#include <redcoord/core/keys.hpp>
#include <redcoord/core/script.hpp>
#include <redcoord/core/token.hpp>
#include <redcoord/signaling/barrier.hpp>

namespace redcoord {

namespace {

// KEYS: state hash, arrivals zset. ARGV: member, parties, lease ms, channel, envelope header,
// mode (arrive | refresh | withdraw | count), generation the member arrived in.
// Returns {passed, generation, arrivals}. Server time (TIME) scores the leases, so all
// lease math happens on one clock.
const script barrier_script(std::string(detail::party_script_preamble) + R"lua(
local gen = tonumber(redis.call('HGET', KEYS[1], 'gen') or '0')
local mode = ARGV[6]
if mode == 'count' then
  return {0, gen, redis.call('ZCOUNT', KEYS[2], '(' .. now, '+inf')}
end
if mode ~= 'arrive' and gen ~= tonumber(ARGV[7]) then return {1, gen, 0} end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
if mode == 'withdraw' then
  local n = redis.call('ZCARD', KEYS[2])
  redis.call('ZREM', KEYS[2], ARGV[1])
  return {0, gen, n}
end
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[3]), ARGV[1])
if not stored then redis.call('HSET', KEYS[1], 'parties', parties) end
local n = redis.call('ZCARD', KEYS[2])
if n >= parties then
  redis.call('DEL', KEYS[2])
  redis.call('HSET', KEYS[1], 'gen', gen + 1)
  redis.call('PUBLISH', ARGV[4], ARGV[5] .. tostring(gen + 1))
  return {1, gen, n}
end
return {0, gen, n}
)lua");

}  // namespace

barrier_timeout::barrier_timeout(const std::string& name, std::size_t arrived, std::size_t parties,
                                 const std::string& what_happened)
    : timeout_error("barrier '" + name + "' timed out: " + std::to_string(arrived) + " of " +
                    std::to_string(parties) + " parties " + what_happened),
      arrived_(arrived),
      parties_(parties) {}

barrier::barrier(signal_hub& hub, std::string name, std::size_t parties, barrier_options opts)
    : hub_(hub), name_(std::move(name)), parties_(parties), opts_(opts) {
    validate_name(name_, "barrier name");
    if (parties_ == 0) throw invalid_argument("barrier '" + name_ + "' needs at least one party");
    if (opts_.arrival_lease < std::chrono::milliseconds(30))
        throw invalid_argument("barrier_options::arrival_lease must be >= 30 ms");
    const auto& prefix = hub_.options().prefix;
    state_key_ = make_key(prefix, "barrier", name_);
    arrived_key_ = make_key(prefix, "barrier", name_, "arrived");
    channel_ = state_key_;
}

namespace {
detail::phase_reply run_barrier(signal_hub& hub, const std::string& state, const std::string& arrived,
                                const std::string& member, std::size_t parties, std::chrono::milliseconds lease,
                                const std::string& channel, const char* mode, std::uint64_t gen) {
    const std::string p = std::to_string(parties), l = std::to_string(lease.count()), g = std::to_string(gen);
    const std::string env = hub.envelope({});
    try {
        return detail::parse_phase(barrier_script.run(hub.master(), {state, arrived}, {member, p, l, channel, env, mode, g}));
    } catch (const reply_error& e) {
        if (std::string(e.what()).find("parties mismatch") != std::string::npos)
            throw invalid_argument(std::string("barrier: ") + e.what() + ", not " + p + " parties");
        throw;
    }
}
}  // namespace

std::uint64_t barrier::arrive_and_wait(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    {
        std::lock_guard lk(anchor_mu_);
        if (!anchor_) anchor_.emplace(hub_.listen({channel_}));
        while (anchor_->try_wait()) {
        }
    }
    auto w = hub_.listen({channel_});  // subscribe first, then read state, then wait
    const std::string member = random_token();
    auto r = run_barrier(hub_, state_key_, arrived_key_, member, parties_, opts_.arrival_lease, channel_, "arrive", 0);
    if (r.done) return r.generation;
    const std::uint64_t mine = r.generation;
    for (;;) {
        const auto left = detail::remaining(deadline);
        if (left.count() == 0) {
            r = run_barrier(hub_, state_key_, arrived_key_, member, parties_, opts_.arrival_lease, channel_, "withdraw",
                            mine);
            if (r.done) return mine;
            throw barrier_timeout(name_, r.count, parties_);
        }
        (void)w.wait(std::min(left, opts_.arrival_lease / 3));
        while (w.try_wait()) {
        }
        r = run_barrier(hub_, state_key_, arrived_key_, member, parties_, opts_.arrival_lease, channel_, "refresh", mine);
        if (r.done) return mine;
    }
}

std::size_t barrier::arrived() {
    return run_barrier(hub_, state_key_, arrived_key_, "", parties_, opts_.arrival_lease, channel_, "count", 0).count;
}

std::uint64_t barrier::generation() {
    return run_barrier(hub_, state_key_, arrived_key_, "", parties_, opts_.arrival_lease, channel_, "count", 0)
        .generation;
}

void barrier::reset() { (void)hub_.master().command({"DEL", state_key_, arrived_key_}); }

}  // namespace redcoord
