#include <redcoord/core/connection.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/core/token.hpp>
#include <redcoord/testing/local_sentinel.hpp>

#include "sentinel_setup.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <thread>

namespace redcoord::testing {
namespace fs = std::filesystem;
using clock_type = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

std::string addr_text(const host_port& hp) { return hp.host + ":" + std::to_string(hp.port); }

bool reports_master(const local_server& s) {
    try {
        auto ep = s.endpoint();
        ep.connect_timeout = 200ms;
        ep.command_timeout = 200ms;
        connection c(ep);
        auto r = c.command({"ROLE"});
        return r.is_array() && !r.elements().empty() && r.elements()[0].is_string() &&
               r.elements()[0].text() == "master";
    } catch (const error&) {
        return false;
    }
}

}  // namespace

std::string find_redis_sentinel() {
    if (const char* env = std::getenv("REDCOORD_REDIS_SENTINEL"); env && *env) {
        if (::access(env, X_OK) == 0) return env;
        throw error(std::string("REDCOORD_REDIS_SENTINEL=") + env + " is not an executable file");
    }
    if (const char* path = std::getenv("PATH")) {
        std::string_view p(path);
        while (!p.empty()) {
            auto colon = p.find(':');
            auto cand = fs::path(std::string(p.substr(0, colon))) / "redis-sentinel";
            if (::access(cand.c_str(), X_OK) == 0) return cand.string();
            if (colon == std::string_view::npos) break;
            p.remove_prefix(colon + 1);
        }
    }
    throw error(
        "redis-sentinel not found: install it (./scripts/bootstrap: package redis-sentinel) or set "
        "REDCOORD_REDIS_SENTINEL");
}

