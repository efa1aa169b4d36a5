-- The release step of distributed_lock and redlock (scripts.hpp).
-- KEYS[1]  lock key
-- KEYS[2]  optional: fencing counter (raised to the floor when it exists and stands below it)
-- ARGV[1]  token   ARGV[2]  fencing floor ("0": none)   ARGV[3]  the counter's TTL in ms
-- ARGV[4]  optional: tombstone TTL in ms (KEYS[1]:gone:<token> when the key is not ours)
-- Reply    1 when the key held the token and was deleted, else 0
-- Cost     O(1)
if KEYS[2] then raise_fence(ARGV[2], ARGV[3]) end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  notify_release(ARGV[1])
  return 1
end
if ARGV[4] then redis.call('SET', KEYS[1] .. ':gone:' .. ARGV[1], '1', 'PX', ARGV[4]) end
return 0
