#pragma once
/// @file
/// A blocking HTTP/1.1 client over a real loopback socket (Boost.Beast, header-only), for the
/// tests of the metrics server, the health routes and the dashboard.
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <cstdint>
#include <optional>
#include <regex>
#include <string>

namespace redcoord::testing::http_test {

namespace beast = boost::beast;  ///< Boost.Beast.
namespace http = beast::http;    ///< Beast's HTTP messages.
namespace net = boost::asio;     ///< Boost.Asio.
using tcp = net::ip::tcp;        ///< TCP of Boost.Asio.

/// One keep-alive connection to 127.0.0.1:`port`. Throws boost::system::system_error on I/O
/// errors. Not thread-safe.
struct client {
    net::io_context ioc;     ///< Runs nothing: every operation is blocking.
    tcp::socket sock{ioc};   ///< The connection (write to it directly for a malformed request).
    beast::flat_buffer buf;  ///< Bytes read past the last answer.
    /// Connects to 127.0.0.1:`port`.
    explicit client(std::uint16_t port) {
        sock.connect({net::ip::make_address("127.0.0.1"), port});
    }
    /// Sends `req` with the Host field `host` and reads the answer (bodies up to 64 MiB).
    http::response<http::string_body> send(http::request<http::string_body>& req,
                                           const std::string& host = "localhost") {
        req.set(http::field::host, host);
        http::write(sock, req);
        http::response_parser<http::string_body> p;
        p.body_limit(64 * 1024 * 1024);
        if (req.method() == http::verb::head) p.skip(true);
        http::read(sock, buf, p);
        return p.release();
    }
    /// Sends a request with method `v`, `target` and `body`.
    http::response<http::string_body> request(http::verb v, std::string target,
                                              std::string body = {}) {
        http::request<http::string_body> req{v, target, 11};
        if (!body.empty()) req.body() = std::move(body);
        req.prepare_payload();
        return send(req);
    }
    /// `GET target`.
    http::response<http::string_body> get(std::string target) {
        return request(http::verb::get, std::move(target));
    }
};

/// `GET target` on a fresh connection to 127.0.0.1:`port`.
inline http::response<http::string_body> get(std::uint16_t port, std::string target) {
    client c(port);
    return c.get(std::move(target));
}

/// The port of the first `http://127.0.0.1:PORT` in `output` that follows `lead` (a program's
/// "serving at" line), or nothing yet.
inline std::optional<std::uint16_t> printed_port(const std::string& output,
                                                 const std::string& lead) {
    const auto at = output.find(lead);
    if (at == std::string::npos) return std::nullopt;
    static const std::regex re(R"(^http://127\.0\.0\.1:([0-9]+))");
    std::smatch m;
    const std::string rest = output.substr(at + lead.size());
    if (!std::regex_search(rest, m, re)) return std::nullopt;
    return static_cast<std::uint16_t>(std::stoi(m[1]));
}

}  // namespace redcoord::testing::http_test
