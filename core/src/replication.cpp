#include <redcoord/core/errors.hpp>
#include <redcoord/core/keys.hpp>
#include <redcoord/core/replication.hpp>

#include <string>

namespace redcoord {

std::size_t wait_replicas(connection& c, std::size_t replicas, std::chrono::milliseconds timeout) {
    if (timeout.count() <= 0) throw invalid_argument("wait_replicas: timeout must be > 0 ms");
    if (replicas == 0) throw invalid_argument("wait_replicas: replicas must be >= 1");
    const std::string n = std::to_string(replicas), t = std::to_string(timeout.count());
    const std::string_view argv[] = {"WAIT", n, t};
    // Zero command_timeout means "wait forever" for the connection; keep that meaning.
    const auto ct = c.where().command_timeout;
    auto r = c.command_for(ct.count() == 0 ? ct : timeout + ct, argv);
    auto acked = r.integer();
    return acked < 0 ? 0 : static_cast<std::size_t>(acked);
}

std::size_t replication_barrier(connection_pool& pool, std::size_t replicas, std::chrono::milliseconds timeout) {
    if (timeout.count() <= 0) throw invalid_argument("replication_barrier: timeout must be > 0 ms");
    if (replicas == 0) throw invalid_argument("replication_barrier: replicas must be >= 1");
    auto c = pool.borrow();
    // PUBLISH is propagated to replicas, so it moves this client's replication offset
    // past every write applied before it, without creating a key.
    (void)c->command({"PUBLISH", std::string(default_prefix) + "replication-barrier", ""});
    return wait_replicas(*c, replicas, timeout);
}

}  // namespace redcoord
