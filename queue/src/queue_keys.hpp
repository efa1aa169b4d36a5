#pragma once
// The keys of one reliable queue, named in one place for reliable_queue and inspect_queue().

#include <string>
#include <string_view>

namespace redcoord::detail {

struct queue_keys {
    std::string ready;              // the queue (LPUSH in, taken from the right)
    std::string dead;               // the dead-letter list
    std::string consumers;          // set of registered consumer ids
    std::string processing_prefix;  // + consumer id: that consumer's processing list
    std::string heartbeat_prefix;   // + consumer id: that consumer's lease key
};

// Does not validate `name`.
[[nodiscard]] queue_keys make_queue_keys(std::string_view prefix, std::string_view name);

}  // namespace redcoord::detail
