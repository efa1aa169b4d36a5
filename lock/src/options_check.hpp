#pragma once
// The option checks of the lock classes' constructors (and of their unit tests): each throws
// invalid_argument naming the offending field. Not part of the API.

#include <redcoord/lock/distributed_lock.hpp>
#include <redcoord/lock/fair_lock.hpp>
#include <redcoord/lock/redlock.hpp>

#include <cstddef>

namespace redcoord::detail {

void validate(const lock_options& o);
// For a redlock over `n` nodes.
void validate(const redlock_options& o, std::size_t n);
void validate(const fair_lock_options& o);

}  // namespace redcoord::detail
