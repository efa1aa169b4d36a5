#pragma once
/// @file
/// Clang thread-safety annotations (`-Wthread-safety`), in the style of abseil's
/// `absl/base/thread_annotations.h`, and a mutex whose lock types carry them (libstdc++'s
/// std::mutex and std::lock_guard are not annotated, so Clang cannot check code that uses
/// them). On compilers without the attributes (GCC) every macro expands to nothing.
/// Internal to redcoord; not a stable API.
///
/// Usage:
/// @code
///   detail::mutex mu_;
///   int count_ REDCOORD_GUARDED_BY(mu_);
///   void bump_locked() REDCOORD_REQUIRES(mu_);
///   void bump() REDCOORD_EXCLUDES(mu_) { detail::lock_guard lk(mu_); bump_locked(); }
/// @endcode

#include <redcoord/core/export.hpp>

#include <condition_variable>
#include <mutex>

#if defined(__clang__) && defined(__has_attribute)
#if __has_attribute(guarded_by)
#define REDCOORD_THREAD_ANNOTATION_(x) __attribute__((x))
#endif
#endif
#ifndef REDCOORD_THREAD_ANNOTATION_
#define REDCOORD_THREAD_ANNOTATION_(x)
#endif

/// The member is read and written only with the given capability (mutex) held.
#define REDCOORD_GUARDED_BY(x) REDCOORD_THREAD_ANNOTATION_(guarded_by(x))
/// The pointee is read and written only with the given capability held.
#define REDCOORD_PT_GUARDED_BY(x) REDCOORD_THREAD_ANNOTATION_(pt_guarded_by(x))
/// The function must be called with the capabilities held (exclusively).
#define REDCOORD_REQUIRES(...) REDCOORD_THREAD_ANNOTATION_(requires_capability(__VA_ARGS__))
/// The function must be called with the capabilities held at least shared.
#define REDCOORD_REQUIRES_SHARED(...) \
    REDCOORD_THREAD_ANNOTATION_(requires_shared_capability(__VA_ARGS__))
/// The function acquires the capabilities and returns holding them.
#define REDCOORD_ACQUIRE(...) REDCOORD_THREAD_ANNOTATION_(acquire_capability(__VA_ARGS__))
/// The function releases the capabilities.
#define REDCOORD_RELEASE(...) REDCOORD_THREAD_ANNOTATION_(release_capability(__VA_ARGS__))
/// The function acquires the capability when it returns `b`.
#define REDCOORD_TRY_ACQUIRE(...) REDCOORD_THREAD_ANNOTATION_(try_acquire_capability(__VA_ARGS__))
/// The function must be called without the capabilities held (it takes them itself).
#define REDCOORD_EXCLUDES(...) REDCOORD_THREAD_ANNOTATION_(locks_excluded(__VA_ARGS__))
/// The capability `x` must be taken before this one (lock order).
#define REDCOORD_ACQUIRED_BEFORE(...) REDCOORD_THREAD_ANNOTATION_(acquired_before(__VA_ARGS__))
/// The capability `x` must be taken after this one (lock order).
#define REDCOORD_ACQUIRED_AFTER(...) REDCOORD_THREAD_ANNOTATION_(acquired_after(__VA_ARGS__))
/// The function returns a reference to the given capability.
#define REDCOORD_RETURN_CAPABILITY(x) REDCOORD_THREAD_ANNOTATION_(lock_returned(x))
/// The class is a capability (a mutex).
#define REDCOORD_CAPABILITY(x) REDCOORD_THREAD_ANNOTATION_(capability(x))
/// The class is an RAII holder of a capability.
#define REDCOORD_SCOPED_CAPABILITY REDCOORD_THREAD_ANNOTATION_(scoped_lockable)
/// Asserts to the analysis that the capability is held (checked by the caller's logic).
#define REDCOORD_ASSERT_CAPABILITY(x) REDCOORD_THREAD_ANNOTATION_(assert_capability(x))
/// Turns the analysis off for one function (say why next to each use).
#define REDCOORD_NO_THREAD_SAFETY_ANALYSIS REDCOORD_THREAD_ANNOTATION_(no_thread_safety_analysis)

REDCOORD_API_BEGIN
namespace redcoord::detail {

/// A std::mutex the analysis knows as a capability.
class REDCOORD_CAPABILITY("mutex") mutex {
public:
    mutex() = default;
    mutex(const mutex&) = delete;
    mutex& operator=(const mutex&) = delete;

    void lock() REDCOORD_ACQUIRE() { mu_.lock(); }
    void unlock() REDCOORD_RELEASE() { mu_.unlock(); }
    bool try_lock() REDCOORD_TRY_ACQUIRE(true) { return mu_.try_lock(); }
    /// Tells the analysis that the calling thread holds this mutex (no run-time check).
    void assert_held() const REDCOORD_ASSERT_CAPABILITY(this) {}
    /// The underlying mutex (for std::condition_variable through unique_lock::native()).
    std::mutex& native() noexcept { return mu_; }

private:
    std::mutex mu_;
};

/// Holds a detail::mutex for its scope.
class REDCOORD_SCOPED_CAPABILITY lock_guard {
public:
    explicit lock_guard(mutex& m) REDCOORD_ACQUIRE(m) : m_(m) { m_.lock(); }
    ~lock_guard() REDCOORD_RELEASE() { m_.unlock(); }
    lock_guard(const lock_guard&) = delete;
    lock_guard& operator=(const lock_guard&) = delete;

private:
    mutex& m_;
};

/// Tag: try to take the mutex without blocking (see unique_lock::owns_lock()).
struct try_to_lock_t {
    explicit try_to_lock_t() = default;
};
inline constexpr try_to_lock_t try_to_lock{};

/// A non-movable unique lock over a detail::mutex that a std::condition_variable can wait on
/// (through native()); unlock()/lock() in between are tracked by the analysis.
class REDCOORD_SCOPED_CAPABILITY unique_lock {
public:
    explicit unique_lock(mutex& m) REDCOORD_ACQUIRE(m) : lk_(m.native()) {}
    /// Takes the mutex only if it is free; check owns_lock(). The analysis treats the
    /// mutex as held in the scope, so use it only where owns_lock() guards every access.
    unique_lock(mutex& m, try_to_lock_t) REDCOORD_ACQUIRE(m) : lk_(m.native(), std::try_to_lock) {}
    ~unique_lock() REDCOORD_RELEASE() = default;
    unique_lock(const unique_lock&) = delete;
    unique_lock& operator=(const unique_lock&) = delete;

    void lock() REDCOORD_ACQUIRE() { lk_.lock(); }
    void unlock() REDCOORD_RELEASE() { lk_.unlock(); }
    [[nodiscard]] bool owns_lock() const noexcept { return lk_.owns_lock(); }
    /// For std::condition_variable::wait*(): the wait releases and retakes the mutex, which
    /// the analysis treats as held throughout.
    std::unique_lock<std::mutex>& native() noexcept { return lk_; }

private:
    std::unique_lock<std::mutex> lk_;
};

}  // namespace redcoord::detail

REDCOORD_API_END
