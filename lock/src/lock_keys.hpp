#pragma once
// The keys of one lock resource, named in one place for the lock objects and inspect_lock().

#include <string>
#include <string_view>

namespace redcoord::detail {

struct lock_keys {
    std::string key;             // the holder's token
    std::string notice_key;      // the token whose release a waiter wants to hear of
    std::string fence_key;       // the fencing counter
    std::string turn_key;        // bounded unfairness: whose turn runs
    std::string waiting_key;     // bounded unfairness: who asked for the next turn
    std::string fair_queue_key;  // fair_lock's FIFO of waiter ids
};

// Does not validate `resource` (the callers do, with their own wording).
[[nodiscard]] lock_keys make_lock_keys(std::string_view prefix, std::string_view resource);

}  // namespace redcoord::detail
