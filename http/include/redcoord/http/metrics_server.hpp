#pragma once
/// @file
/// A small HTTP server for Prometheus scrapes: `GET /metrics` answers with a
/// metrics_registry's text (format 0.0.4). Built on Boost.Beast; one thread of its own.

#include <redcoord/core/export.hpp>
#include <redcoord/core/metrics.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

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
};

/// Serves `GET` (and `HEAD`) of the metrics path with `text/plain; version=0.0.4`; 404 for
/// other paths, 405 for other methods. Keep-alive connections are served in turn on the
/// server's one thread; each scrape runs the registry's collectors there (a queue's gauges
/// query Redis, bounded by its pool's timeouts).
///
/// Thread-safety: port(), url() and stop() may be called from any thread. The destructor
/// stops the server and joins its thread; it never waits for a client.
class metrics_server {
public:
    /// Binds and starts serving `registry`.
    /// @throws invalid_argument for an unparsable address; error when the address cannot be
    ///         bound (port in use, no permission).
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
    /// Closes the listening socket and every connection, and joins the thread. Idempotent.
    void stop() noexcept;

private:
    struct impl;
    std::unique_ptr<impl> impl_;
};

}  // namespace redcoord
REDCOORD_API_END
