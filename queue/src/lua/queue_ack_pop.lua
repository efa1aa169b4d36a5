-- Acks one delivery, then moves the next message to the consumer's processing list: a
-- worker's ack and its next pop in one round trip (never blocks).
-- KEYS[1]  consumers set   KEYS[2]  heartbeat   KEYS[3]  ready list
-- KEYS[4]  processing list the next message goes to (the current consumer id's)
-- KEYS[5]  processing list of the acked delivery (its consumer id's; may be KEYS[4])
-- ARGV[1]  the acked element (exact bytes)   ARGV[2]  '1': renew the lease before the move
-- ARGV[3]  consumer id   ARGV[4]  lease in ms
-- Reply    {1 | 0 (the element was no longer there), the next message or false}
-- Cost     O(N) in the acked list's length (LREM), else O(1)
local acked = redis.call('LREM', KEYS[5], 1, ARGV[1])
if ARGV[2] == '1' then
  redis.call('SADD', KEYS[1], ARGV[3])
  redis.call('SET', KEYS[2], '1', 'PX', ARGV[4])
end
return {acked, redis.call('LMOVE', KEYS[3], KEYS[4], 'RIGHT', 'LEFT')}
