#include "async_bench.hpp"

#include "common.hpp"
#include "process_stats.hpp"

#include <redcoord/core/runtime.hpp>
#include <redcoord/lock/async.hpp>
#include <redcoord/testing/test_certificates.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include <hiredis/hiredis.h>

#include <atomic>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;
using redcoord::testing::local_server;
namespace asio = boost::asio;

namespace runtime_bench {

async_figures async_waiters(local_server& node, int n, int wakes) {
    auto rt = redcoord::runtime::create();
    redcoord::connection_pool holder_pool(node.endpoint(), {}, rt);
    redcoord::connection_pool pool(node.endpoint(), {}, rt);
    std::vector<std::unique_ptr<redcoord::distributed_lock>> holders, locks;
    for (int i = 0; i < n; ++i) {
        holders.push_back(std::make_unique<redcoord::distributed_lock>(
            holder_pool, "bench:a" + std::to_string(i),
            redcoord::lock_options{.timing = {.ttl = 120s}}));
        if (!holders.back()->try_lock()) throw std::runtime_error("holder could not lock");
    }
    {
        // Warm the event loop, its link and the pool, so the baseline has their threads.
        redcoord::distributed_lock warm(pool, "bench:warm");
        if (redcoord::async_acquire(warm, 1s, asio::use_future).get()) warm.unlock();
    }
    std::this_thread::sleep_for(500ms);
    const long t0 = threads_now();
    const auto names0 = thread_names();
    const long long c0 = clients(node);
    const double r0 = rss_kib();
    std::vector<std::atomic<std::int64_t>> held_at(n);
    for (auto& h : held_at) h = 0;
    std::atomic<int> errors{0};
    for (int i = 0; i < n; ++i) {
        locks.push_back(std::make_unique<redcoord::distributed_lock>(
            pool, "bench:a" + std::to_string(i), redcoord::lock_options{.timing = {.ttl = 120s}}));
        redcoord::async_acquire(
            *locks.back(), 300s,
            [&held_at, &errors, i](std::exception_ptr e,
                                   std::optional<redcoord::lock_acquisition> a) {
                if (e || !a)
                    ++errors;
                else
                    held_at[i] = clock_type::now().time_since_epoch().count();
            });
    }
    const auto until = clock_type::now() + 120s;
    while (channels(node) < n && clock_type::now() < until) std::this_thread::sleep_for(20ms);
    std::this_thread::sleep_for(1s);
    async_figures f;
    f.threads_peak = threads_now() - t0;
    std::fprintf(stderr, "  threads added by the waiters' start: %s\n",
                 added_threads(names0, thread_names()).c_str());
    // A tick worker beyond the first joins in when a due tick waited 10 ms behind a busy one
    // (the dial and the replica discovery, on a server busy with 10,000 scripts) and ends after
    // 2 s without work: the threads the waiting itself needs are the ones left then.
    std::this_thread::sleep_for(2500ms);
    f.threads = threads_now() - t0;
    std::fprintf(stderr, "  threads added while they wait: %s\n",
                 added_threads(names0, thread_names()).c_str());
    f.connections = clients(node) - c0;
    f.rss_kib_per_waiter = (rss_kib() - r0) / n;
    std::vector<double> wake_us;
    for (int i = 0; i < n; ++i) {
        const auto t = clock_type::now().time_since_epoch().count();
        holders[i]->unlock();
        if (i < wakes) {
            while (held_at[i] == 0 && errors == 0 &&
                   clock_type::now().time_since_epoch().count() - t < 5'000'000'000LL)
                std::this_thread::yield();
            if (held_at[i] != 0) wake_us.push_back(static_cast<double>(held_at[i] - t) / 1000.0);
        }
    }
    const auto all = clock_type::now() + 60s;
    for (int i = 0; i < n && clock_type::now() < all; ++i)
        while (held_at[i] == 0 && errors == 0 && clock_type::now() < all)
            std::this_thread::sleep_for(1ms);
    for (auto& l : locks) l->unlock();
    if (errors > 0) std::fprintf(stderr, "  %d of %d async waiters failed\n", errors.load(), n);
    f.wake_p50_us = redcoord::bench::percentile(wake_us, 50);
    return f;
}

namespace {

using command = std::vector<std::string>;

struct raw_context {
    redisContext* c;
    explicit raw_context(local_server& node) : c(redisConnect("127.0.0.1", node.endpoint().port)) {
        if (!c || c->err) throw std::runtime_error("raw connect failed");
    }
    ~raw_context() { redisFree(c); }
    raw_context(const raw_context&) = delete;
    raw_context& operator=(const raw_context&) = delete;
    void append(const command& cmd) const {
        std::vector<const char*> argv;
        std::vector<std::size_t> len;
        for (const auto& a : cmd) {
            argv.push_back(a.data());
            len.push_back(a.size());
        }
        redisAppendCommandArgv(c, static_cast<int>(cmd.size()), argv.data(), len.data());
    }
    // One reply; a status reply's text when `text` is set.
    std::string read(bool text = false) const {
        void* rep = nullptr;
        if (redisGetReply(c, &rep) != REDIS_OK) throw std::runtime_error("raw read failed");
        auto* r = static_cast<redisReply*>(rep);
        std::string s = text && r->str ? std::string(r->str, r->len) : std::string();
        freeReplyObject(r);
        return s;
    }
};

// The quoted arguments of one MONITOR line (`<time> [<db> <addr>] "arg" "arg" ...`), with
// its escapes (\\, \", \n, \r, \t, \a, \b, \xHH) undone.
command monitor_arguments(const std::string& line) {
    command out;
    std::size_t i = line.find(']');
    while (i != std::string::npos && (i = line.find('"', i + 1)) != std::string::npos) {
        std::string arg;
        for (++i; i < line.size() && line[i] != '"'; ++i) {
            if (line[i] != '\\' || i + 1 >= line.size()) {
                arg += line[i];
                continue;
            }
            const char e = line[++i];
            switch (e) {
                case 'n': arg += '\n'; break;
                case 'r': arg += '\r'; break;
                case 't': arg += '\t'; break;
                case 'a': arg += '\a'; break;
                case 'b': arg += '\b'; break;
                case 'x':
                    arg += static_cast<char>(std::stoi(line.substr(i + 1, 2), nullptr, 16));
                    i += 2;
                    break;
                default: arg += e;
            }
        }
        out.push_back(std::move(arg));
    }
    return out;
}

struct lock_round {
    std::vector<command> acquire;  // what one async_acquire sent, in order
    std::vector<command> release;  // what the async_release after it sent
};

// What one uncontended async_acquire and async_release of `name` send to the server, as its
// MONITOR feed shows them: the same scripts, keys and arguments the library's loop sends.
lock_round capture_lock_round(local_server& node, const std::string& name) {
    asio::io_context io;
    auto rt = redcoord::runtime::create(io);
    redcoord::connection_pool pool(node.endpoint(), {}, rt);
    redcoord::distributed_lock lock(pool, name, redcoord::lock_options{.timing = {.ttl = 10s}});
    // Held, so the captured round goes over the warm link, as the measured loop's rounds do
    // (a new link would show its handshake's PING). The held link keeps `io` busy, so it runs
    // until the capture is done rather than until it runs out of work.
    const auto link = rt->link(node.endpoint());
    raw_context monitor(node), marker(node);
    auto mark = [&](const std::string& m) {
        marker.append({"ECHO", m});
        (void)marker.read();
    };
    bool done = false;
    std::exception_ptr failed;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            for (int round = 0; round < 2; ++round) {
                if (round == 1) {  // the first connects and loads the scripts unseen
                    monitor.append({"MONITOR"});
                    (void)monitor.read();
                }
                if (!co_await redcoord::async_acquire(lock, 0ms, asio::use_awaitable))
                    throw std::runtime_error("capture: acquire refused");
                if (round == 1) mark("capture:acquired");
                (void)co_await redcoord::async_release(lock, asio::use_awaitable);
            }
            // A release held back a few milliseconds goes out meanwhile.
            asio::steady_timer pause(io, 100ms);
            co_await pause.async_wait(asio::use_awaitable);
            mark("capture:released");
        },
        [&](std::exception_ptr e) {
            failed = e;
            done = true;
        });
    while (!done) io.run_one();
    if (failed) std::rethrow_exception(failed);
    lock_round round;
    auto* into = &round.acquire;
    for (;;) {
        const std::string line = monitor.read(true);
        // MONITOR also shows the calls a script makes, as `[<db> lua]`: the server runs those,
        // not the client.
        if (line.find(" lua]") != std::string::npos) continue;
        const command cmd = monitor_arguments(line);
        if (cmd.size() == 2 && cmd[0] == "ECHO" && cmd[1] == "capture:acquired")
            into = &round.release;
        else if (cmd.size() == 2 && cmd[0] == "ECHO" && cmd[1] == "capture:released")
            break;
        else if (!cmd.empty())
            into->push_back(cmd);
    }
    if (round.acquire.empty() || round.release.empty())
        throw std::runtime_error("capture: no lock commands seen");
    return round;
}

// `cmd` with every occurrence of `from` in its arguments replaced by `to`.
command renamed(command cmd, const std::string& from, const std::string& to) {
    for (auto& a : cmd)
        for (auto at = a.find(from); at != std::string::npos; at = a.find(from, at + to.size()))
            a.replace(at, from.size(), to);
    return cmd;
}

// Lock+unlock rounds per second of one connection sending `round`'s commands for 64 keys at a
// time, one write per phase, then reading the 64 phases' replies.
double raw_rounds_per_second(local_server& node, const lock_round& round, const std::string& name,
                             double seconds) {
    raw_context raw(node);
    std::vector<lock_round> keys(64);
    for (int k = 0; k < 64; ++k) {
        const std::string to = "bench:raw" + std::to_string(k);
        for (const auto& c : round.acquire) keys[k].acquire.push_back(renamed(c, name, to));
        for (const auto& c : round.release) keys[k].release.push_back(renamed(c, name, to));
    }
    long long ops = 0;
    const auto t0 = clock_type::now();
    const auto end = t0 + std::chrono::duration<double>(seconds);
    while (clock_type::now() < end) {
        for (auto phase : {&lock_round::acquire, &lock_round::release}) {
            std::size_t sent = 0;
            for (const auto& k : keys)
                for (const auto& c : k.*phase) {
                    raw.append(c);
                    ++sent;
                }
            for (std::size_t i = 0; i < sent; ++i) (void)raw.read();
        }
        ops += 64;
    }
    return static_cast<double>(ops) / std::chrono::duration<double>(clock_type::now() - t0).count();
}

// The bare ceiling: SET NX PX and the EVALSHA compare-and-delete, no fencing token or notice.
lock_round setnx_round(local_server& node, const std::string& name) {
    raw_context c(node);
    c.append({"SCRIPT", "LOAD",
              "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) "
              "end return 0"});
    const std::string sha = c.read(true);
    const std::string token(40, 'f');
    return {{{"SET", name, token, "NX", "PX", "10000"}}, {{"EVALSHA", sha, "1", name, token}}};
}

double async_pipelined_ops(local_server& node, double seconds) {
    asio::io_context io;
    auto rt = redcoord::runtime::create(io);
    redcoord::connection_pool pool(node.endpoint(), {}, rt);
    std::atomic<long long> ops{0};
    const auto end = clock_type::now() + std::chrono::duration<double>(seconds);
    std::vector<std::unique_ptr<redcoord::distributed_lock>> locks;
    for (int k = 0; k < 64; ++k)
        locks.push_back(std::make_unique<redcoord::distributed_lock>(
            pool, "bench:p" + std::to_string(k), redcoord::lock_options{.timing = {.ttl = 10s}}));
    const auto t0 = clock_type::now();
    for (auto& l : locks)
        asio::co_spawn(
            io,
            [&, lock = l.get()]() -> asio::awaitable<void> {
                while (clock_type::now() < end) {
                    if (co_await redcoord::async_acquire(*lock, 0ms, asio::use_awaitable)) {
                        (void)co_await redcoord::async_release(*lock, asio::use_awaitable);
                        ++ops;
                    }
                }
            },
            asio::detached);
    io.run();
    const double s = std::chrono::duration<double>(clock_type::now() - t0).count();
    return static_cast<double>(ops.load()) / s;
}

// The commands' names, for the printed account ("EVALSHA EVALSHA").
std::string verbs(const std::vector<command>& cmds) {
    std::string out;
    for (const auto& c : cmds) out += (out.empty() ? "" : " ") + c.front();
    return out;
}

}  // namespace

