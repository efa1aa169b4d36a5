-- Deletes finished jobs of one state that finished at least `age` ago (their
-- index score), oldest first, with their results.
-- KEYS[1]  the queue's base key
-- ARGV[1]  state ('completed' | 'failed' | 'dead')   ARGV[2]  age ms   ARGV[3]  at most (<= 1000)
-- Reply    how many were deleted
-- Cost     O(n log N) for n deleted.
local index = base .. ':' .. ARGV[1]
local ids = redis.call('ZRANGEBYSCORE', index, '-inf', int(now_ms() - tonumber(ARGV[2])),
                       'LIMIT', 0, tonumber(ARGV[3]))
if #ids == 0 then return 0 end
local keys = {}
for _, id in ipairs(ids) do
  keys[#keys + 1] = jk(id)
  keys[#keys + 1] = base .. ':result:' .. id
end
redis.call('DEL', unpack(keys))
redis.call('ZREM', index, unpack(ids))
return #ids
