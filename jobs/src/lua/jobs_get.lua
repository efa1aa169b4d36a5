-- One job's fields, result and due time. Reads only.
-- KEYS[1]  the queue's base key
-- ARGV[1]  job id
-- Reply    {fields as HGETALL, result or false, due ms in `:delayed` or false}
-- Cost     O(1) (a job hash has a bounded number of fields).
return {redis.call('HGETALL', jk(ARGV[1])), redis.call('GET', base .. ':result:' .. ARGV[1]),
        redis.call('ZSCORE', base .. ':delayed', ARGV[1])}
