// The skeleton of every waiting async_* operation (core/detail/async_wait_op.hpp), without a
// server: a wake notice before or during a wait, the deadline, cancellation before the start
// and during a wait, completion exactly once, completion off the I/O thread, and a runtime
// destroyed while an operation is pending.
#include <redcoord/core/detail/async_initiate.hpp>
#include <redcoord/core/detail/async_wait_op.hpp>
#include <redcoord/core/runtime.hpp>
#include <redcoord/testing/async.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <thread>

using namespace std::chrono_literals;
using redcoord::detail::async_wait_op;
using redcoord::testing::is_operation_aborted;
namespace asio = boost::asio;

namespace {

using clock_type = std::chrono::steady_clock;

// One wait of `wait`, completing with whether a notice ended it, or aborted when cancelled.
class one_wait final : public async_wait_op<bool> {
public:
    one_wait(asio::io_context& io, clock_type::duration wait,
             redcoord::detail::async_completion<bool> done)
        : async_wait_op(io, std::move(done), "one_wait"), wait_(wait) {}

    std::atomic<int> began{0}, completions_run{0};
    std::atomic<bool> armed{false};

    // Completes again from the strand, as a late reply would try to.
    void complete_again() {
        asio::post(strand_, [self = self_as<one_wait>()] { self->complete(nullptr, false); });
    }

private:
    void begin() override {
        ++began;
        wait_until(clock_type::now() + wait_, [this](bool woke) {
            if (cancelled()) return complete(aborted(), std::nullopt);
            complete(nullptr, woke);
        });
        armed = waiting();
    }
    void on_complete() override { ++completions_run; }

    clock_type::duration wait_;
};

struct outcome {
    std::exception_ptr failure;
    std::optional<bool> woke;
    int calls = 0;
};

// A plain io_context run by one thread, and an operation on it that records its completion.
struct loop {
    asio::io_context io;
    std::promise<outcome> p;
    std::future<outcome> f = p.get_future();
    std::atomic<int> calls{0};
    std::shared_ptr<one_wait> op;
    std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work{
        asio::make_work_guard(io)};
    std::thread runner;

    explicit loop(clock_type::duration wait) {
        op = std::make_shared<one_wait>(io, wait,
                                        [this](std::exception_ptr e, std::optional<bool> v) {
                                            if (++calls == 1) p.set_value({std::move(e), v, 1});
                                        });
    }
    void run() {
        runner = std::thread([this] { io.run(); });
    }
    outcome result() {
        EXPECT_EQ(f.wait_for(30s), std::future_status::ready);
        return f.get();
    }
    ~loop() {
        work.reset();
        op.reset();
        if (runner.joinable()) runner.join();
    }
};

bool eventually(const std::function<bool()>& pred) {
    const auto until = clock_type::now() + 30s;
    while (clock_type::now() < until) {
        if (pred()) return true;
        std::this_thread::sleep_for(1ms);
    }
    return pred();
}

}  // namespace

TEST(AsyncWaitOp, NoticeBeforeTheWaitEndsItAtOnce) {
    loop l(1h);
    l.op->notify();  // posted before begin(): kept until the wait
    l.op->start();
    l.run();
    const auto r = l.result();
    EXPECT_FALSE(r.failure);
    ASSERT_TRUE(r.woke.has_value());
    EXPECT_TRUE(*r.woke);
}

TEST(AsyncWaitOp, NoticeDuringTheWaitEndsIt) {
    loop l(1h);
    l.op->start();
    l.run();
    ASSERT_TRUE(eventually([&] { return l.op->armed.load(); }));
    l.op->notify();
    const auto r = l.result();
    EXPECT_FALSE(r.failure);
    ASSERT_TRUE(r.woke.has_value());
    EXPECT_TRUE(*r.woke);
}

TEST(AsyncWaitOp, TheDeadlineEndsTheWaitWithoutANotice) {
    loop l(50ms);
    const auto started = clock_type::now();
    l.op->start();
    l.run();
    const auto r = l.result();
    EXPECT_GE(clock_type::now() - started, 50ms);
    EXPECT_FALSE(r.failure);
    ASSERT_TRUE(r.woke.has_value());
    EXPECT_FALSE(*r.woke);
}

TEST(AsyncWaitOp, CancellationDuringTheWaitAbortsIt) {
    loop l(1h);
    l.op->start();
    l.run();
    ASSERT_TRUE(eventually([&] { return l.op->armed.load(); }));
    l.op->cancel();
    const auto r = l.result();
    EXPECT_TRUE(is_operation_aborted(r.failure));
    EXPECT_FALSE(r.woke.has_value());
}

