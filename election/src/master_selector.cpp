#include <redcoord/core/errors.hpp>
#include <redcoord/core/script.hpp>
#include <redcoord/election/master_selector.hpp>

namespace redcoord {
namespace {

// KEYS[1] selector hash {round, holder, epoch}; KEYS[2] epoch counter (never expires).
// ARGV[1] identity, ARGV[2] term in ms, ARGV[3] highest epoch the caller has seen.
// Returns {is_holder, epoch, round, holder, new_term}.
// The increment, the ownership check and the expiry are one atomic step, so the selector can
// never be left without an expiry; only the holder's own rounds push the expiry out.
const script campaign_script(R"lua(
local round = redis.call('HINCRBY', KEYS[1], 'round', 1)
local f = redis.call('HMGET', KEYS[1], 'holder', 'epoch')
if round == 1 or not f[1] then
  local epoch = redis.call('INCR', KEYS[2])
  local floor = tonumber(ARGV[3])
  if epoch <= floor then
    epoch = floor + 1
    redis.call('SET', KEYS[2], epoch)
  end
  redis.call('HSET', KEYS[1], 'holder', ARGV[1], 'epoch', epoch)
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {1, epoch, round, ARGV[1], 1}
end
local epoch = tonumber(f[2]) or 0
if f[1] == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {1, epoch, round, f[1], 0}
end
if redis.call('PTTL', KEYS[1]) < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return {0, epoch, round, f[1], 0}
)lua");

// KEYS[1] selector; ARGV[1] identity, ARGV[2] handoff channel.
const script resign_script(R"lua(
if redis.call('HGET', KEYS[1], 'holder') == ARGV[1] then
  redis.call('DEL', KEYS[1])
  redis.call('PUBLISH', ARGV[2], ARGV[1])
  return 1
end
return 0
)lua");

void check_shape(const reply& r) {
    if (r.is_error()) throw reply_error(r.text());
    if (!r.is_array() || r.elements().size() != 5)
        throw protocol_error("election: unexpected reply shape from the campaign script");
}

}  // namespace

master_selector::master_selector(connection_pool& pool, std::string name, election_options opts)
    : pool_(pool), name_(std::move(name)), opts_(resolve(name_, opts)),
      keys_(make_election_keys(opts_.key_prefix, name_)) {}

campaign_result master_selector::campaign_once() {
    const std::string term = std::to_string(opts_.term.count());
    const std::string floor = std::to_string(max_epoch_.load());
    const std::string_view keys[] = {keys_.selector, keys_.epoch};
    const std::string_view args[] = {opts_.identity, term, floor};

    auto conn = pool_.borrow();
    campaign_result res;
    reply out;
    res.sent_at = std::chrono::steady_clock::now();
    if (opts_.replicas == 0) {
        out = campaign_script.run(*conn, keys, args);
    } else {
        // EVALSHA and WAIT in one write: the round counts only once replicas hold it.
        std::vector<std::string> wait = {"WAIT", std::to_string(opts_.replicas),
                                         std::to_string(opts_.replica_timeout.count())};
        auto replies = conn->pipeline({campaign_script.evalsha_argv(keys, args), wait});
        if (replies.at(0).is_error() && is_noscript(replies[0]))
            replies = conn->pipeline({campaign_script.eval_argv(keys, args), wait});
        out = replies.at(0);
        if (replies.at(1).is_error()) throw reply_error(replies[1].text());
        res.acks = static_cast<int>(replies[1].integer());
    }
    const auto received = std::chrono::steady_clock::now();
    conn.reset();

    check_shape(out);
    const auto& e = out.elements();
    res.holder_is_us = e[0].integer() == 1;
    res.epoch = static_cast<std::uint64_t>(e[1].integer());
    res.round = e[2].integer();
    res.holder = e[3].maybe_text();
    res.new_term = e[4].integer() == 1;
    res.deadline = leader_deadline(res.sent_at, opts_.term, opts_.drift);
    res.leader = res.holder_is_us && received < res.deadline &&
                 (opts_.replicas == 0 || res.acks >= opts_.replicas);
    for (auto seen = max_epoch_.load(); res.epoch > seen && !max_epoch_.compare_exchange_weak(seen, res.epoch);) {
    }
    return res;
}

bool master_selector::resign() {
    auto r = resign_script.run(pool_, {keys_.selector}, {opts_.identity, keys_.channel});
    if (r.is_error()) throw reply_error(r.text());
    return r.integer() == 1;
}

std::optional<std::string> master_selector::leader() {
    auto r = pool_.command({"HGET", keys_.selector, "holder"});
    return r.maybe_text();
}

}  // namespace redcoord
