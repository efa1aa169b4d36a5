-- Nack: attempts + 1, then requeue or dead-letter. The push comes before the removal: Redis
-- keeps the writes a script made before an error, so a push that fails (WRONGTYPE) after the
-- removal would lose the message; this way a failed nack leaves it in flight.
-- KEYS[1]  processing list   KEYS[2]  ready list   KEYS[3]  dead-letter list
-- ARGV[1]  message   ARGV[2]  requeue | dead   ARGV[3]  max attempts
-- ARGV[4]  nonce (8 bytes)   ARGV[5]  now (8 bytes)
-- ARGV[6]  the queue's push channel: a requeued message is announced there, as a push is, so
--          pending async pops take it without waiting for their re-check (PUBLISH by pcall:
--          a refused notice fails nothing, as for a push)
-- Reply    0 not ours, 1 requeued, 2 dead-lettered
-- Cost     O(processing list) (LPOS, LREM)
if not redis.call('LPOS', KEYS[1], ARGV[1]) then return 0 end
local m, n = bump(ARGV[1], ARGV[4], 1, ARGV[5])
local r = 2
if ARGV[2] == 'dead' then
  redis.call('LPUSH', KEYS[3], m)
elseif place(m, n, tonumber(ARGV[3]), KEYS[2], KEYS[3], false) == 0 then
  r = 1
end
redis.call('LREM', KEYS[1], 1, ARGV[1])
if r == 1 then redis.pcall('PUBLISH', ARGV[6], '') end
return r
