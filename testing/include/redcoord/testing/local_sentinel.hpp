#pragma once
/// @file
/// A real Sentinel-monitored service for tests and benchmarks: one master, N replicas and
/// M `redis-sentinel` processes on loopback, with real failovers (redis.io: "High availability
/// with Redis Sentinel").

#include <redcoord/core/endpoint.hpp>
#include <redcoord/core/export.hpp>
#include <redcoord/core/reply.hpp>
#include <redcoord/testing/local_server.hpp>
#include <redcoord/testing/process.hpp>

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

REDCOORD_API_BEGIN
namespace redcoord::testing {

/// The redis-sentinel binary to use: $REDCOORD_REDIS_SENTINEL, or `redis-sentinel` on PATH.
/// @throws redcoord::error naming both places when neither is there.
[[nodiscard]] std::string find_redis_sentinel();

/// How to start a local Sentinel-monitored service.
struct local_sentinel_options {
    std::string service = "redcoord";  ///< The monitored master's name.
    std::size_t replicas = 1;          ///< Replicas of the master (>= 1 for failover tests).
    std::size_t sentinels = 3;         ///< redis-sentinel processes. Must be >= 1.
    /// Sentinels that must agree the master is down; zero means a majority of `sentinels`.
    std::size_t quorum = 0;
    /// `down-after-milliseconds`: silence before a sentinel calls the master down. Must be > 0.
    std::chrono::milliseconds down_after{500};
    /// `failover-timeout`: bound of one failover attempt (a failed election retries after twice
    /// this). Must be > 0.
    std::chrono::milliseconds failover_timeout{2000};
    /// requirepass of the sentinels (and the password they use between themselves); empty: none.
    std::string sentinel_password;
    /// Options of the master and replicas (their `password` becomes `sentinel auth-pass`).
    server_options server{};
    /// How long the constructor waits for the sentinels to see every replica and each other.
    std::chrono::milliseconds start_timeout{15000};
};

/// A master, its replicas and the sentinels that monitor them, all real processes.
///
/// Every sentinel gets its own configuration file (Sentinel rewrites it) in a fresh temporary
/// directory, a fixed `myid`, and `known-replica` / `known-sentinel` lines, so the group is
/// ready for a failover at once instead of after the hello-message discovery. Faults are
/// real: kill_master() is SIGKILL, failover() is `SENTINEL FAILOVER`. Everything is stopped
/// by PID on destruction (sentinels first, so they do not react to the teardown).
///
/// @par Thread safety
/// None; drive it from one thread.
///
/// @par Errors
/// The constructor throws redcoord::error when a binary is missing or a server or sentinel does not
/// come up in time; the destructor never throws.
///
/// @par Cost
/// 1 + replicas redis-server processes and `sentinels` redis-sentinel processes, each in its own
/// temporary directory.
class local_sentinel {
public:
    /// Starts the servers and sentinels and waits until every sentinel knows all replicas
    /// (link up) and the other sentinels.
    /// @throws redcoord::error when a binary is missing or something does not come up in time.
    explicit local_sentinel(local_sentinel_options opts = {});
    ~local_sentinel();
    local_sentinel(const local_sentinel&) = delete;
    local_sentinel& operator=(const local_sentinel&) = delete;

    /// `redis-sentinel://` endpoint naming all sentinels and the service, with both passwords.
    [[nodiscard]] redcoord::endpoint endpoint() const;
    /// The same as a URI, for example `redis-sentinel://127.0.0.1:p1,127.0.0.1:p2/redcoord`
    /// (passwords are not included; use endpoint() for them).
    [[nodiscard]] std::string url() const;
    /// The options the service was started with.
    [[nodiscard]] const local_sentinel_options& options() const noexcept { return opts_; }
    /// How many sentinels monitor the service.
    [[nodiscard]] std::size_t sentinel_count() const noexcept { return sentinels_.size(); }
    /// Address of sentinel `i` (0-based).
    [[nodiscard]] host_port sentinel_address(std::size_t i) const;

    /// Every data server (index 0 is the initial master).
    [[nodiscard]] const std::vector<std::unique_ptr<local_server>>& servers() const noexcept {
        return servers_;
    }
    /// The data server at `addr`, or null.
    [[nodiscard]] local_server* server(const host_port& addr) const noexcept;
    /// The master most reachable sentinels report now.
    /// @throws redcoord::error when no sentinel answers.
    [[nodiscard]] host_port master_address() const;
    /// The data server that master_address() names.
    [[nodiscard]] local_server& master() const;

    /// SIGKILLs the current master; returns its address.
    host_port kill_master();
    /// Asks a sentinel for a manual failover (`SENTINEL FAILOVER`); returns the old master.
    host_port failover();
    /// Waits until a running server other than `old` answers `ROLE` with master (the replica
    /// was promoted) and returns it, or throws redcoord::error after `timeout`.
    host_port wait_promoted(const host_port& old,
                            std::chrono::milliseconds timeout = std::chrono::milliseconds(20000));
    /// Waits until every running sentinel reports a master other than `old` that answers
    /// `ROLE` with master, and returns it; throws redcoord::error after `timeout`.
    host_port wait_switched(const host_port& old,
                            std::chrono::milliseconds timeout = std::chrono::milliseconds(20000));

    /// SIGKILLs sentinel `i`.
    void kill_sentinel(std::size_t i) noexcept;
    /// Sends one command to sentinel `i` on a fresh connection.
    reply sentinel_command(std::size_t i, std::initializer_list<std::string_view> argv) const;

private:
    void start_sentinels();
    void wait_ready();

    local_sentinel_options opts_;
    std::filesystem::path dir_;
    std::vector<std::unique_ptr<local_server>> servers_;
    std::vector<std::uint16_t> sentinel_ports_;
    std::vector<std::unique_ptr<process>> sentinels_;
};

}  // namespace redcoord::testing

REDCOORD_API_END
