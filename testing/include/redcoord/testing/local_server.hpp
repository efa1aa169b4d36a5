#pragma once
/// @file
/// Real redis-server processes for tests, benchmarks and the demo (docs/architecture.md).

#include <redcoord/core/endpoint.hpp>
#include <redcoord/core/export.hpp>
#include <redcoord/core/pool.hpp>
#include <redcoord/core/reply.hpp>
#include <redcoord/testing/process.hpp>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

REDCOORD_API_BEGIN
namespace redcoord::testing {

/// TLS of a test server (Redis's `tls-*` directives): the server then listens on a TLS port
/// only, and its replicas and sentinels speak TLS to it.
struct server_tls {
    std::filesystem::path cert_file;  ///< The server's certificate (PEM).
    std::filesystem::path key_file;   ///< Its private key (PEM).
    std::filesystem::path ca_file;    ///< CA that signs the client certificates it accepts.
    bool auth_clients = false;        ///< `tls-auth-clients yes`: a client certificate is required.
    /// How endpoint(), url() and the harness's own connections speak TLS (`enabled` is set
    /// for them).
    redcoord::tls_options client;
};

/// How to start a local redis-server.
struct server_options {
    bool appendonly = false;               ///< Enable AOF persistence (off: no persistence at all).
    std::string appendfsync = "everysec";  ///< AOF fsync policy when appendonly is on.
    std::string password;  ///< requirepass (and masterauth for replicas); empty: none.
    /// Extra configuration directives, written verbatim as `name value` lines.
    std::vector<std::pair<std::string, std::string>> config;
    /// TLS instead of plaintext; none by default, or the process's test certificates
    /// (test_server_tls) when the environment sets REDCOORD_TEST_TLS=1.
    std::optional<server_tls> tls;
    /// How long start() and restart() wait for the server to answer PING.
    std::chrono::milliseconds start_timeout{10000};
    /// Programs the server is started through, each running the next (same PID, as they
    /// exec): e.g. `{"ip", "netns", "exec", NS}` runs it in a network namespace,
    /// `{"faketime", "-f", "+0 x1.5"}` runs its clock 1.5 times as fast (libfaketime). Empty:
    /// started directly.
    std::vector<std::string> launcher;
    /// The addresses it listens on (redis.conf `bind`).
    std::string bind = "127.0.0.1";
    /// Also listen on a Unix socket in its directory, and reach it there for the start-up
    /// check, endpoint(), url() and command(): for a server in a network namespace, which the
    /// test process cannot reach over TCP. The file system is shared by all namespaces.
    bool control_socket = false;
    /// The TCP port; 0: a free one on 127.0.0.1 (free_port()). A server alone in its network
    /// namespace may take any port, since nothing else listens there.
    std::uint16_t port = 0;
    /// Run as a sentinel (`redis-server CONF --sentinel`); `config` carries its `sentinel ...`
    /// directives. Sentinel rewrites its configuration file as it learns, and a restart keeps
    /// what it learnt.
    bool sentinel = false;
};

/// The redis-server binary to use: $REDCOORD_REDIS_SERVER, or `redis-server` on PATH.
/// @throws redcoord::error naming both places when neither is there.
[[nodiscard]] std::string find_redis_server();

/// A free TCP port on 127.0.0.1 (bound and released; a caller retries on the rare clash).
[[nodiscard]] std::uint16_t free_port();

class test_certificates;

/// TLS options for a test server using `certs`' server certificate, trusting its CA for
/// clients (`auth_clients` off), and a client side that trusts the CA.
[[nodiscard]] server_tls test_server_tls(const test_certificates& certs);

/// Gives `opts` the process's test certificates (test_server_tls) when it has no TLS options
/// and the environment sets REDCOORD_TEST_TLS=1; local_server does it for itself, a group of
/// servers (local_cluster) does it first to configure what they share.
void apply_tls_default(server_options& opts);

/// Writes the `port 0` / `tls-port` / `tls-*` directives of a server or sentinel on `port`.
void write_tls_config(std::ostream& out, std::uint16_t port, const server_tls& tls);

/// One redis-server on a free loopback port in a fresh temporary directory.
///
/// Faults are real: kill() is SIGKILL, pause()/resume() are SIGSTOP/SIGCONT, restart() starts
/// the same configuration (and data directory) on the same port. Every process is stopped by
/// PID when the object is destroyed, also during stack unwinding after a failed test, and the
/// temporary directory is removed.
///
/// @par Thread safety
/// None; drive it from one thread.
///
/// @par Errors
/// Starting (constructor, restart()) throws redcoord::error when redis-server cannot be started or
/// does not answer in time; kill(), pause(), resume() and the destructor never throw.
///
/// @par Cost
/// One redis-server process and a temporary directory; starting waits until the server answers
/// PING.
class local_server {
public:
    /// Starts a master and waits until it answers.
    /// @throws redcoord::error when redis-server is missing or does not come up.
    explicit local_server(server_options opts = {});
    ~local_server();
    local_server(const local_server&) = delete;
    local_server& operator=(const local_server&) = delete;