local_sentinel::local_sentinel(local_sentinel_options opts) : opts_(std::move(opts)) {
    if (opts_.sentinels == 0) throw invalid_argument("local_sentinel needs at least one sentinel");
    if (opts_.down_after.count() <= 0 || opts_.failover_timeout.count() <= 0)
        throw invalid_argument("local_sentinel: down_after and failover_timeout must be > 0");
    if (opts_.quorum == 0) opts_.quorum = opts_.sentinels / 2 + 1;
    const std::string binary = find_redis_sentinel();  // fail early and clearly
    (void)binary;
    std::string tmpl = (fs::temp_directory_path() / "redcoord-sentinel-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw error("mkdtemp failed");
    dir_ = tmpl;
    try {
        servers_.push_back(std::make_unique<local_server>(opts_.server));
        opts_.server.tls = servers_.front()->options().tls;  // with REDCOORD_TEST_TLS's default
        for (std::size_t i = 0; i < opts_.replicas; ++i)
            servers_.push_back(local_server::replica_of(*servers_.front(), opts_.server));
        // A port can be taken between free_port() and the sentinel binding it: retry the set.
        for (int attempt = 0;; ++attempt) {
            try {
                start_sentinels();
                break;
            } catch (const error&) {
                for (auto& s : sentinels_) s->kill();
                sentinels_.clear();
                if (attempt >= 3) throw;
            }
        }
        wait_ready();
    } catch (...) {
        for (auto& s : sentinels_) s->kill();
        sentinels_.clear();
        servers_.clear();
        std::error_code ec;
        fs::remove_all(dir_, ec);
        throw;
    }
}

local_sentinel::~local_sentinel() {
    for (auto& s : sentinels_) s->kill();
    sentinels_.clear();
    servers_.clear();
    std::error_code ec;
    fs::remove_all(dir_, ec);
}

void local_sentinel::start_sentinels() {
    const std::size_t n = opts_.sentinels;
    sentinel_ports_.clear();
    std::vector<std::string> ids;
    for (std::size_t i = 0; i < n; ++i) {
        sentinel_ports_.push_back(free_port());
        ids.push_back(random_token());  // 40 hex characters, the format of a sentinel run id
    }
    const auto& m = *servers_.front();
    const std::string svc = opts_.service;
    for (std::size_t i = 0; i < n; ++i) {
        auto sdir = dir_ / ("sentinel-" + std::to_string(i));
        fs::create_directories(sdir);
        auto conf = sdir / "sentinel.conf";
        {
            std::ofstream f(conf, std::ios::trunc);
            if (opts_.server.tls)
                write_tls_config(f, sentinel_ports_[i], *opts_.server.tls);
            else
                f << "port " << sentinel_ports_[i] << "\n";
            f << "bind 127.0.0.1\n"
              << "protected-mode no\n"
              << "daemonize no\n"
              << "dir " << sdir.string() << "\n"
              << "logfile " << (sdir / "sentinel.log").string() << "\n";
            detail::sentinel_setup s;
            s.service = svc;
            s.master = {"127.0.0.1", m.port()};
            s.quorum = opts_.quorum;
            s.down_after = opts_.down_after;
            s.failover_timeout = opts_.failover_timeout;
            s.parallel_syncs = std::max<std::size_t>(1, opts_.replicas);
            s.auth_pass = opts_.server.password;
            s.my_id = ids[i];
            for (std::size_t r = 1; r < servers_.size(); ++r)
                s.replicas.push_back({"127.0.0.1", servers_[r]->port()});
            for (std::size_t j = 0; j < n; ++j)
                if (j != i) s.others.push_back({{"127.0.0.1", sentinel_ports_[j]}, ids[j]});
            for (const auto& [k, v] : detail::sentinel_directives(s)) f << k << " " << v << "\n";
            if (!opts_.sentinel_password.empty())
                f << "requirepass " << opts_.sentinel_password << "\n"
                  << "sentinel sentinel-pass " << opts_.sentinel_password << "\n";
            if (!f) throw error("cannot write " + conf.string());
        }
        process_options po;
        po.output_file = (sdir / "stdout.log").string();
        sentinels_.push_back(std::make_unique<process>(
            std::vector<std::string>{find_redis_sentinel(), conf.string()}, po));
    }
    // NOLINTNEXTLINE(clang-analyzer-deadcode.DeadStores): read after a catch, which the analyser skips
    auto deadline = clock_type::now() + 5s;
    for (std::size_t i = 0; i < n; ++i) {
        std::string last;
        for (;;) {
            if (!sentinels_[i]->running())
                throw error("redis-sentinel on port " + std::to_string(sentinel_ports_[i]) +
                            " exited at start (see " +
                            (dir_ / ("sentinel-" + std::to_string(i)) / "sentinel.log").string() +
                            ")");
            try {
                (void)sentinel_command(i, {"PING"});
                break;
            } catch (const error& e) {
                last = e.what();
            }
            if (clock_type::now() > deadline)
                throw error("redis-sentinel on port " + std::to_string(sentinel_ports_[i]) +
                            " did not answer: " + last);
            std::this_thread::sleep_for(5ms);
        }
    }
}

void local_sentinel::wait_ready() {
    const auto deadline = clock_type::now() + opts_.start_timeout;
    std::string last;
    for (;;) {
        bool ready = true;
        // The master counts a replica for WAIT only once it is online (after its first ACK).
        try {
            auto info = servers_.front()->command({"INFO", "replication"}).text();
            std::size_t online = 0;
            for (auto pos = info.find("state=online"); pos != std::string::npos;
                 pos = info.find("state=online", pos + 1))
                ++online;
            if (online < opts_.replicas) {
                ready = false;
                last = "master sees " + std::to_string(online) + " online replicas";
            } else if (opts_.replicas > 0) {
                // Online is not enough: a replica just past its first sync may not acknowledge
                // writes for a few hundred ms yet. Ready means a write is acknowledged by all.
                connection c(servers_.front()->endpoint());
                c.command({"SET", "redcoord:local_sentinel:ready", "1"});
                auto acks = c.command({"WAIT", std::to_string(opts_.replicas), "100"}).integer();
                c.command({"DEL", "redcoord:local_sentinel:ready"});
                if (acks < static_cast<std::int64_t>(opts_.replicas)) {
                    ready = false;
                    last = "replicas acknowledge " + std::to_string(acks) + " of " +
                           std::to_string(opts_.replicas) + " writes";
                }
            }
        } catch (const error& e) {
            ready = false;
            last = e.what();
        }
        for (std::size_t i = 0; i < sentinels_.size() && ready; ++i) {
            try {
                const std::size_t good = detail::usable_replicas(
                    sentinel_command(i, {"SENTINEL", "replicas", opts_.service}));
                if (good < opts_.replicas) {
                    ready = false;
                    last = "sentinel " + std::to_string(i) + " sees " + std::to_string(good) +
                           " usable replicas";
                    break;
                }
                auto q = sentinel_command(i, {"SENTINEL", "CKQUORUM", opts_.service});
                (void)q;
            } catch (const error& e) {
                ready = false;
                last = e.what();
            }
        }
        if (ready) return;
        if (clock_type::now() > deadline) throw error("sentinels not ready in time: " + last);
        std::this_thread::sleep_for(20ms);
    }
}

redcoord::endpoint local_sentinel::endpoint() const {
    redcoord::endpoint e;
    for (auto p : sentinel_ports_) e.sentinels.push_back({"127.0.0.1", p});
    e.service = opts_.service;
    e.password = opts_.server.password;
    e.sentinel_password = opts_.sentinel_password;
    if (opts_.server.tls) {
        e.tls = opts_.server.tls->client;
        e.tls.enabled = true;
    }
    return e;
}

std::string local_sentinel::url() const {
    std::string s = "redis-sentinel://";
    for (std::size_t i = 0; i < sentinel_ports_.size(); ++i) {
        if (i) s += ",";
        s += "127.0.0.1:" + std::to_string(sentinel_ports_[i]);
    }
    s += "/" + opts_.service;
    if (opts_.server.tls) {  // the TLS options, as endpoint() prints them
        auto e = endpoint();
        e.sentinel_password.clear();
        const std::string printed = e.to_string();
        s += printed.substr(printed.find('?'));
    }
    return s;
}

host_port local_sentinel::sentinel_address(std::size_t i) const {
    return {"127.0.0.1", sentinel_ports_.at(i)};
}

local_server* local_sentinel::server(const host_port& addr) const noexcept {
    for (auto& s : servers_)
        if (s->address() == addr) return s.get();
    return nullptr;
}

reply local_sentinel::sentinel_command(std::size_t i,
                                       std::initializer_list<std::string_view> argv) const {
    redcoord::endpoint e;
    e.host = "127.0.0.1";
    e.port = sentinel_ports_.at(i);
    e.password = opts_.sentinel_password;
    if (opts_.server.tls) {
        e.tls = opts_.server.tls->client;
        e.tls.enabled = true;
    }
    e.connect_timeout = 500ms;
    e.command_timeout = 1000ms;
    connection c(e);
    return c.command(argv);
}

host_port local_sentinel::master_address() const {
    std::map<std::string, std::pair<host_port, int>> votes;
    std::string last;
    for (std::size_t i = 0; i < sentinels_.size(); ++i) {
        if (!sentinels_[i]->running()) continue;
        try {
            auto r = sentinel_command(i, {"SENTINEL", "get-master-addr-by-name", opts_.service});
            if (!r.is_array() || r.elements().size() != 2) continue;
            host_port hp{r.elements()[0].text(),
                         static_cast<std::uint16_t>(std::stoi(r.elements()[1].text()))};
            auto& v = votes[addr_text(hp)];
            v.first = hp;
            ++v.second;
        } catch (const std::exception& e) {
            last = e.what();
        }
    }
    if (votes.empty()) throw error("no sentinel names a master: " + last);
    // The address most sentinels name (the first of equals, in address order).
    const auto best = std::max_element(
        votes.begin(), votes.end(),
        [](const auto& a, const auto& b) { return a.second.second < b.second.second; });
    return best->second.first;
}

local_server& local_sentinel::master() const {
    auto hp = master_address();
    auto* s = server(hp);
    if (!s) throw error("sentinels name an unknown master " + addr_text(hp));
    return *s;
}

host_port local_sentinel::kill_master() {
    auto& m = master();
    auto hp = m.address();
    m.kill();
    return hp;
}

host_port local_sentinel::failover() {
    auto old = master_address();
    std::string last;
    for (std::size_t i = 0; i < sentinels_.size(); ++i) {
        if (!sentinels_[i]->running()) continue;
        try {
            auto r = sentinel_command(i, {"SENTINEL", "FAILOVER", opts_.service});
            if (r.is_status("OK")) return old;
            last = r.is_error() ? r.text() : "unexpected reply";
        } catch (const error& e) {
            last = e.what();
        }
    }
    throw error("SENTINEL FAILOVER refused: " + last);
}

host_port local_sentinel::wait_promoted(const host_port& old, std::chrono::milliseconds timeout) {
    const auto deadline = clock_type::now() + timeout;
    while (clock_type::now() < deadline) {
        for (auto& s : servers_)
            if (s->address() != old && s->running() && reports_master(*s)) return s->address();
        std::this_thread::sleep_for(2ms);
    }
    throw error("no replica of " + addr_text(old) + " was promoted within " +
                std::to_string(timeout.count()) + " ms");
}

host_port local_sentinel::wait_switched(const host_port& old, std::chrono::milliseconds timeout) {
    const auto deadline = clock_type::now() + timeout;
    std::string last;
    while (clock_type::now() < deadline) {
        std::optional<host_port> agreed;
        bool all = true;
        for (std::size_t i = 0; i < sentinels_.size() && all; ++i) {
            if (!sentinels_[i]->running()) continue;
            try {
                auto r =
                    sentinel_command(i, {"SENTINEL", "get-master-addr-by-name", opts_.service});
                host_port hp{r.elements().at(0).text(),
                             static_cast<std::uint16_t>(std::stoi(r.elements().at(1).text()))};
                if (hp == old || (agreed && *agreed != hp)) all = false;
                agreed = hp;
            } catch (const std::exception& e) {
                last = e.what();
                all = false;
            }
        }
        if (all && agreed) {
            auto* s = server(*agreed);
            if (s && reports_master(*s)) return *agreed;
        }
        std::this_thread::sleep_for(5ms);
    }
    throw error("sentinels did not switch away from " + addr_text(old) + " within " +
                std::to_string(timeout.count()) + " ms" + (last.empty() ? "" : ": " + last));
}

void local_sentinel::kill_sentinel(std::size_t i) noexcept {
    if (i < sentinels_.size()) sentinels_[i]->kill();
}

}  // namespace redcoord::testing
