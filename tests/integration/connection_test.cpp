#include <redcoord/core/connection.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/testing/local_server.hpp>

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <thread>

using namespace redcoord;
using namespace std::chrono_literals;
using redcoord::testing::local_server;

namespace {

// A TCP listener on loopback that is not Redis: it either writes `banner` to each client
// or stays silent.
class fake_server {
public:
    explicit fake_server(std::string banner) : banner_(std::move(banner)) {
        fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
        socklen_t len = sizeof a;
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
        port_ = ntohs(a.sin_port);
        ::listen(fd_, 8);
        thread_ = std::thread([this] {
            for (;;) {
                int c = ::accept(fd_, nullptr, nullptr);
                if (c < 0 || stop_) {
                    if (c >= 0) ::close(c);
                    return;
                }
                char buf[256];
                [[maybe_unused]] auto r = ::recv(c, buf, sizeof buf, 0);
                if (!banner_.empty()) [[maybe_unused]]
                    auto w = ::send(c, banner_.data(), banner_.size(), 0);
                clients_.push_back(c);
            }
        });
    }
    ~fake_server() {
        stop_ = true;
        ::shutdown(fd_, SHUT_RDWR);
        ::close(fd_);
        thread_.join();
        for (int c : clients_) ::close(c);
    }
    std::uint16_t port() const { return port_; }

private:
    std::string banner_;
    int fd_ = -1;
    std::uint16_t port_ = 0;
    std::atomic<bool> stop_{false};
    std::vector<int> clients_;
    std::thread thread_;
};

endpoint at(std::uint16_t port) {
    endpoint e;
    e.host = "127.0.0.1";
    e.port = port;
    return e;
}

}  // namespace

TEST(Connection, RoundTripsBinaryValues) {
    local_server srv;
    connection c(srv.endpoint());
    std::string binary("a\0b\r\nc", 6);
    std::string big(1 << 20, '\xff');
    EXPECT_TRUE(c.command({"SET", "k", binary}).is_status("OK"));
    EXPECT_EQ(c.command({"GET", "k"}).text(), binary);
    EXPECT_TRUE(c.command({"SET", "big", big}).is_status("OK"));
    EXPECT_EQ(c.command({"GET", "big"}).text(), big);
    EXPECT_TRUE(c.command({"GET", "missing"}).is_nil());
    EXPECT_EQ(c.command({"INCR", "n"}).integer(), 1);
}

TEST(Connection, ServerErrorsAreReplyErrorsAndKeepTheConnection) {
    local_server srv;
    connection c(srv.endpoint());
    c.command({"SET", "s", "x"});
    EXPECT_THROW(c.command({"INCR", "s"}), reply_error);
    EXPECT_FALSE(c.poisoned());
    EXPECT_TRUE(c.command({"PING"}).is_status("PONG"));
}

TEST(Connection, PipelinesAndReturnsErrorsAsValues) {
    local_server srv;
    connection c(srv.endpoint());
    auto r = c.pipeline({{"SET", "a", "1"}, {"INCR", "a"}, {"HGET", "a", "f"}, {"GET", "a"}});
    ASSERT_EQ(r.size(), 4u);
    EXPECT_TRUE(r[0].is_status("OK"));
    EXPECT_EQ(r[1].integer(), 2);
    EXPECT_TRUE(r[2].is_error());
    EXPECT_EQ(r[3].text(), "2");
}

TEST(Connection, SelectsTheDatabase) {
    local_server srv;
    auto e = srv.endpoint();
    e.db = 5;
    connection c(e);
    c.command({"SET", "only-in-5", "1"});
    EXPECT_EQ(srv.command({"EXISTS", "only-in-5"}).integer(), 0);
}

TEST(Connection, WrongPasswordIsAuthErrorWithoutThePassword) {
    redcoord::testing::server_options o;
    o.password = "right-one";
    local_server srv(o);
    auto e = srv.endpoint();
    e.password = "hunter2-wrong";
    try {
        connection c(e);
        FAIL();
    } catch (const auth_error& ex) {
        EXPECT_EQ(std::string(ex.what()).find("hunter2"), std::string::npos) << ex.what();
    }
    e.password.clear();
    EXPECT_THROW(connection{e}, auth_error);
    e.password = "right-one";
    EXPECT_NO_THROW(connection{e});
}

TEST(Connection, AclUserAndPassword) {
    local_server srv;
    srv.command({"ACL", "SETUSER", "app", "on", ">pw1", "~*", "+@all"});
    auto e = srv.endpoint();
    e.user = "app";
    e.password = "pw1";
    connection c(e);
    EXPECT_EQ(c.command({"ACL", "WHOAMI"}).text(), "app");
    e.password = "nope";
    EXPECT_THROW(connection{e}, auth_error);
}

TEST(Connection, NothingListeningIsConnectionError) {
    auto port = redcoord::testing::free_port();
    EXPECT_THROW(connection{at(port)}, connection_error);
}

TEST(Connection, UnresolvableHostIsConnectionError) {
    auto e = at(6379);
    e.host = "no-such-host.invalid";
    EXPECT_THROW(connection{e}, connection_error);
}

TEST(Connection, NonRedisServerIsProtocolError) {
    fake_server http("HTTP/1.1 400 Bad Request\r\n\r\n");
    EXPECT_THROW(connection{at(http.port())}, protocol_error);
}