    /// Starts a replica of `master` and waits until its initial sync is done.
    static std::unique_ptr<local_server> replica_of(const local_server& master,
                                                    server_options opts = {});
    /// Same, and waits until the master's WAIT counts it: the master counts a replica only
    /// once it is online, and the replica acknowledges only after loading the initial
    /// snapshot. For tests of WAIT-backed writes. Meant for the master's first replica (an
    /// earlier one would satisfy the WAIT).
    /// @throws redcoord::error when the replica never acknowledges a write.
    static std::unique_ptr<local_server> acknowledging_replica_of(const local_server& master,
                                                                  server_options opts = {});

    /// The server's loopback port (its TLS port when TLS is on).
    [[nodiscard]] std::uint16_t port() const noexcept { return port_; }
    /// The id of the server process started last (it may have exited: running()).
    [[nodiscard]] pid_t pid() const noexcept;
    /// `127.0.0.1` and port().
    [[nodiscard]] host_port address() const { return {"127.0.0.1", port_}; }
    /// An endpoint for this server (with the password when one is set); its Unix socket with
    /// server_options::control_socket.
    [[nodiscard]] redcoord::endpoint endpoint() const;
    /// `redis://[:password@]127.0.0.1:port` (`rediss://...?ca_file=...` with TLS;
    /// `unix://...` with server_options::control_socket).
    [[nodiscard]] std::string url() const;
    /// The server's temporary directory (configuration, data, log).
    [[nodiscard]] const std::filesystem::path& dir() const noexcept { return dir_; }
    /// The options the server was started with.
    [[nodiscard]] const server_options& options() const noexcept { return opts_; }
    /// True while the process lives (reaps it when it has exited).
    [[nodiscard]] bool running() noexcept;

    /// SIGKILL and reap; the data directory stays for restart().
    void kill() noexcept;
    /// SIGSTOP: the server keeps its sockets but answers nothing.
    void pause() noexcept;
    /// SIGCONT after pause().
    void resume() noexcept;
    /// Starts the server again on the same port and directory (after kill(), or kills first).
    void restart();
    /// REPLICAOF NO ONE: makes a replica a master.
    void promote();
    /// REPLICAOF master: makes this server a replica of `master` (no wait for sync).
    void replicate(const local_server& master);
    /// Waits until this replica reports `master_link_status:up`.
    void wait_synced(std::chrono::milliseconds timeout = std::chrono::milliseconds(10000));

    /// Sends one command on a fresh connection (test set-up and checks).
    reply command(std::initializer_list<std::string_view> argv) const;
    /// Every key that would stay for ever (PTTL -1), found by SCAN over the whole server on
    /// one connection: the keyspace-hygiene check of the primitives' tests.
    [[nodiscard]] std::vector<std::string> keys_without_ttl() const;
    /// How many times `command` (lower case, for example "evalsha") has run on this server, from
    /// INFO commandstats; 0 when never.
    [[nodiscard]] long long command_calls(std::string_view command) const;

private:
    void write_config();
    void start();

    server_options opts_;
    std::filesystem::path dir_;
    std::uint16_t port_ = 0;
    std::optional<host_port> master_of_;
    std::unique_ptr<process> proc_;
};

/// A master, its acknowledging replica and a pool on the master: the set-up of tests of
/// WAIT-backed writes. The replica is resumed on destruction (harmless when not paused), so
/// a test that paused it never leaves a stopped process behind.
struct master_and_replica {
    local_server master;  ///< The master.
    /// Its replica, acknowledging writes (WAIT 1 succeeds once it is up).
    std::unique_ptr<local_server> replica = local_server::acknowledging_replica_of(master);
    connection_pool pool{master.endpoint()};  ///< A pool on the master.
    ~master_and_replica() { replica->resume(); }
};

/// Starts `n` independent masters (Redlock's N nodes).
[[nodiscard]] std::vector<std::unique_ptr<local_server>> start_masters(std::size_t n,
                                                                       server_options opts = {});

struct cert_pair;

/// Options for a test server on a TLS port that presents `served` (one of `certs`' pairs),
/// with `auth_clients` asking for `certs`' client certificate (which the harness then uses).
/// The harness's own start-up check verifies the certificate only when it is certs.server():
/// the bad ones are what a test is about.
[[nodiscard]] server_options tls_server_options(const test_certificates& certs,
                                                const cert_pair& served, bool auth_clients = false);

/// `s`'s endpoint over TLS by address (127.0.0.1, the name its good certificate carries),
/// trusting `certs`' CA, with a 2 s connect deadline: what a TLS test connects with before it
/// changes the part it checks.
[[nodiscard]] redcoord::endpoint tls_endpoint(const test_certificates& certs,
                                              const local_server& s);

}  // namespace redcoord::testing

REDCOORD_API_END
