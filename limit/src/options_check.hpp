#pragma once
// The option checks of the limit part's constructors (and of its unit tests): each throws
// invalid_argument naming the offending field. Not part of the API.

#include <redcoord/limit/rate_limiter.hpp>
#include <redcoord/limit/rw_lock.hpp>
#include <redcoord/limit/semaphore.hpp>
#include <redcoord/limit/sliding_window_limiter.hpp>

namespace redcoord::detail {

void validate(const rate_limiter_options& o);
void validate(const sliding_window_options& o);
void validate(const semaphore_options& o);
void validate(const rw_lock_options& o);

}  // namespace redcoord::detail
