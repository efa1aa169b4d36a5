#pragma once
// The thread that runs /readyz's PINGs for a metrics_server, so the server's own thread keeps
// answering /healthz and /metrics while a probe waits out a hung Redis. Requests that arrive
// during a probe are answered by the next one (each answer is at most one probe old).

#include <redcoord/core/master_pools.hpp>
#include <redcoord/core/pool.hpp>
#include <redcoord/http/route.hpp>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace redcoord::detail {

class readiness_prober {
public:
    using done_fn = std::function<void(http_response)>;

    readiness_prober(std::vector<std::shared_ptr<connection_pool>> pools,
                     std::chrono::milliseconds timeout);
    ~readiness_prober();
    readiness_prober(const readiness_prober&) = delete;
    readiness_prober& operator=(const readiness_prober&) = delete;

    // Queues `done`, called on the prober's thread with the next probe's answer. Dropped
    // uncalled when the prober stops first.
    void request(done_fn done);
    // Waits for a probe under way (at most about its timeout) and joins the thread. Idempotent.
    void stop() noexcept;

private:
    void loop();

    // The pools to probe; a Cluster pool stands for every master of its slot map.
    std::vector<std::unique_ptr<master_pools>> pools_;
    std::chrono::milliseconds timeout_;
    std::mutex mu_;
    std::condition_variable cv_;
    std::vector<done_fn> waiting_;
    bool stopping_ = false;
    std::thread thread_;
};

}  // namespace redcoord::detail
