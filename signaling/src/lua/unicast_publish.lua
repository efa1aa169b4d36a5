-- Unicast: publish to one waiter, picked at random among the channels under the prefix.
-- KEYS[1]  the unicast prefix (its hash tag is every waiter channel's: the shard on a Cluster)
-- ARGV[1]  channel prefix   ARGV[2]  random number   ARGV[3]  message
-- ARGV[4]  length of a waiter channel's name   ARGV[5]  CHANNELS or SHARDCHANNELS
-- Reply    receivers of the publish (0: no waiter)
-- Cost     O(channels on the server) (PUBSUB CHANNELS with a pattern)
local channels = redis.call('PUBSUB', ARGV[5], ARGV[1] .. '*')
local want = tonumber(ARGV[4])
local picked = {}
for _, c in ipairs(channels) do
  if #c == want then picked[#picked + 1] = c end
end
if #picked == 0 then return 0 end
local index = math.floor(tonumber(ARGV[2])) % #picked + 1
return redis.call('PUBLISH', picked[index], ARGV[3])
