#pragma once
// A blocking HTTP/1.1 client over a real loopback socket (Boost.Beast), for the tests of the
// metrics server, the health routes and the dashboard.
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <cstdint>
#include <string>

namespace redcoord::test_http {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

struct client {
    net::io_context ioc;
    tcp::socket sock{ioc};
    beast::flat_buffer buf;
    explicit client(std::uint16_t port) {
        sock.connect({net::ip::make_address("127.0.0.1"), port});
    }
    http::response<http::string_body> send(http::request<http::string_body>& req) {
        req.set(http::field::host, "localhost");
        http::write(sock, req);
        http::response_parser<http::string_body> p;
        p.body_limit(64 * 1024 * 1024);
        if (req.method() == http::verb::head) p.skip(true);
        http::read(sock, buf, p);
        return p.release();
    }
    http::response<http::string_body> request(http::verb v, std::string target,
                                              std::string body = {}) {
        http::request<http::string_body> req{v, target, 11};
        if (!body.empty()) req.body() = std::move(body);
        req.prepare_payload();
        return send(req);
    }
    http::response<http::string_body> get(std::string target) {
        return request(http::verb::get, std::move(target));
    }
};

}  // namespace redcoord::test_http
