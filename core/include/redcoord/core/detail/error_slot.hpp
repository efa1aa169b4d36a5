#pragma once
/// @file
/// The latest failure of a background loop (a worker's claims, a scheduler's passes), kept for
/// a last_error() accessor: the loop retries whatever it was, so this is how a caller sees a
/// failure no retry cures (a permission_error, for example). Internal to redcoord.

#include <redcoord/core/export.hpp>

#include <atomic>
#include <cstdint>
#include <exception>
#include <mutex>
#include <string>

REDCOORD_API_BEGIN
namespace redcoord::detail {

/// The what() of the exception in `e` ("unknown error" for one that is not a std::exception):
/// a failure's text, for a message or a log record.
inline std::string message_of(const std::exception_ptr& e) {
    try {
        std::rethrow_exception(e);
    } catch (const std::exception& x) {
        return x.what();
    } catch (...) {
        return "unknown error";
    }
}

/// A count of failures and the latest one. Thread-safe.
class error_slot {
public:
    /// Counts the exception being handled and keeps it; call from a catch block.
    void record() noexcept {
        count_.fetch_add(1);
        std::lock_guard lk(mu_);
        last_ = std::current_exception();
    }
    /// The latest recorded exception, or null.
    [[nodiscard]] std::exception_ptr last() const {
        std::lock_guard lk(mu_);
        return last_;
    }
    /// How many were recorded.
    [[nodiscard]] std::uint64_t count() const noexcept { return count_.load(); }

private:
    std::atomic<std::uint64_t> count_{0};
    mutable std::mutex mu_;
    std::exception_ptr last_;
};

}  // namespace redcoord::detail
REDCOORD_API_END
