-- The acquire step of distributed_lock and redlock (scripts.hpp: the notice, re-lock, the
-- turn and tombstone rules, and the fencing counter).
-- KEYS[1]  lock key (holds the holder's token and nothing else)
-- KEYS[2]  fencing counter
-- KEYS[3]  with fairness: the turn key (the owner that took the lock last from someone else)
-- KEYS[4]  with fairness: the waiting key (the owner that waits next)
-- ARGV[1]  token                ARGV[2]  TTL in ms
-- ARGV[3]  what a refusal reports: "1" wait for this holder (ask for its release notice),
--          "0" only who holds it, "-" or absent the short reply
-- ARGV[4]  fairness: the lock object's owner id  ARGV[5]  its turn in ms  ARGV[6]  grace in ms
-- ARGV[7]  token of this object's held-back previous holding ("" for none)
-- ARGV[8]  that holding's fencing floor ("0": none)
-- ARGV[9]  "1" when this owner may be named in the waiting key
-- ARGV[10] "1" to honour release tombstones (Redlock)
-- Reply    acquired: the fencing token (>= 1); refused, short: -2 - PTTL of the holder (-3 for
--          an owner that yields); refused, long: {0, PTTL, holder id (16 hex digits of SHA1 of
--          its token), turn left in ms, 1 when yielding else 0}
-- Cost     O(1)
local fair = ARGV[4]
if fair and ARGV[7] ~= '' then
  -- A held-back release raises the counter as that release would have, on every node this
  -- reaches, whatever comes next (renewal, yield, or someone else's key).
  raise_fence(ARGV[8], ARGV[2])
end
if ARGV[10] == '1' and redis.call('EXISTS', KEYS[1] .. ':gone:' .. ARGV[1]) == 1 then
  -- Released before it arrived (a Redlock round decided without waiting for this node):
  -- take nothing, and let go of a held-back holding as that release would have.
  if fair and ARGV[7] ~= '' and redis.call('GET', KEYS[1]) == ARGV[7] then
    redis.call('DEL', KEYS[1])
    notify_release(ARGV[7])
  end
  if ARGV[3] == '-' then return -1 end
  return {0, -1, '', 0, 0}
end
local owner, left, yielding = false, 0, false
if fair then
  owner = redis.call('GET', KEYS[3])
  if owner == fair then
    left = redis.call('PTTL', KEYS[3])
    if left <= tonumber(ARGV[6]) then
      local w = redis.call('GET', KEYS[4])
      yielding = w and w ~= fair
    end
  end
end
local took = false
if fair and ARGV[7] ~= '' then
  if redis.call('GET', KEYS[1]) == ARGV[7] then
    if yielding then
      redis.call('DEL', KEYS[1])
      notify_release(ARGV[7])
    else
      redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
      -- A waiter that asked for the previous holding's release notice waits for this one.
      local nk = KEYS[1] .. ':notice'
      if redis.call('GET', nk) == ARGV[7] then redis.call('SET', nk, ARGV[1], 'PX', ARGV[2]) end
      took = true
    end
  elseif ARGV[10] == '1' then
    -- The previous holding is not here: an attempt of its own may still be in flight to this
    -- node on another connection (a Redlock round decides at a majority) and would bring it
    -- back after its release; this tombstone makes that attempt take nothing.
    redis.call('SET', KEYS[1] .. ':gone:' .. ARGV[7], '1', 'PX', ARGV[2])
  end
end
if not took and not yielding then took = redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) end
if took then
  local f = next_fence(ARGV[2])
  if fair then
    if owner ~= fair or left <= tonumber(ARGV[6]) then
      redis.call('SET', KEYS[3], fair, 'PX', tonumber(ARGV[5]) + tonumber(ARGV[6]))
    end
    if ARGV[9] == '1' and redis.call('GET', KEYS[4]) == fair then redis.call('DEL', KEYS[4]) end
  end
  return f
end
local pttl = redis.call('PTTL', KEYS[1])
if pttl ~= -2 then yielding = false end
local turn = 0
if fair and not yielding then
  if owner and owner ~= fair then
    turn = math.max(0, redis.call('PTTL', KEYS[3]) - tonumber(ARGV[6]))
  end
  if ARGV[3] ~= '-' then redis.call('SET', KEYS[4], fair, 'PX', turn + tonumber(ARGV[6])) end
end
if ARGV[3] == '-' or not ARGV[3] then
  if yielding then return -3 end
  return -2 - pttl
end
local holder = ''
local v = redis.call('GET', KEYS[1])
if v then
  holder = string.sub(redis.sha1hex(v), 1, 16)
  if ARGV[3] == '1' then
    -- Ask for this holding's release notice in a key of our own, never in the holder's value:
    -- a holder of another client (SET NX PX, compare-and-delete) must find its value intact.
    local nk = KEYS[1] .. ':notice'
    if redis.call('GET', nk) ~= v then
      local left = pttl
      if left <= 0 then left = tonumber(ARGV[2]) end
      redis.call('SET', nk, v, 'PX', left)
    end
  end
end
return {0, pttl, holder, turn, yielding and 1 or 0}
