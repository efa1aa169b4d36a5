#pragma once
/// @file
/// The runtime's event loop: a Boost.Asio `io_context` run by the runtime's own I/O thread,
/// or one the caller runs (runtime::create(io_context&)). Internal to redcoord (reached
/// through runtime::io()); not a stable API.

#include <redcoord/core/export.hpp>

#include <atomic>
#include <memory>
#include <mutex>
#include <thread>

namespace boost::asio {
class io_context;
}

REDCOORD_API_BEGIN
namespace redcoord::detail {

/// Owns, or borrows, the io_context that every asynchronous operation of a runtime runs on.
///
/// An owned context gets one I/O thread, started on first use of context() and stopped by the
/// destructor (from another thread: joined; from the I/O thread itself, as when the last
/// handler releases the runtime: detached, and it ends once the context runs out of work).
/// Nothing that runs on it may block: handlers only parse replies, arm timers and start
/// writes, and user completion handlers go to their own associated executors.
///
/// Thread-safety: every member function may be called from any thread.
class io_loop {
public:
    /// A loop with its own io_context and thread.
    io_loop();
    /// A loop on the caller's context: the caller runs it (no thread is started) and keeps it
    /// alive while this loop lives.
    explicit io_loop(boost::asio::io_context& external);
    ~io_loop();
    io_loop(const io_loop&) = delete;
    io_loop& operator=(const io_loop&) = delete;

    /// The context; an owned one has its thread running once this returns.
    /// @throws std::system_error when the thread cannot start.
    [[nodiscard]] boost::asio::io_context& context();
    /// True when called on the owned context's I/O thread.
    [[nodiscard]] bool on_io_thread() const noexcept;
    /// True when the context is the caller's.
    [[nodiscard]] bool external() const noexcept { return external_ != nullptr; }

private:
    struct owned;
    std::unique_ptr<owned> own_;
    boost::asio::io_context* external_ = nullptr;
    std::mutex start_mu_;
    std::thread thread_;
    std::atomic<std::thread::id> thread_id_{};
};

}  // namespace redcoord::detail

REDCOORD_API_END
