#pragma once
/// @file
/// Errors of the lock part. "Not acquired within the wait" is never an error: it is a
/// `false` / `std::nullopt` result. These are for states where a throw is the right shape.

#include <redcoord/core/errors.hpp>
#include <redcoord/core/export.hpp>

REDCOORD_API_BEGIN
namespace redcoord {

/// The caller asked for something that needs the lock to be held (check_held(), an
/// extension through a guard) but the lock is no longer ours: its TTL ran out, it was
/// deleted, or another holder owns the resource now.
class lock_lost : public error {
public:
    using error::error;
};

/// Too many Redlock nodes were down, hung, still connecting or erroring for a majority
/// (N/2+1) to be possible at all: distinct from "the resource is held by someone else", which
/// is a `false` result. Thrown by a zero wait at once, by a timed wait only once its deadline
/// has passed with the last attempt still short of a majority; never by lock().
class quorum_unreachable : public connection_error {
public:
    using connection_error::connection_error;
};

}  // namespace redcoord

REDCOORD_API_END
