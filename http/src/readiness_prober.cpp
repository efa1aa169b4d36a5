#include "readiness_prober.hpp"

#include <redcoord/core/detail/thread_name.hpp>
#include <redcoord/http/health.hpp>

namespace redcoord::detail {

readiness_prober::readiness_prober(std::vector<std::shared_ptr<connection_pool>> pools,
                                   std::chrono::milliseconds timeout)
    : timeout_(timeout) {
    pools_.reserve(pools.size());
    for (auto& p : pools) pools_.push_back(std::make_unique<master_pools>(std::move(p)));
    thread_ = std::thread([this] {
        name_this_thread("rc-ready-probe");
        loop();
    });
}

readiness_prober::~readiness_prober() { stop(); }

void readiness_prober::request(done_fn done) {
    {
        std::lock_guard l(mu_);
        if (stopping_) return;
        waiting_.push_back(std::move(done));
    }
    cv_.notify_one();
}

void readiness_prober::stop() noexcept {
    {
        std::lock_guard l(mu_);
        stopping_ = true;
    }
    cv_.notify_one();
    if (thread_.joinable()) thread_.join();
    std::lock_guard l(mu_);
    waiting_.clear();
}

void readiness_prober::loop() {
    for (;;) {
        std::vector<done_fn> batch;
        {
            std::unique_lock l(mu_);
            cv_.wait(l, [this] { return stopping_ || !waiting_.empty(); });
            if (stopping_) return;
            batch.swap(waiting_);
        }
        http_response answer;
        try {
            // Every master of a cluster: one that is down fails the probe by name. A cluster
            // whose map cannot be learned is probed through its pool (and fails there).
            std::vector<std::shared_ptr<connection_pool>> held;
            for (auto& p : pools_) {
                try {
                    for (auto& m : p->get()) held.push_back(std::move(m));
                } catch (const std::exception&) {
                    held.push_back(p->pool());
                }
            }
            std::vector<connection_pool*> raw;
            raw.reserve(held.size());
            for (const auto& p : held) raw.push_back(p.get());
            const auto entries = check_readiness(raw, timeout_);
            answer = readiness_answer(entries);
        } catch (const std::exception& e) {
            answer.status = 503;
            answer.body = std::string("not ready\nprobe failed: ") + e.what() + "\n";
        }
        for (auto& done : batch) done(answer);
    }
}

}  // namespace redcoord::detail
