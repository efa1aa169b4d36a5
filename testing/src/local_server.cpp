#include <redcoord/core/connection.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/core/replication.hpp>
#include <redcoord/testing/local_server.hpp>
#include <redcoord/testing/test_certificates.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>  // NOLINT(modernize-deprecated-headers): POSIX kill, sigaction, sigset_t
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <thread>

namespace redcoord::testing {
namespace fs = std::filesystem;

std::string find_redis_server() {
    if (const char* env = std::getenv("REDCOORD_REDIS_SERVER"); env && *env) {
        if (::access(env, X_OK) == 0) return env;
        throw error(std::string("REDCOORD_REDIS_SERVER=") + env + " is not an executable file");
    }
    if (const char* path = std::getenv("PATH")) {
        std::string_view p(path);
        while (!p.empty()) {
            auto colon = p.find(':');
            auto dir = p.substr(0, colon);
            auto cand = fs::path(std::string(dir)) / "redis-server";
            if (::access(cand.c_str(), X_OK) == 0) return cand.string();
            if (colon == std::string_view::npos) break;
            p.remove_prefix(colon + 1);
        }
    }
    throw error(
        "redis-server not found: install it (./scripts/bootstrap) or set REDCOORD_REDIS_SERVER");
}

std::uint16_t free_port() {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) throw error("socket failed");
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    socklen_t len = sizeof a;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
        ::close(fd);
        throw error("cannot find a free port");
    }
    ::close(fd);
    return ntohs(a.sin_port);
}

server_tls test_server_tls(const test_certificates& certs) {
    server_tls t;
    t.cert_file = certs.server().cert;
    t.key_file = certs.server().key;
    t.ca_file = certs.ca();
    t.client.ca_file = certs.ca().string();
    return t;
}

server_options tls_server_options(const test_certificates& certs, const cert_pair& served,
                                  bool auth_clients) {
    server_options o;
    o.tls = test_server_tls(certs);
    o.tls->cert_file = served.cert;
    o.tls->key_file = served.key;
    o.tls->auth_clients = auth_clients;
    if (auth_clients) {
        o.tls->client.cert_file = certs.client().cert.string();
        o.tls->client.key_file = certs.client().key.string();
    }
    o.tls->client.verify_peer = served.cert == certs.server().cert;
    return o;
}

redcoord::endpoint tls_endpoint(const test_certificates& certs, const local_server& s) {
    redcoord::endpoint e;
    e.host = "127.0.0.1";
    e.port = s.port();
    e.tls.enabled = true;
    e.tls.ca_file = certs.ca().string();
    e.connect_timeout = std::chrono::seconds(2);
    return e;
}

// REDCOORD_TEST_TLS=1 runs a whole test program over TLS (the "every primitive over TLS"
// runs of the suite): servers that were not given TLS options get the process's own
// certificates.
void apply_tls_default(server_options& opts) {
    const char* v = std::getenv("REDCOORD_TEST_TLS");
    if (opts.tls || !v || std::string_view(v) != "1") return;
    static const test_certificates certs;
    opts.tls = test_server_tls(certs);
}

