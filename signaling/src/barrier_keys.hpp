#pragma once
// The keys of one barrier, named in one place for barrier and inspect_barrier().

#include <string>
#include <string_view>

namespace redcoord::detail {

struct barrier_keys {
    std::string state;    // hash: gen, parties; also the wake-up channel's name
    std::string arrived;  // sorted set: member -> lease end (server ms)
    std::string passed;   // sorted set: members counted in recently passed generations
};

// Does not validate `name`.
[[nodiscard]] barrier_keys make_barrier_keys(std::string_view prefix, std::string_view name);

}  // namespace redcoord::detail