TEST(AsyncWaitOp, CancellationBeforeTheStartNeverWaits) {
    loop l(1h);
    l.op->cancel();
    l.op->start();
    l.run();
    const auto r = l.result();
    EXPECT_TRUE(is_operation_aborted(r.failure));
    EXPECT_EQ(l.op->began.load(), 1);
    EXPECT_FALSE(l.op->armed.load());
}

TEST(AsyncWaitOp, CompletesExactlyOnceWhateverComesAfter) {
    loop l(1h);
    l.op->start();
    l.run();
    ASSERT_TRUE(eventually([&] { return l.op->armed.load(); }));
    l.op->notify();
    (void)l.result();
    // Late notices, cancellations and completions find it completed.
    l.op->notify();
    l.op->cancel();
    l.op->complete_again();
    l.op->cancel();
    std::promise<void> drained;
    asio::post(l.io, [&] { drained.set_value(); });
    ASSERT_EQ(drained.get_future().wait_for(30s), std::future_status::ready);
    EXPECT_EQ(l.calls.load(), 1);
    EXPECT_EQ(l.op->completions_run.load(), 1);
}

TEST(AsyncWaitOp, CompletionRunsOffTheRuntimesIoThread) {
    auto rt = redcoord::runtime::create();
    std::promise<std::thread::id> io_thread;
    asio::post(rt->io(), [&] { io_thread.set_value(std::this_thread::get_id()); });
    const auto io_id = io_thread.get_future().get();
    std::promise<std::thread::id> ran_on;
    redcoord::detail::initiate<bool>(
        *rt,
        [&](std::exception_ptr, std::optional<bool>) {
            ran_on.set_value(std::this_thread::get_id());
        },
        [&](auto done) {
            auto op = std::make_shared<one_wait>(rt->io(), 1ms, std::move(done));
            op->start();
            return op;
        });
    auto f = ran_on.get_future();
    ASSERT_EQ(f.wait_for(30s), std::future_status::ready);
    EXPECT_NE(f.get(), io_id);
}

TEST(AsyncWaitOp, RuntimeDestroyedWhileAnOperationWaitsNeverHangs) {
    auto rt = redcoord::runtime::create();
    std::weak_ptr<one_wait> weak;
    std::promise<bool> p;
    auto f = p.get_future();
    // Holds the promise as a use_future handler does: broken when the handler is destroyed.
    redcoord::detail::initiate<bool>(
        *rt,
        [p = std::move(p)](const std::exception_ptr& e, std::optional<bool> v) mutable {
            if (e) return p.set_exception(e);
            p.set_value(v.value_or(false));
        },
        [&](auto done) {
            auto op = std::make_shared<one_wait>(rt->io(), 1h, std::move(done));
            weak = op;
            op->start();
            return op;
        });
    ASSERT_TRUE(eventually([&] {
        auto op = weak.lock();
        return op && op->armed.load();
    }));
    auto teardown = std::async(std::launch::async, [&] { rt.reset(); });
    ASSERT_EQ(teardown.wait_for(30s), std::future_status::ready);
    // The pending operation went with its loop and so did its handler: the future is ready
    // (its promise broken), never left waiting.
    ASSERT_EQ(f.wait_for(30s), std::future_status::ready);
    EXPECT_ANY_THROW((void)f.get());
    EXPECT_TRUE(weak.expired());
}

// The runtime's last reference released by a handler on its own I/O thread (an operation that
// held the runtime completing last): the loop cannot join its own thread, so the thread takes
// the context with it and frees it on its way out, destroying the handlers still queued.
// Before, the context was left allocated (LeakSanitizer: an async barrier test under load).
TEST(AsyncWaitOp, ARuntimeReleasedOnItsIoThreadFreesItsLoop) {
    struct flag {
        explicit flag(std::shared_ptr<std::atomic<bool>> d) : destroyed(std::move(d)) {}
        flag(const flag&) = delete;
        flag& operator=(const flag&) = delete;
        ~flag() { *destroyed = true; }
        std::shared_ptr<std::atomic<bool>> destroyed;
    };
    auto destroyed = std::make_shared<std::atomic<bool>>(false);
    {
        auto rt = redcoord::runtime::create();
        auto& io = rt->io();
        {
            // A handler that never runs: it goes only when the context is destroyed. It is the
            // timer's only owner: a copy here could outlive the context on this thread (the
            // I/O thread may free the context first), and its release would then touch the
            // freed timer service (ThreadSanitizer: heap-use-after-free).
            auto timer = std::make_shared<asio::steady_timer>(io, 1h);
            timer->async_wait(
                [timer, g = std::make_shared<flag>(destroyed)](boost::system::error_code) {});
        }
        asio::post(io, [rt = std::move(rt)]() mutable { rt.reset(); });
    }
    EXPECT_TRUE(eventually([&] { return destroyed->load(); }))
        << "the I/O thread's context was never freed";
}
