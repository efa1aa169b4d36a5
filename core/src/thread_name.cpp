#include <redcoord/core/detail/thread_name.hpp>

#include <pthread.h>

#include <cstring>
#include <string>

namespace redcoord::detail {

void name_this_thread(const char* name) noexcept {
    // The kernel keeps 15 characters and refuses a longer name outright (ERANGE).
    char cut[16] = {};
    std::strncpy(cut, name, sizeof cut - 1);
    (void)pthread_setname_np(pthread_self(), cut);
}

}  // namespace redcoord::detail
