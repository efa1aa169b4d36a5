#pragma once
// Plain-hiredis reference clients: the same Redis commands as the lock, no library logic.

#include <hiredis/hiredis.h>

#include <cstdint>
#include <string>
#include <vector>

namespace lock_bench {

// The compare-and-delete every reference uses to release.
inline constexpr const char* raw_release_lua =
    "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0";

redisContext* raw_connect(std::uint16_t port);
// SCRIPT LOAD of raw_release_lua; returns its SHA1.
std::string raw_load_release(redisContext* c);

// One blocking connection: SET key token NX PX ttl; true when acquired.
bool raw_try(redisContext* c, const std::string& key, const std::string& token,
             const std::string& ttl_ms);
// EVALSHA release.
void raw_release(redisContext* c, const std::string& sha, const std::string& key,
                 const std::string& token);

// N connections driven at once: sends to all, returns as soon as `need` replies of this round
// arrived (later replies are skipped at the start of the next round). Counts OK/1 replies.
class raw_quorum {
public:
    explicit raw_quorum(const std::vector<std::uint16_t>& ports);
    ~raw_quorum();
    // Sends argv to all nodes; waits until `quorum` said OK / 1 or enough said anything else
    // that `quorum` is impossible; returns how many said OK / 1.
    std::size_t round(const std::vector<std::string>& argv, std::size_t quorum);
    std::size_t size() const { return cs_.size(); }
    redisContext* node(std::size_t i) { return cs_[i]; }

private:
    std::vector<redisContext*> cs_;
    std::vector<std::size_t> stale_;  // replies of earlier rounds still to skip, per node
};

}  // namespace lock_bench
