#include <redcoord/core/errors.hpp>
#include <redcoord/http/metrics_server.hpp>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <mutex>
#include <thread>

namespace redcoord {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

namespace {

// One client connection: read a request, answer, and again while the client keeps it alive.
// Lives through the shared_ptr its pending operation holds; a stopped io_context drops it.
class session : public std::enable_shared_from_this<session> {
public:
    session(tcp::socket s, const std::function<std::string()>& body,
            const metrics_server_options& o)
        : stream_(std::move(s)), body_(body), o_(o) {}

    void read() {
        req_ = {};
        stream_.expires_after(o_.io_timeout);
        http::async_read(stream_, buf_, req_,
                         [self = shared_from_this()](beast::error_code ec, std::size_t) {
                             if (ec) return self->close();
                             self->answer();
                         });
    }

private:
    void answer() {
        res_ = {};
        res_.version(req_.version());
        res_.keep_alive(req_.keep_alive());
        res_.set(http::field::server, "redcoord");
        std::string_view target(req_.target().data(), req_.target().size());
        target =
            target.substr(0, target.find('?'));  // `?name[]=...` filters are not supported: ignored
        if (target != o_.path) {
            reply(http::status::not_found, "text/plain; charset=utf-8",
                  "not found; metrics are at " + o_.path + "\n");
        } else if (req_.method() != http::verb::get && req_.method() != http::verb::head) {
            res_.set(http::field::allow, "GET, HEAD");
            reply(http::status::method_not_allowed, "text/plain; charset=utf-8",
                  "method not allowed\n");
        } else {
            try {
                reply(http::status::ok, std::string(metrics_registry::content_type), body_());
            } catch (const std::exception& e) {
                reply(http::status::internal_server_error, "text/plain; charset=utf-8",
                      std::string(e.what()) + "\n");
            }
        }
        if (req_.method() == http::verb::head) {
            // The length of the GET answer, without its body (RFC 9110 9.3.2).
            res_.content_length(res_.body().size());
            res_.body().clear();
        }
        stream_.expires_after(o_.io_timeout);
        http::async_write(stream_, res_,
                          [self = shared_from_this()](beast::error_code ec, std::size_t) {
                              if (ec || !self->res_.keep_alive()) return self->close();
                              self->read();
                          });
    }

    void reply(http::status st, const std::string& type, std::string body) {
        res_.result(st);
        res_.set(http::field::content_type, type);
        res_.body() = std::move(body);
        res_.prepare_payload();
    }

    void close() {
        beast::error_code ec;
        stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
        stream_.close();
    }

    beast::tcp_stream stream_;
    beast::flat_buffer buf_;
    http::request<http::string_body> req_;
    http::response<http::string_body> res_;
    const std::function<std::string()>& body_;
    const metrics_server_options& o_;
};

}  // namespace

struct metrics_server::impl {
    metrics_server_options opts;
    std::function<std::string()> body;
    net::io_context ioc{1};
    tcp::acceptor acceptor{ioc};
    std::uint16_t port = 0;
    std::mutex stop_mu;
    std::thread thread;

    impl(std::function<std::string()> b, metrics_server_options o)
        : opts(std::move(o)), body(std::move(b)) {
        if (opts.path.empty() || opts.path.front() != '/')
            throw invalid_argument("metrics_server: path must start with '/'");
        beast::error_code ec;
        const auto addr = net::ip::make_address(opts.address, ec);
        if (ec) throw invalid_argument("metrics_server: invalid address '" + opts.address + "'");
        const tcp::endpoint ep(addr, opts.port);
        acceptor.open(ep.protocol(), ec);
        if (!ec) acceptor.set_option(net::socket_base::reuse_address(true), ec);
        if (!ec) acceptor.bind(ep, ec);
        if (!ec) acceptor.listen(net::socket_base::max_listen_connections, ec);
        if (ec)
            throw error("metrics_server: cannot listen on " + opts.address + ":" +
                        std::to_string(opts.port) + ": " + ec.message());
        port = acceptor.local_endpoint().port();
        accept();
        thread = std::thread([this] { ioc.run(); });
    }

    void accept() {
        acceptor.async_accept([this](beast::error_code ec, tcp::socket s) {
            if (ec == net::error::operation_aborted || !acceptor.is_open()) return;  // stopping
            if (!ec) std::make_shared<session>(std::move(s), body, opts)->read();
            accept();  // other errors (too many files) concern one connection: keep serving
        });
    }

    void stop() noexcept {
        std::lock_guard l(stop_mu);
        if (!thread.joinable()) return;
        // The acceptor belongs to the server's thread: closed there. Then every pending
        // operation is dropped with the io_context's stop, so no client is waited for.
        net::post(ioc, [this] {
            beast::error_code ec;
            acceptor.close(ec);
            ioc.stop();
        });
        thread.join();
    }
};

metrics_server::metrics_server(std::shared_ptr<const metrics_registry> registry,
                               metrics_server_options opts) {
    if (!registry) throw invalid_argument("metrics_server: null registry");
    impl_ = std::make_unique<impl>([r = std::move(registry)] { return r->prometheus_text(); },
                                   std::move(opts));
}

metrics_server::metrics_server(std::function<std::string()> body, metrics_server_options opts) {
    if (!body) throw invalid_argument("metrics_server: empty body function");
    impl_ = std::make_unique<impl>(std::move(body), std::move(opts));
}

metrics_server::~metrics_server() { stop(); }

std::uint16_t metrics_server::port() const noexcept { return impl_->port; }

std::string metrics_server::url() const {
    const bool v6 = impl_->opts.address.find(':') != std::string::npos;
    return "http://" + (v6 ? "[" + impl_->opts.address + "]" : impl_->opts.address) + ":" +
           std::to_string(impl_->port) + impl_->opts.path;
}

void metrics_server::stop() noexcept { impl_->stop(); }

}  // namespace redcoord
