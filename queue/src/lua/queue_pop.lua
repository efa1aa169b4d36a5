-- Renews the consumer's lease, then moves a message to its processing list.
-- KEYS[1]  consumers set   KEYS[2]  heartbeat   KEYS[3]  ready list   KEYS[4]  processing list
-- ARGV[1]  consumer id   ARGV[2]  lease in ms
-- Reply    the message, or nil
-- Cost     O(1)
redis.call('SADD', KEYS[1], ARGV[1])
redis.call('SET', KEYS[2], '1', 'PX', ARGV[2])
return redis.call('LMOVE', KEYS[3], KEYS[4], 'RIGHT', 'LEFT')
