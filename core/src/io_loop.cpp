#include <redcoord/core/detail/io_loop.hpp>
#include <redcoord/core/detail/thread_name.hpp>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include <optional>

namespace redcoord::detail {

namespace asio = boost::asio;

struct io_loop::owned {
    asio::io_context io{1};  // one thread runs it: handlers need no locks among themselves
    std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work{
        asio::make_work_guard(io)};
    // Set by ~io_loop when it runs on the I/O thread itself: the thread then owns this and
    // deletes it once run() returns. Read and written on that thread only.
    bool orphaned = false;
};

io_loop::io_loop() : own_(std::make_unique<owned>()) {}

io_loop::io_loop(asio::io_context& external) : external_(&external) {}

io_loop::~io_loop() {
    if (!own_) return;
    std::thread t;
    {
        std::lock_guard l(start_mu_);
        t = std::move(thread_);
    }
    // Operations still pending hold their links, and the links this loop's context: let them
    // finish with operation_aborted, then stop.
    own_->work.reset();
    own_->io.stop();
    if (!t.joinable()) return;
    if (t.get_id() == std::this_thread::get_id()) {
        // The last handler released the runtime on the I/O thread: the thread ends by itself
        // once this handler returns (the context is stopped), and must not outlive what it
        // reads, so the context moves with it and the thread deletes it on its way out
        // (destroying the handlers still queued, as a join here would have).
        own_->orphaned = true;
        t.detach();
        (void)own_.release();
        return;
    }
    t.join();
}

asio::io_context& io_loop::context() {
    if (external_) return *external_;
    std::lock_guard l(start_mu_);
    if (!thread_.joinable()) {
        thread_ = std::thread([o = own_.get()] {
            name_this_thread("rc-io");
            o->io.run();
            if (o->orphaned) delete o;
        });
        thread_id_ = thread_.get_id();
    }
    return own_->io;
}

bool io_loop::on_io_thread() const noexcept {
    return own_ && thread_id_ == std::this_thread::get_id();
}

}  // namespace redcoord::detail