TEST(Connection, SilentServerIsTimeoutError) {
    fake_server silent("");
    auto e = at(silent.port());
    e.connect_timeout = 100ms;
    auto t0 = std::chrono::steady_clock::now();
    EXPECT_THROW(connection{e}, timeout_error);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
}

TEST(Connection, CommandDeadlinePoisons) {
    local_server srv;
    auto e = srv.endpoint();
    e.command_timeout = 100ms;
    connection c(e);
    EXPECT_THROW(c.command({"DEBUG", "SLEEP", "0.5"}), timeout_error);
    EXPECT_TRUE(c.poisoned());
    EXPECT_THROW(c.command({"PING"}), connection_error);
}

TEST(Connection, ServerDyingMidCommandIsConnectionError) {
    local_server srv;
    connection c(srv.endpoint());
    std::thread killer([&] {
        std::this_thread::sleep_for(100ms);
        srv.kill();
    });
    EXPECT_THROW(c.command({"DEBUG", "SLEEP", "2"}), connection_error);
    killer.join();
    EXPECT_TRUE(c.poisoned());
}

TEST(Connection, UnixSocket) {
    redcoord::testing::server_options o;
    local_server probe;
    auto path = (probe.dir() / "r.sock").string();
    o.config.emplace_back("unixsocket", path);
    local_server srv(o);
    auto e = parse_endpoint("unix://" + path);
    connection c(e);
    EXPECT_TRUE(c.command({"PING"}).is_status("PONG"));
}

// C6: an invalid command in a pipeline must be rejected before anything is buffered, or the
// commands before it go out with the next command and that command reads their replies.
TEST(Connection, C6_InvalidPipelineSendsNothingAndKeepsTheStreamInStep) {
    local_server s;
    connection c(s.endpoint());
    EXPECT_THROW((void)c.pipeline({{"SET", "c6", "1"}, {}}), invalid_argument);
    EXPECT_FALSE(c.poisoned());
    EXPECT_EQ(c.command({"ECHO", "mine"}).text(), "mine");
    EXPECT_EQ(c.command({"EXISTS", "c6"}).integer(), 0);  // nothing of the pipeline was sent
}

namespace {
// Opens connections until one handshake is answered with an error reply containing `word`
// or `until` says stop; returns the error caught then (or nullptr).
template <class Until>
std::exception_ptr handshake_error_with(const endpoint& ep, std::string_view word, Until until) {
    while (!until()) {
        try {
            connection c(ep);
        } catch (const error& e) {
            if (std::string_view(e.what()).find(word) != std::string_view::npos)
                return std::current_exception();
        }
        std::this_thread::sleep_for(2ms);
    }
    return nullptr;
}
}  // namespace

// C7: a server that is loading its dataset answers the handshake's PING with -LOADING. That
// is transient (retry later), so connection_error, not reply_error ("refused, don't retry").
TEST(Connection, C7_LoadingDuringHandshakeIsAConnectionError) {
    redcoord::testing::server_options o;
    // Slow, observable loading: 100 us per key, client events served every KB.
    o.config = {{"key-load-delay", "100"}, {"loading-process-events-interval-bytes", "1024"}};
    local_server s(o);
    ASSERT_TRUE(s.command({"DEBUG", "POPULATE", "20000", "c7", "8"}).is_status("OK"));
    ASSERT_TRUE(s.command({"SAVE"}).is_status("OK"));
    std::atomic<bool> restarted{false};
    std::thread restarter([&] {
        s.restart();  // returns once the load is over (about 2 s)
        restarted = true;
    });
    auto ep = s.endpoint();
    ep.connect_timeout = 300ms;
    const auto err = handshake_error_with(ep, "LOADING", [&] { return restarted.load(); });
    restarter.join();
    ASSERT_TRUE(err) << "never saw the server loading";
    try {
        std::rethrow_exception(err);
    } catch (const connection_error& e) {
        EXPECT_EQ(dynamic_cast<const auth_error*>(&e), nullptr) << e.what();
    } catch (const error& e) {
        ADD_FAILURE() << "not a connection_error: " << e.what();
    }
}

// C7: -BUSY (a script past busy-reply-threshold) is transient too.
TEST(Connection, C7_BusyDuringHandshakeIsAConnectionError) {
    redcoord::testing::server_options o;
    o.config = {{"busy-reply-threshold", "50"}};
    local_server s(o);
    connection killer(s.endpoint());  // opened before the script: a new handshake would be refused
    std::thread runner([&] {
        try {
            connection c(s.endpoint());
            (void)c.command_for(10s,
                                std::vector<std::string_view>{"EVAL", "while true do end", "0"});
        } catch (const error&) {
            // SCRIPT KILL below ends it with an error reply.
        }
    });
    const auto give_up = std::chrono::steady_clock::now() + 5s;
    const auto err = handshake_error_with(
        s.endpoint(), "BUSY", [&] { return std::chrono::steady_clock::now() > give_up; });
    for (int i = 0; i < 250; ++i) {
        try {
            (void)killer.command({"SCRIPT", "KILL"});
            break;
        } catch (const reply_error&) {
            std::this_thread::sleep_for(20ms);  // NOTBUSY: the script has not started yet
        }
    }
    runner.join();
    ASSERT_TRUE(err) << "never saw the server busy";
    try {
        std::rethrow_exception(err);
    } catch (const connection_error& e) {
        SUCCEED() << e.what();
    } catch (const error& e) {
        ADD_FAILURE() << "not a connection_error: " << e.what();
    }
}