pipelined_figures pipelined_vs_raw(local_server& node, double seconds) {
    const std::string name = "bench:capture";
    const lock_round same = capture_lock_round(node, name);
    const double raw = raw_rounds_per_second(node, same, name, seconds);
    const double setnx = raw_rounds_per_second(node, setnx_round(node, name), name, seconds);
    const double lib = async_pipelined_ops(node, seconds);
    std::fprintf(stderr,
                 "  pipelined: %.0f lock+unlock/s through the runtime; raw, the same commands "
                 "(acquire: %s; release: %s): %.0f; raw SET NX + compare-and-delete: %.0f\n",
                 lib, verbs(same.acquire).c_str(), verbs(same.release).c_str(), raw, setnx);
    return {raw > 0 ? lib / raw : 0.0, setnx > 0 ? lib / setnx : 0.0};
}

double pipelined_tls_vs_plain(double seconds) {
    const redcoord::testing::test_certificates certs;
    redcoord::testing::server_options o;
    o.tls = redcoord::testing::test_server_tls(certs);
    local_server tls(o);
    local_server plain;
    // Warmed alike first (scripts loaded, connections and sessions made, caches filled).
    (void)async_pipelined_ops(plain, 0.5);
    (void)async_pipelined_ops(tls, 0.5);
    const double p = async_pipelined_ops(plain, seconds);
    const double t = async_pipelined_ops(tls, seconds);
    std::fprintf(stderr, "  pipelined over TLS: %.0f lock+unlock/s; over plaintext: %.0f\n", t, p);
    return p > 0 ? t / p : 0.0;
}

}  // namespace runtime_bench
