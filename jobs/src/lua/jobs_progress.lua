-- Records a held job's progress (token-checked) and announces it.
-- KEYS[1]  the queue's base key
-- ARGV[1]  job id   ARGV[2]  claim token   ARGV[3]  progress (any bytes)
-- ARGV[4]  events channel   ARGV[5]  the progress event (enveloped)
-- Reply    1, or 0 when the token no longer holds the job
-- Cost     O(log N).
if not redis.call('ZSCORE', base .. ':active', active_member(ARGV[2], ARGV[1])) then return 0 end
redis.call('HSET', jk(ARGV[1]), 'progress', ARGV[3])
redis.call('PUBLISH', ARGV[4], ARGV[5])
return 1
