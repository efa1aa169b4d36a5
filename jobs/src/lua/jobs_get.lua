-- One job's fields, result and due time. Reads only.
-- KEYS[1]  the queue's base key
-- ARGV[1]  job id
-- Reply    {fields as HGETALL, result or false, due ms in `:delayed` or false, the
--           dependencies it still waits for, the jobs waiting for it}
-- Cost     O(1 + d) (a job hash has a bounded number of fields; d dependencies/dependents).
return {redis.call('HGETALL', jk(ARGV[1])), redis.call('GET', base .. ':result:' .. ARGV[1]),
        redis.call('ZSCORE', base .. ':delayed', ARGV[1]),
        redis.call('SMEMBERS', base .. ':deps:' .. ARGV[1]),
        redis.call('SMEMBERS', base .. ':dependents:' .. ARGV[1])}
