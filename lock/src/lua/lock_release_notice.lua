-- Fragment, prepended to every lock script that deletes a holding (scripts.hpp).
-- Defines notify_release(token): when a waiter asked for the release of `token` (the notice
-- key KEYS[1]:notice holds it), drops the notice and publishes on KEYS[1]:released.
-- KEYS[1]  the lock key of the including script
-- Cost     O(1)
local function notify_release(token)
  local nk = KEYS[1] .. ':notice'
  if redis.call('GET', nk) == token then
    redis.call('DEL', nk)
    redis.call('PUBLISH', KEYS[1] .. ':released', 'released')
  end
end