local_server::local_server(server_options opts) : opts_(std::move(opts)) {
    apply_tls_default(opts_);
    std::string tmpl = (fs::temp_directory_path() / "redcoord-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw error("mkdtemp failed");
    dir_ = tmpl;
    // A port can be taken between free_port() and redis binding it: try a few.
    for (int attempt = 0;; ++attempt) {
        port_ = opts_.port != 0 ? opts_.port : free_port();
        try {
            write_config();
            start();
            return;
        } catch (const error&) {
            if (proc_) proc_->kill();
            if (attempt >= 4) {
                std::error_code ec;
                fs::remove_all(dir_, ec);
                throw;
            }
        }
    }
}

std::unique_ptr<local_server> local_server::replica_of(const local_server& master,
                                                       server_options opts) {
    if (opts.password.empty()) opts.password = master.opts_.password;
    if (!opts.tls) opts.tls = master.opts_.tls;
    opts.config.emplace_back("replicaof", "127.0.0.1 " + std::to_string(master.port()));
    auto r = std::make_unique<local_server>(std::move(opts));
    r->master_of_ = master.address();
    r->wait_synced();
    return r;
}

std::unique_ptr<local_server> local_server::acknowledging_replica_of(const local_server& master,
                                                                     server_options opts) {
    auto r = replica_of(master, std::move(opts));
    connection c(master.endpoint());
    for (int i = 0; i < 100; ++i) {
        // WAIT counts acknowledgements of this connection's writes, so write first.
        (void)c.command({"SET", "redcoord:local_server:replica-ready", "1"});
        if (wait_replicas(c, 1, std::chrono::milliseconds(100)) >= 1) {
            (void)c.command({"DEL", "redcoord:local_server:replica-ready"});
            return r;
        }
    }
    throw error("replica of " + master.url() + " never acknowledged a write");
}

local_server::~local_server() {
    if (proc_) {
        proc_->signal(SIGCONT);
        proc_->kill();
    }
    std::error_code ec;
    fs::remove_all(dir_, ec);
}

pid_t local_server::pid() const noexcept { return proc_ ? proc_->pid() : -1; }

redcoord::endpoint local_server::endpoint() const {
    redcoord::endpoint e;
    if (opts_.control_socket) {
        e.unix_path = (dir_ / "redis.sock").string();
        e.password = opts_.password;
        return e;
    }
    e.host = "127.0.0.1";
    e.port = port_;
    e.password = opts_.password;
    if (opts_.tls) {
        e.tls = opts_.tls->client;
        e.tls.enabled = true;
    }
    return e;
}

std::string local_server::url() const {
    auto e = endpoint();
    e.password.clear();
    std::string s = e.to_string();  // the TLS options as its query
    if (!opts_.password.empty()) s.insert(s.find("://") + 3, ":" + opts_.password + "@");
    return s;
}

void write_tls_config(std::ostream& out, std::uint16_t port, const server_tls& tls) {
    out << "port 0\n"
        << "tls-port " << port << "\n"
        << "tls-cert-file " << tls.cert_file.string() << "\n"
        << "tls-key-file " << tls.key_file.string() << "\n"
        << "tls-ca-cert-file " << tls.ca_file.string() << "\n"
        << "tls-auth-clients " << (tls.auth_clients ? "yes" : "no") << "\n"
        << "tls-replication yes\n";
}

bool local_server::running() noexcept { return proc_ && proc_->running(); }

void local_server::write_config() {
    std::ofstream f(dir_ / "redis.conf", std::ios::trunc);
    if (opts_.tls)
        write_tls_config(f, port_, *opts_.tls);
    else
        f << "port " << port_ << "\n";
    if (opts_.control_socket)
        f << "unixsocket " << (dir_ / "redis.sock").string() << "\nunixsocketperm 700\n";
    f << "bind " << opts_.bind << "\n"
      << "protected-mode no\n"
      << "daemonize no\n"
      << "dir " << dir_.string() << "\n"
      << "logfile " << (dir_ / "redis.log").string() << "\n"
      << "save \"\"\n"
      << "enable-debug-command local\n"
      << "repl-diskless-sync-delay 0\n"
      << "appendonly " << (opts_.appendonly ? "yes" : "no") << "\n";
    if (opts_.appendonly) f << "appendfsync " << opts_.appendfsync << "\n";
    if (!opts_.password.empty())
        f << "requirepass " << opts_.password << "\nmasterauth " << opts_.password << "\n";
    for (auto& [k, v] : opts_.config) f << k << " " << v << "\n";
    if (!f) throw error("cannot write redis.conf in " + dir_.string());
}

void local_server::start() {
    process_options po;
    po.output_file = (dir_ / "stdout.log").string();
    std::vector<std::string> argv = opts_.launcher;
    argv.push_back(find_redis_server());
    argv.push_back((dir_ / "redis.conf").string());
    if (opts_.sentinel) argv.emplace_back("--sentinel");
    proc_ = std::make_unique<process>(std::move(argv), po);
    auto ep = endpoint();
    ep.connect_timeout = std::chrono::milliseconds(200);
    auto deadline = std::chrono::steady_clock::now() + opts_.start_timeout;
    std::string last;
    while (std::chrono::steady_clock::now() < deadline) {
        if (!proc_->running())
            throw error("redis-server on port " + std::to_string(port_) + " exited at start (see " +
                        (dir_ / "redis.log").string() + ")");
        try {
            connection c(ep);
            // A server still loading its AOF answers -LOADING; wait for it to be ready.
            c.command({"PING"});
            return;
        } catch (const error& e) {
            last = e.what();
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    throw error("redis-server on port " + std::to_string(port_) + " did not answer: " + last);
}

void local_server::kill() noexcept {
    if (!proc_) return;
    proc_->signal(SIGCONT);
    proc_->kill();
}

void local_server::pause() noexcept {
    if (proc_) proc_->signal(SIGSTOP);
}

void local_server::resume() noexcept {
    if (proc_) proc_->signal(SIGCONT);
}

void local_server::restart() {
    kill();
    start();
}

void local_server::promote() {
    command({"REPLICAOF", "NO", "ONE"});
    master_of_.reset();
}

void local_server::replicate(const local_server& master) {
    command({"REPLICAOF", "127.0.0.1", std::to_string(master.port())});
    master_of_ = master.address();
}

void local_server::wait_synced(std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
        try {
            auto r = command({"INFO", "replication"});
            if (r.text().find("master_link_status:up") != std::string::npos) return;
        } catch (const error&) {}
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    throw error("replica on port " + std::to_string(port_) + " did not sync within " +
                std::to_string(timeout.count()) + " ms");
}

reply local_server::command(std::initializer_list<std::string_view> argv) const {
    connection c(endpoint());
    return c.command(argv);
}

std::vector<std::string> local_server::keys_without_ttl() const {
    connection c(endpoint());
    std::vector<std::string> found;
    std::string cursor = "0";
    do {
        auto r = c.command({"SCAN", cursor, "COUNT", "1000"});
        cursor = r.elements().at(0).text();
        for (const auto& k : r.elements().at(1).elements())
            if (c.command({"PTTL", k.text()}).integer() == -1) found.push_back(k.text());
    } while (cursor != "0");
    return found;
}

long long local_server::command_calls(std::string_view command) const {
    const auto info = this->command({"INFO", "commandstats"}).text();
    const auto tag = "cmdstat_" + std::string(command) + ":calls=";
    const auto at = info.find(tag);
    return at == std::string::npos ? 0 : std::stoll(info.substr(at + tag.size()));
}

std::vector<std::unique_ptr<local_server>> start_masters(std::size_t n, server_options opts) {
    std::vector<std::unique_ptr<local_server>> v;
    v.reserve(n);
    for (std::size_t i = 0; i < n; ++i) v.push_back(std::make_unique<local_server>(opts));
    return v;
}

}  // namespace redcoord::testing
