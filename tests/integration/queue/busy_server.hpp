#pragma once
// Makes a real redis-server answer -BUSY for a bounded time: a Lua busy loop runs on a
// connection of its own, and SCRIPT KILL (one of the few commands a busy server accepts) ends
// it. The server must run with a small busy-reply-threshold (see busy_config()).

#include <redcoord/core/connection.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/testing/local_server.hpp>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace redcoord::testing {

/// Server options under which a script is "busy" after 50 ms.
inline server_options busy_config() { return {.config = {{"busy-reply-threshold", "50"}}}; }

/// While alive, after start(): the server refuses every other client's command with -BUSY
/// until `for_how_long` has passed (then SCRIPT KILL). Connections are opened up front,
/// because a busy server refuses the handshake of a new one.
class busy_server {
public:
    explicit busy_server(const local_server& srv)
        : script_(long_wait(srv)), killer_(srv.endpoint()), probe_(srv.endpoint()) {}
    ~busy_server() { stop(); }
    busy_server(const busy_server&) = delete;
    busy_server& operator=(const busy_server&) = delete;

    /// Starts the busy loop and returns once the server answers BUSY; it is killed after
    /// `for_how_long` from now.
    void start(std::chrono::milliseconds for_how_long) {
        const auto until = std::chrono::steady_clock::now() + for_how_long;
        runner_ = std::thread([this] {
            try {
                script_.command({"EVAL", "while true do end", "0"});
            } catch (const error&) {
                // "Script killed by user": expected.
            }
        });
        while (!answering_busy()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
        killer_thread_ = std::thread([this, until] {
            std::this_thread::sleep_until(until);
            kill();
        });
    }

    /// Kills the script now (idempotent) and waits for the threads.
    void stop() {
        if (killer_thread_.joinable()) killer_thread_.join();
        kill();
        if (runner_.joinable()) runner_.join();
    }

private:
    static connection long_wait(const local_server& srv) {
        auto ep = srv.endpoint();
        ep.command_timeout = std::chrono::milliseconds(30000);
        return connection(ep);
    }
    bool answering_busy() {
        try {
            probe_.command({"PING"});
            return false;
        } catch (const reply_error& e) {
            return std::string(e.what()).rfind("BUSY", 0) == 0;
        }
    }
    void kill() {
        if (killed_.exchange(true)) return;
        try {
            killer_.command({"SCRIPT", "KILL"});
        } catch (const reply_error&) {
            // NOTBUSY: never started.
        }
    }

    connection script_, killer_, probe_;
    std::thread runner_, killer_thread_;
    std::atomic<bool> killed_{false};
};

}  // namespace redcoord::testing
