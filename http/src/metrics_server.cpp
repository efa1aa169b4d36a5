#include "readiness_prober.hpp"

#include <redcoord/core/detail/thread_name.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/http/metrics_server.hpp>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <cctype>
#include <mutex>
#include <optional>
#include <thread>

namespace redcoord {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

namespace {

constexpr const char* text_plain = "text/plain; charset=utf-8";

// What every session shares with the server (owned by metrics_server::impl, which outlives
// the sessions: they die with the io_context or the prober's queue, both stopped first).
struct server_state {
    metrics_server_options opts;
    std::function<std::string()> body;
    std::unique_ptr<detail::readiness_prober> prober;  // null: no endpoints to probe
};

// One client connection: read a request, answer, and again while the client keeps it alive.
// Lives through the shared_ptr its pending operation holds; a stopped io_context drops it.
class session : public std::enable_shared_from_this<session> {
public:
    session(tcp::socket s, const server_state& st) : stream_(std::move(s)), st_(st) {}

    void read() {
        parser_.emplace();
        parser_->body_limit(st_.opts.max_body_bytes);
        parser_->header_limit(static_cast<std::uint32_t>(st_.opts.max_header_bytes));
        stream_.expires_after(st_.opts.io_timeout);
        http::async_read(stream_, buf_, *parser_,
                         [self = shared_from_this()](beast::error_code ec, std::size_t) {
                             if (ec == http::error::body_limit)
                                 return self->refuse(http::status::payload_too_large);
                             if (ec == http::error::header_limit)
                                 return self->refuse(http::status::request_header_fields_too_large);
                             if (ec) return self->close();
                             self->req_ = self->parser_->release();
                             self->answer();
                         });
    }

private:
    // A request too large to read: answered, then the connection closed (the rest of it is
    // still on the wire, so the stream cannot serve another request).
    void refuse(http::status st) {
        res_ = {};
        res_.version(11);
        res_.keep_alive(false);
        res_.set(http::field::server, "redcoord");
        reply(st, text_plain, std::string(http::obsolete_reason(st)) + "\n");
        write();
    }

    void answer() {
        res_ = {};
        res_.version(req_.version());
        res_.keep_alive(req_.keep_alive());
        res_.set(http::field::server, "redcoord");
        std::string_view target(req_.target().data(), req_.target().size());
        const auto q = target.find('?');
        const std::string_view path = target.substr(0, q);
        const bool read_only =
            req_.method() == http::verb::get || req_.method() == http::verb::head;
        const bool builtin = path == st_.opts.path || path == "/healthz" || path == "/readyz";
        if (builtin && !read_only) {
            res_.set(http::field::allow, "GET, HEAD");
            reply(http::status::method_not_allowed, text_plain, "method not allowed\n");
        } else if (path == st_.opts.path) {
            try {
                reply(http::status::ok, std::string(metrics_registry::content_type), st_.body());
            } catch (const std::exception& e) {
                reply(http::status::internal_server_error, text_plain,
                      std::string(e.what()) + "\n");
            }
        } else if (path == "/healthz") {
            reply(http::status::ok, text_plain, "ok\n");
        } else if (path == "/readyz") {
            if (!st_.prober) {
                reply(http::status::ok, text_plain, "ready\n");
            } else {
                // The answer comes back to this session's strand (the server's one thread).
                // dispatch: the prober's thread is never the server's, so this queues it as
                // post would (post's blocking.never requirement sends clang-tidy's analyser
                // down a null path inside any_executor that cannot happen).
                auto ex = stream_.get_executor();
                st_.prober->request([self = shared_from_this(), ex](http_response r) {
                    net::dispatch(ex, [self, r = std::move(r)]() mutable { self->send(r); });
                });
                return;
            }
        } else {
            http_request hr;
            hr.method = std::string(req_.method_string());
            hr.path = std::string(path);
            if (q != std::string_view::npos) hr.query = std::string(target.substr(q + 1));
            hr.body = req_.body();
            hr.host = std::string(req_[http::field::host]);
            for (const auto& f : req_) {
                std::string name(f.name_string());
                for (auto& c : name)
                    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
                hr.headers.emplace_back(std::move(name), std::string(f.value()));
            }
            std::optional<http_response> r;
            try {
                for (const auto& h : st_.opts.handlers)
                    if ((r = h(hr))) break;
            } catch (const std::exception& e) {
                r = http_response{500, text_plain, std::string(e.what()) + "\n", {}};
            }
            if (!r) r = http_response{404, text_plain, "not found\n", {}};
            return send(*r);
        }
        write();
    }

