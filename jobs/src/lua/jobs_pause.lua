-- Pauses or resumes claims: `<base>:paused` exists while paused.
-- KEYS[1]  the queue's base key
-- ARGV[1]  '1' pause, '0' resume
-- ARGV[2]  the wake channel (published on resume, so idle workers claim at once)
-- Reply    1 when the state changed, 0 when it already was so
-- Cost     O(1).
if ARGV[1] == '1' then
  return redis.call('SET', base .. ':paused', '1', 'NX') and 1 or 0
end
if redis.call('DEL', base .. ':paused') == 0 then return 0 end
redis.call('PUBLISH', ARGV[2], 'w')
return 1
