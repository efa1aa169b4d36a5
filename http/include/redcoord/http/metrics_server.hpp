#pragma once
/// @file
/// A small HTTP server for Prometheus scrapes and health probes: `GET /metrics` answers with a
/// metrics_registry's text (format 0.0.4), `/healthz` and `/readyz` with the process's
/// liveness and its Redis endpoints' readiness, and extra handlers (the dashboard) with the
/// rest. Built on Boost.Beast; one thread of its own, plus one for readiness probes when
/// endpoints to probe are configured.

#include <redcoord/core/endpoint.hpp>
#include <redcoord/core/export.hpp>
#include <redcoord/core/metrics.hpp>
#include <redcoord/core/pool.hpp>
#include <redcoord/http/route.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

REDCOORD_API_BEGIN
namespace redcoord {

/// Where and how metrics_server listens.
struct metrics_server_options {
    /// The address to bind: "127.0.0.1" (loopback only, the default), "0.0.0.0" or "::" (every
    /// interface), or one interface's address.
    std::string address = "127.0.0.1";
    /// The TCP port; 0 lets the system pick a free one (read it from metrics_server::port()).
    std::uint16_t port = 0;
    /// The path served; other paths get 404.
    std::string path = "/metrics";
    /// How long a connection may take to send a request or read the answer before it is
    /// closed (a stuck client never holds the server).
    std::chrono::milliseconds io_timeout{10000};
    /// Redis servers that `/readyz` PINGs; the server opens a small pool of its own to each
    /// (on the process's shared runtime). Passwords never appear in its answers.
    std::vector<endpoint> ready_endpoints;
    /// Pools that `/readyz` PINGs as well, shared with the service (the probe then borrows
    /// the service's own connections). A Cluster pool (or endpoint) is probed on every master
    /// of the slot map it last learned, each through a pool of its own (master_pools); when
    /// the map cannot be learned, through the cluster pool itself.
    std::vector<std::shared_ptr<connection_pool>> ready_pools;
    /// How long `/readyz` waits for every PONG: one deadline for all endpoints, which are
    /// PINGed at once. Must be > 0.
    std::chrono::milliseconds ready_timeout{1000};
    /// Further routes, asked in order for every path other than `path`, `/healthz` and
    /// `/readyz`; the first that answers wins, and a path none answers gets 404.
    std::vector<http_handler> handlers;
    /// Largest request body read, in bytes; a request announcing or sending more gets 413 and
    /// the connection is closed.
    std::size_t max_body_bytes = std::size_t{64} * 1024;
    /// Largest request line plus header fields, in bytes; more gets 431 and a close.
    std::size_t max_header_bytes = std::size_t{16} * 1024;
};

/// Serves `GET` (and `HEAD`) of the metrics path with `text/plain; version=0.0.4`; 404 for
/// other paths, 405 for other methods. Keep-alive connections are served in turn on the
/// server's one thread; each scrape runs the registry's collectors there (a queue's gauges
/// query Redis, bounded by its pool's timeouts).
///
/// Health: `GET /healthz` answers 200 `ok` whenever the server thread serves (a liveness
/// probe). `GET /readyz` PINGs every configured endpoint and pool at once and answers 200
/// `ready` when all replied PONG within `ready_timeout`, else 503 `not ready` with one line
/// per endpoint (`FAIL <endpoint, password masked> <ms>: <why>`); with none configured it
/// answers 200. The PINGs run on a prober thread of the server, never on the server's own
/// thread (which keeps answering `/healthz` and scrapes meanwhile) nor on a runtime's timer
/// thread; requests arriving during a probe get the next probe's answer.
///
/// Extra routes (`handlers`, for example dashboard::handler()) run on the server's thread.
/// Oversized requests are refused: 413 for a body over `max_body_bytes`, 431 for headers over
/// `max_header_bytes`.
///
/// Thread-safety: port(), url() and stop() may be called from any thread. The destructor
/// stops the server and joins its thread; it never waits for a client.
class metrics_server {
public:
    /// Binds and starts serving `registry`.
    /// @throws invalid_argument for an unparsable address, a `ready_timeout` not > 0 or a null
    ///         pool or handler; error when the address cannot be bound (port in use, no
    ///         permission).
    explicit metrics_server(std::shared_ptr<const metrics_registry> registry,
                            metrics_server_options opts = {});
    /// Binds and starts serving what `body` returns at each request (called on the server's
    /// thread; an exception becomes a 500 answer).
    /// @throws as the other constructor.
    explicit metrics_server(std::function<std::string()> body, metrics_server_options opts = {});
    /// stop().
    ~metrics_server();
    metrics_server(const metrics_server&) = delete;
    metrics_server& operator=(const metrics_server&) = delete;

    /// The port it listens on (the chosen one when the options said 0).
    [[nodiscard]] std::uint16_t port() const noexcept;
    /// `http://<address>:<port><path>` (IPv6 addresses in brackets).
    [[nodiscard]] std::string url() const;
    /// Closes the listening socket and every connection, and joins the thread (and the prober's,
    /// after a probe under way: at most about `ready_timeout`). Idempotent.
    void stop() noexcept;

private:
    struct impl;
    std::unique_ptr<impl> impl_;
};

}  // namespace redcoord
REDCOORD_API_END
