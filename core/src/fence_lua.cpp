#include <redcoord/core/detail/fence_lua.hpp>

namespace redcoord::detail {

const char* const next_fence_lua = R"lua(
local function next_fence(ttl)
  local f = redis.call('INCR', KEYS[2])
  if f == 1 then
    local t = redis.call('TIME')
    f = tonumber(t[1]) * 1000000 + tonumber(t[2])
    redis.call('SET', KEYS[2], string.format('%.0f', f), 'PX', ttl)
  end
  return f
end
)lua";

}  // namespace redcoord::detail
