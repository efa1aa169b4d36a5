#pragma once
// The lock_core behind a public lock class, for the lock part's own free functions (the
// asynchronous initiations of async.hpp). Each class's accessor is defined beside its impl.

#include <redcoord/lock/distributed_lock.hpp>
#include <redcoord/lock/fair_lock.hpp>
#include <redcoord/lock/redlock.hpp>

namespace redcoord::detail {

class lock_core;
class fair_core;

struct lock_access {
    static lock_core& core(distributed_lock& l);
    static lock_core& core(redlock& l);
    static fair_core& core(fair_lock& l);
};

}  // namespace redcoord::detail
