-- Fragment, prepended to the reliable queue's scripts that change attempts. The envelope is
-- the layout of envelope.hpp, and is_env must agree with decode_envelope byte for byte, or a
-- raw payload that starts with the magic would be rewritten. Defines be(),
-- u32(), check(), is_env(), bump(m, nonce, idx, now), place(m, n, max, ready, dead, front)
-- and reclaim(pkey, ready, dead, max, nonce, now, idx).
-- Cost     reclaim: O(processing list); the others O(message size)
local MAGIC = '\0RQ\1'
local HDR = 40
local function be(n, bytes)
  local t = {}
  for i = bytes, 1, -1 do t[i] = n % 256; n = math.floor(n / 256) end
  return string.char(unpack(t))
end
local function u32(m, at)
  local a, b, c, d = string.byte(m, at, at + 3)
  return ((a * 256 + b) * 256 + c) * 256 + d
end
local function check(covered)
  local x = redis.sha1hex(covered)
  return string.char(tonumber(string.sub(x, 1, 2), 16), tonumber(string.sub(x, 3, 4), 16),
                     tonumber(string.sub(x, 5, 6), 16), tonumber(string.sub(x, 7, 8), 16))
end
local function is_env(m)
  if #m < HDR or string.sub(m, 1, 4) ~= MAGIC then return false end
  if u32(m, 33) ~= #m - HDR then return false end
  return string.sub(m, 37, 40) == check(string.sub(m, 1, 20) .. string.sub(m, 33, 36))
end
-- The element with attempts + 1 (a raw payload gets an envelope: id = nonce .. idx) and the
-- new count.
local function bump(m, nonce, idx, now)
  if is_env(m) then
    local n = u32(m, 21)
    if n < 4294967295 then n = n + 1 end
    return string.sub(m, 1, 20) .. be(n, 4) .. string.sub(m, 25), n
  end
  local head, len = MAGIC .. nonce .. be(idx, 8), be(#m, 4)
  return head .. be(1, 4) .. now .. len .. check(head .. len) .. m, 1
end
-- Returns 1 when the message went to the dead-letter list.
local function place(m, n, max, ready, dead, front)
  if n >= max then redis.call('LPUSH', dead, m) return 1 end
  if front then redis.call('RPUSH', ready, m) else redis.call('LPUSH', ready, m) end
  return 0
end
-- Moves a whole processing list back to the front of the queue, oldest message first in
-- line (LRANGE runs newest to oldest; each RPUSH goes in front of the previous one).
local function reclaim(pkey, ready, dead, max, nonce, now, idx)
  local items = redis.call('LRANGE', pkey, 0, -1)
  local req, dl = 0, 0
  for i = 1, #items do
    idx = idx + 1
    local m, n = bump(items[i], nonce, idx, now)
    if place(m, n, max, ready, dead, true) == 1 then dl = dl + 1 else req = req + 1 end
  end
  redis.call('DEL', pkey)
  return req, dl, idx
end
