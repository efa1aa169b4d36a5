#pragma once
/// @file
/// What `lock` and `rwlock` share: a held thing (a lock, a semaphore permit, an rw_lock hold)
/// behind one face, their common options, and the run itself: acquire in slices, supervise
/// CMD while held, release, and map the outcome to the exit code and JSON events.

#include "context.hpp"
#include "os_signals.hpp"

#include <redcoord/lock/acquisition.hpp>

#include <boost/signals2/connection.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace redcoord::cli {

/// A lock-like holding behind one face.
class held_lock {
public:
    virtual ~held_lock() = default;
    /// One acquire call waiting up to `wait` (milliseconds).
    [[nodiscard]] virtual std::optional<lock_acquisition> acquire(
        std::chrono::milliseconds wait) = 0;
    /// Releases; true when it was still held.
    virtual bool release() = 0;
    [[nodiscard]] virtual bool lost() const = 0;
    /// The current holding (its validity and fencing token), nullopt when none.
    [[nodiscard]] virtual std::optional<lock_acquisition> current() const = 0;
    /// Calls `f` when the holding is lost (may connect nothing: the supervisor checks lost()).
    [[nodiscard]] virtual boost::signals2::scoped_connection on_lost(std::function<void()> f) = 0;
};

/// The options of a held run.
struct held_args {
    std::string name;
    std::vector<std::string> command;
    std::chrono::milliseconds ttl{30000};
    std::optional<std::chrono::milliseconds> wait;  ///< nullopt: wait forever
    std::chrono::milliseconds wait_value{0};
    std::chrono::milliseconds grace{5000};
    std::optional<std::string> label;  ///< --label: nullopt gives <host>:<pid>
};

/// Adds NAME, CMD, --ttl, --wait, --grace and --label to `sub` (`what` names the thing: "Lock").
void add_held_options(CLI::App& sub, held_args& a, const std::string& what);

/// @throws invalid_argument when --ttl is below min_lease (it would be lost before extended).
void check_held_ttl(const held_args& a);

/// The "not acquired within --wait" outcome: a note, an event, exit 124.
int not_acquired(const context& ctx, const held_args& a);

/// Acquires in slices of at most 250 ms, so SIGINT/SIGTERM are noticed while waiting.
/// @return the acquisition, or nullopt with `status` set (not acquired, interrupted).
[[nodiscard]] std::optional<lock_acquisition> acquire_sliced(const context& ctx, const held_args& a,
                                                             held_lock& lock,
                                                             signal_source& signals, int& status);

/// With `got` held: emits "acquired" (`describe` adds its own fields), runs CMD under supervise() with
/// REDCOORD_LOCK, REDCOORD_FENCING_TOKEN and `env`, releases, and returns the exit status
/// (CMD's, 125 when lost, 128 + signal when interrupted).
[[nodiscard]] int run_held(const context& ctx, const held_args& a, held_lock& lock,
                           const lock_acquisition& got, signal_source& signals, const wakeup& wake,
                           const std::function<void(json_object&)>& describe,
                           std::vector<std::string> env);

}  // namespace redcoord::cli
