#pragma once
// The limit part's Lua scripts, embedded from limit/src/lua/*.lua at configure time (see
// limit/CMakeLists.txt). Each file's header comment gives its keys, arguments and reply.

namespace redcoord::detail {

extern const char* const gcra_lua;
extern const char* const window_log_lua;
extern const char* const semaphore_acquire_lua;
extern const char* const semaphore_release_lua;
extern const char* const semaphore_extend_lua;
extern const char* const rwlock_read_lua;
extern const char* const rwlock_write_lua;
extern const char* const rwlock_release_lua;
extern const char* const rwlock_extend_lua;
extern const char* const rwlock_leave_lua;

}  // namespace redcoord::detail
