#pragma once
// The election part's scripts (sources in election/src/lua/): for the ACL rules and the test
// that loads every script on a server.

#include <redcoord/core/script.hpp>

#include <vector>

namespace redcoord::detail {

std::vector<const script*> election_scripts();  // master_selector.cpp

}  // namespace redcoord::detail
