#include "fair_scripts.hpp"

#include "scripts.hpp"

#include <string>

namespace redcoord::detail {

namespace {

// Shared by the scripts that decide on the queue's head: drops dead waiters (lease key gone)
// from the head, except `me` (the caller, alive by definition), and returns the live head.
const char* const purge_lua = R"lua(
local function live_head(me)
  local head = redis.call('LINDEX', KEYS[QUEUE], 0)
  while head and head ~= me and redis.call('EXISTS', KEYS[1] .. ':waiter:' .. head) == 0 do
    redis.call('LPOP', KEYS[QUEUE])
    head = redis.call('LINDEX', KEYS[QUEUE], 0)
  end
  return head
end
local function wake(id)
  redis.call('PUBLISH', KEYS[1] .. ':wake:' .. id, 'turn')
end
local function ours(v, token)
  return v and #token > 0 and v == token
end
)lua";

std::string with_purge(const char* queue_key_index, const char* body) {
    std::string p = std::string(next_fence_lua) + release_notice_lua + purge_lua;
    for (auto at = p.find("QUEUE"); at != std::string::npos; at = p.find("QUEUE"))
        p.replace(at, 5, queue_key_index);
    return p + body;
}

}  // namespace

const script& fair_acquire_script() {
    static const script s(with_purge("3", R"lua(
local me = ARGV[1]
if redis.call('EXISTS', KEYS[1] .. ':gone:' .. ARGV[2]) == 1 then
  -- This call left after losing this attempt's reply: take nothing, queue nothing.
  return {0, -1, -1, -1}
end
local head = live_head(me)
local v = redis.call('GET', KEYS[1])
if ours(v, ARGV[2]) or (not v and (not head or head == me)) then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
  if head == me then redis.call('LPOP', KEYS[3]) end
  redis.call('DEL', KEYS[1] .. ':waiter:' .. me)
  return next_fence(ARGV[3])
end
local pttl = -2
if v then pttl = redis.call('PTTL', KEYS[1]) end
local pos = -1
if ARGV[5] == 'q' then
  pos = redis.call('LPOS', KEYS[3], me)
  if not pos then pos = redis.call('RPUSH', KEYS[3], me) - 1 end
  redis.call('SET', KEYS[1] .. ':waiter:' .. me, '1', 'PX', ARGV[4])
  if redis.call('PTTL', KEYS[3]) < tonumber(ARGV[4]) then redis.call('PEXPIRE', KEYS[3], ARGV[4]) end
else
  redis.call('LREM', KEYS[3], 0, me)
  redis.call('DEL', KEYS[1] .. ':waiter:' .. me)
  head = live_head(me)
end
local head_lease = -1
if not v and head and head ~= me then
  wake(head)
  head_lease = redis.call('PTTL', KEYS[1] .. ':waiter:' .. head)
end
return {0, pttl, pos, head_lease}
)lua"),
                          cluster_publish::sharded);
    return s;
}

const script& fair_release_script() {
    static const script s(with_purge("2", R"lua(
local v = redis.call('GET', KEYS[1])
if not ours(v, ARGV[1]) then return 0 end
redis.call('DEL', KEYS[1])
notify_release(ARGV[1])
if ARGV[2] then
  redis.call('LPUSH', KEYS[2], ARGV[2])
  redis.call('SET', KEYS[1] .. ':waiter:' .. ARGV[2], '1', 'PX', ARGV[3])
  if redis.call('PTTL', KEYS[2]) < tonumber(ARGV[3]) then redis.call('PEXPIRE', KEYS[2], ARGV[3]) end
  return 1
end
local head = live_head(nil)
if head then wake(head) end
return 1
)lua"),
                          cluster_publish::sharded);
    return s;
}

const script& fair_leave_script() {
    static const script s(with_purge("2", R"lua(
redis.call('LREM', KEYS[2], 0, ARGV[1])
redis.call('DEL', KEYS[1] .. ':waiter:' .. ARGV[1])
local v = redis.call('GET', KEYS[1])
if ours(v, ARGV[2]) then
  redis.call('DEL', KEYS[1])
  notify_release(ARGV[2])
  v = false
elseif ARGV[3] then
  redis.call('SET', KEYS[1] .. ':gone:' .. ARGV[2], '1', 'PX', ARGV[3])
end
if not v then
  local head = live_head(nil)
  if head then wake(head) end
end
return 1
)lua"),
                          cluster_publish::sharded);
    return s;
}

}  // namespace redcoord::detail