    void send(const http_response& r) {
        for (const auto& [name, value] : r.headers) res_.set(name, value);
        reply(static_cast<http::status>(r.status), r.content_type, r.body);
        write();
    }

    void write() {
        if (req_.method() == http::verb::head) {
            // The length of the GET answer, without its body (RFC 9110 9.3.2).
            res_.content_length(res_.body().size());
            res_.body().clear();
        }
        stream_.expires_after(st_.opts.io_timeout);
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
    std::optional<http::request_parser<http::string_body>> parser_;
    http::request<http::string_body> req_;
    http::response<http::string_body> res_;
    const server_state& st_;
};

}  // namespace

struct metrics_server::impl {
    server_state st;
    net::io_context ioc{1};
    tcp::acceptor acceptor{ioc};
    std::uint16_t port = 0;
    std::mutex stop_mu;
    std::thread thread;
    bool stopped = false;

    impl(std::function<std::string()> b, metrics_server_options o) {
        st.opts = std::move(o);
        st.body = std::move(b);
        const auto& opts = st.opts;
        if (opts.path.empty() || opts.path.front() != '/')
            throw invalid_argument("metrics_server: path must start with '/'");
        if (opts.ready_timeout.count() <= 0)
            throw invalid_argument("metrics_server: ready_timeout must be > 0");
        for (const auto& h : opts.handlers)
            if (!h) throw invalid_argument("metrics_server: empty handler");
        std::vector<std::shared_ptr<connection_pool>> pools;
        for (const auto& p : opts.ready_pools) {
            if (!p) throw invalid_argument("metrics_server: null ready pool");
            pools.push_back(p);
        }
        pool_options po;
        po.max_size = 2;  // one probe at a time, and one connect in the background
        po.max_idle = 1;
        for (const auto& ep : opts.ready_endpoints)
            pools.push_back(std::make_shared<connection_pool>(ep, po));
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
        if (!pools.empty())
            st.prober =
                std::make_unique<detail::readiness_prober>(std::move(pools), opts.ready_timeout);
        accept();
        thread = std::thread([this] {
            detail::name_this_thread("rc-metrics-http");
            ioc.run();
        });
    }

    // The sessions waiting for a probe hold sockets of `ioc`: the prober goes first.
    ~impl() { stop(); }

    void accept() {
        acceptor.async_accept([this](beast::error_code ec, tcp::socket s) {
            if (ec == net::error::operation_aborted || !acceptor.is_open()) return;  // stopping
            if (!ec) std::make_shared<session>(std::move(s), st)->read();
            accept();  // other errors (too many files) concern one connection: keep serving
        });
    }

    void stop() noexcept {
        try {
            std::lock_guard l(stop_mu);
            if (stopped) return;
            stopped = true;
            // The acceptor belongs to the server's thread: closed there. Then every pending
            // operation is dropped with the io_context's stop, so no client is waited for.
            net::post(ioc, [this] {
                beast::error_code ec;
                acceptor.close(ec);
                ioc.stop();
            });
            if (thread.joinable()) thread.join();
        } catch (...) {
            // No memory for the posted close: stop the io_context from here (thread-safe);
            // the acceptor closes with it.
            ioc.stop();
            try {
                if (thread.joinable()) thread.join();
            } catch (...) {
                // A thread that cannot be joined is the process's to end.
            }
        }
        if (st.prober) st.prober->stop();
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
    const auto& a = impl_->st.opts.address;
    const bool v6 = a.find(':') != std::string::npos;
    return "http://" + (v6 ? "[" + a + "]" : a) + ":" + std::to_string(impl_->port) +
           impl_->st.opts.path;
}

void metrics_server::stop() noexcept { impl_->stop(); }

}  // namespace redcoord
