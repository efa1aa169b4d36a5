#pragma once
// Private to core: replica discovery with the reason it found none, for the pub/sub
// multiplexer, which logs a discovery the ACL user may not run (discover_replicas() itself
// has no log to write to).

#include "runtime_services.hpp"

#include <redcoord/core/endpoint.hpp>

#include <memory>
#include <string>
#include <vector>

namespace redcoord {
class runtime;
}

namespace redcoord::detail {

// discover_replicas(), with `refused` set instead of a reply_error when the server refused
// both ways of asking; a Sentinel endpoint's sentinels are asked through pools of `rt` (null:
// runtime::shared()). @throws as discover_replicas().
replica_discovery discover_replicas_of(const endpoint& ep, std::shared_ptr<runtime> rt = {});

}  // namespace redcoord::detail
