#pragma once
// The signaling part's scripts (sources in signaling/src/lua/), each defined beside its
// primitive: for the ACL rules and the test that loads every script on a server.

#include <redcoord/core/script.hpp>

#include <vector>

namespace redcoord::detail {

const script& unicast_script();         // signal_hub.cpp
const script& barrier_script();         // barrier.cpp
const script& double_barrier_script();  // double_barrier.cpp
const script& latch_script();           // latch.cpp

std::vector<const script*> signaling_scripts();  // acl.cpp

}  // namespace redcoord::detail
