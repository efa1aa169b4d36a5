// One process of the F9 test (issue 33): runs `n` x lock()/unlock() on a lock of the given
// kind, then SIGKILLs itself at once, as a crash right after unlock() returned would. The
// parent then checks how soon another process can take the lock.
//   lock_kill_child single|redlock|fair <n> <resource> <url>...
#include <redcoord/core/endpoint.hpp>
#include <redcoord/core/pool.hpp>
#include <redcoord/lock/distributed_lock.hpp>
#include <redcoord/lock/fair_lock.hpp>
#include <redcoord/lock/redlock.hpp>

#include <csignal>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

int main(int argc, char** argv) {
    if (argc < 5) {
        std::fprintf(stderr,
                     "usage: lock_kill_child single|redlock|fair <n> <resource> <url>...\n");
        return 2;
    }
    const std::string kind = argv[1];
    const int n = std::stoi(argv[2]);
    const std::string resource = argv[3];
    std::vector<std::unique_ptr<redcoord::connection_pool>> pools;
    std::vector<redcoord::connection_pool*> nodes;
    for (int i = 4; i < argc; ++i) {
        pools.push_back(
            std::make_unique<redcoord::connection_pool>(redcoord::parse_endpoint(argv[i])));
        nodes.push_back(pools.back().get());
    }
    using namespace std::chrono_literals;
    auto loop = [n](auto& l) {
        for (int i = 0; i < n; ++i) {
            l.lock();
            l.unlock();
        }
    };
    if (kind == "single") {
        redcoord::distributed_lock l(*nodes.front(), resource, {.timing = {.ttl = 30s}});
        loop(l);
        std::raise(SIGKILL);
    } else if (kind == "redlock") {
        redcoord::redlock l(nodes, resource, {.timing = {.ttl = 30s}});
        loop(l);
        std::raise(SIGKILL);
    } else if (kind == "fair") {
        redcoord::fair_lock l(*nodes.front(), resource, {.timing = {.ttl = 30s}});
        loop(l);
        std::raise(SIGKILL);
    }
    return 2;
}
