-- Registers or replaces a repeatable job; a new one counts ticks from now
-- (no backfill), a replaced one keeps its last tick.
-- KEYS[1]  the queue's base key
-- ARGV[1]  repeat name   ARGV[2]  payload   ARGV[3]  options `o`   ARGV[4]  timeout ms
-- ARGV[5]  deadline ms   ARGV[6]  every ms (0: cron)   ARGV[7]  cron expression
-- ARGV[8]  time zone     ARGV[9]  missed-ticks policy ('skip' | 'catch_up')
-- Reply    1 when new, 0 when replaced
-- Cost     O(1).
local rk = base .. ':repeat:' .. ARGV[1]
local new = redis.call('SADD', base .. ':repeats', ARGV[1])
redis.call('HSET', rk, 'payload', ARGV[2], 'o', ARGV[3], 'timeout', ARGV[4], 'deadline', ARGV[5],
           'every', ARGV[6], 'cron', ARGV[7], 'tz', ARGV[8], 'missed', ARGV[9])
if redis.call('HEXISTS', rk, 'last') == 0 then redis.call('HSET', rk, 'last', int(now_ms())) end
return new
