#pragma once
/// @file
/// Test hooks of connection_pool. Internal to redcoord; not a stable API.

#include <redcoord/core/connection.hpp>
#include <redcoord/core/export.hpp>
#include <redcoord/core/pool.hpp>

#include <functional>
#include <memory>

REDCOORD_API_BEGIN
namespace redcoord::detail {

/// Replaces how `pool` opens new connections, e.g. with one that sleeps first to stand for a
/// connect on a loaded machine; an empty function restores the default. Thread-safe.
void set_pool_connector(connection_pool& pool,
                        std::function<std::unique_ptr<connection>()> connector);

}  // namespace redcoord::detail

REDCOORD_API_END
