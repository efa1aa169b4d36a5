#include "wake_wait.hpp"

#include <redcoord/core/keys.hpp>
#include <redcoord/core/script.hpp>
#include <redcoord/core/token.hpp>
#include <redcoord/signaling/double_barrier.hpp>

namespace redcoord {

namespace {

// KEYS: state hash, members zset. ARGV: member, parties, lease ms, channel, envelope header,
// mode (enter | refresh | withdraw | leave | check), round the member entered in.
// Returns {done, round, count}; done = 2 from 'enter' means the previous round is still
// leaving. Leases are scored in server time (TIME).
const script double_barrier_script(std::string(detail::party_script_preamble) + R"lua(
local round = tonumber(redis.call('HGET', KEYS[1], 'round') or '0')
local ready = redis.call('HGET', KEYS[1], 'ready') == '1'
local mode = ARGV[6]
if mode == 'enter' then
  if ready then return {2, round, redis.call('ZCARD', KEYS[2])} end
elseif mode == 'refresh' or mode == 'withdraw' then
  if round ~= tonumber(ARGV[7]) or ready then return {1, round, 0} end
else
  if round ~= tonumber(ARGV[7]) then return {1, round, 0} end
  if mode == 'leave' then redis.call('ZREM', KEYS[2], ARGV[1]) end
  local n = redis.call('ZCARD', KEYS[2])
  if n == 0 then
    redis.call('HSET', KEYS[1], 'round', round + 1, 'ready', '0')
    redis.call('PUBLISH', ARGV[4], ARGV[5] .. 'empty')
    return {1, round, 0}
  end
  return {0, round, n}
end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
if mode == 'withdraw' then
  local n = redis.call('ZCARD', KEYS[2])
  redis.call('ZREM', KEYS[2], ARGV[1])
  return {0, round, n}
end
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[3]), ARGV[1])
if not stored then redis.call('HSET', KEYS[1], 'parties', parties) end
local n = redis.call('ZCARD', KEYS[2])
if n >= parties then
  redis.call('HSET', KEYS[1], 'ready', '1')
  redis.call('PUBLISH', ARGV[4], ARGV[5] .. 'ready')
  return {1, round, n}
end
return {0, round, n}
)lua");

}  // namespace

struct double_barrier::phase {
    static detail::phase_reply run(double_barrier& b, const char* mode) {
        const std::string p = std::to_string(b.parties_);
        try {
            return detail::parse_phase(double_barrier_script.run(
                b.hub_.master(), {b.state_key_, b.members_key_},
                {b.member_, p, std::to_string(b.opts_.arrival_lease.count()), b.channel_, b.hub_.envelope({}), mode,
                 std::to_string(b.round_)}));
        } catch (const reply_error& e) {
            if (std::string(e.what()).find("parties mismatch") != std::string::npos)
                throw invalid_argument(std::string("double_barrier: ") + e.what() + ", not " + p + " parties");
            throw;
        }
    }
};

double_barrier::double_barrier(signal_hub& hub, std::string name, std::size_t parties, barrier_options opts)
    : hub_(hub), name_(std::move(name)), parties_(parties), opts_(opts) {
    validate_name(name_, "double_barrier name");
    if (parties_ == 0) throw invalid_argument("double_barrier '" + name_ + "' needs at least one party");
    if (opts_.arrival_lease < std::chrono::milliseconds(30))
        throw invalid_argument("barrier_options::arrival_lease must be >= 30 ms");
    const auto& prefix = hub_.options().prefix;
    state_key_ = make_key(prefix, "double_barrier", name_);
    members_key_ = make_key(prefix, "double_barrier", name_, "members");
    channel_ = state_key_;
}

double_barrier::~double_barrier() {
    if (!inside_) return;
    try {
        (void)phase::run(*this, "leave");
    } catch (...) {
    }
}

void double_barrier::enter(std::chrono::milliseconds timeout) {
    if (inside_) throw error("double_barrier '" + name_ + "': enter() while already inside");
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    auto w = hub_.listen({channel_});  // subscribe first, then read state, then wait
    member_ = random_token();
    const auto slice = opts_.arrival_lease / 3;
    detail::phase_reply r = phase::run(*this, "enter");
    round_ = r.generation;
    while (r.code != 1) {
        const bool blocked = r.code == 2;  // the previous round is still leaving
        const auto left = detail::remaining(deadline);
        if (left.count() == 0) {
            if (blocked) throw barrier_timeout(name_, 0, parties_, "entered (the previous round is still leaving)");
            r = phase::run(*this, "withdraw");
            if (r.code == 1) break;
            throw barrier_timeout(name_, r.count, parties_, "entered");
        }
        (void)w.wait(std::min(left, slice));
        while (w.try_wait()) {
        }
        r = phase::run(*this, blocked ? "enter" : "refresh");
        if (blocked) round_ = r.generation;
    }
    inside_ = true;
}

void double_barrier::leave(std::chrono::milliseconds timeout) {
    if (!inside_) throw error("double_barrier '" + name_ + "': leave() without enter()");
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    auto w = hub_.listen({channel_});
    auto r = phase::run(*this, "leave");
    inside_ = false;
    while (!r.done) {
        const auto left = detail::remaining(deadline);
        if (left.count() == 0) throw barrier_timeout(name_, r.count, parties_, "still inside");
        (void)w.wait(std::min(left, opts_.arrival_lease / 3));
        while (w.try_wait()) {
        }
        r = phase::run(*this, "check");
    }
}

}  // namespace redcoord
