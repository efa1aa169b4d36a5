-- Extends a holding of any lock kind (and the release notice a waiter asked for on it).
-- KEYS[1]  lock key
-- ARGV[1]  token   ARGV[2]  TTL in ms
-- Reply    1 when extended, 0 when the key is no longer ours
-- Cost     O(1)
if redis.call('GET', KEYS[1]) == ARGV[1] then
  local nk = KEYS[1] .. ':notice'
  if redis.call('GET', nk) == ARGV[1] then redis.call('PEXPIRE', nk, ARGV[2]) end
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
