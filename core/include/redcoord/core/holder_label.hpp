#pragma once
/// @file
/// Holder labels: who holds a lock, a permit or a share, shown by `inspect`, the dashboard and
/// the CLI. A label rides in the holding's token (`<40 hex digits>/<label>`), so it costs no
/// extra key, no extra command and no extra byte a holder of another client must know about,
/// and it lives and dies with the holding. It is informative only: ownership is decided by the
/// whole token, never by the label, and anyone who can read the key can read the label (do not
/// put secrets in it).

#include <redcoord/core/export.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

REDCOORD_API_BEGIN
namespace redcoord {

/// The longest label, in bytes.
inline constexpr std::size_t max_holder_label = 200;

/// `<host>:<pid>` of this process (gethostname(2), getpid(2)): the label a holding gets when
/// its options leave the label unset. Computed on each call (a forked child gets its own pid).
/// Thread-safety: any thread.
[[nodiscard]] std::string default_holder_label();

/// The label a holding carries for the option value `label`: `default_holder_label()` when
/// nullopt, none when empty, else `*label`.
/// @throws invalid_argument when the label is longer than max_holder_label bytes or holds a
/// CR, LF or NUL byte (it is printed on one line by `inspect`).
/// Thread-safety: any thread.
[[nodiscard]] std::string resolve_holder_label(const std::optional<std::string>& label);

/// A fresh holding token (random_token(): 40 hex digits) carrying `label` after a `/`, or
/// the bare random token when `label` is empty. `label` is as resolve_holder_label() returns.
/// @throws error if the kernel cannot supply randomness.
/// Thread-safety: any thread.
[[nodiscard]] std::string labelled_token(std::string_view label);

/// The label inside a holding's token (the value of a lock key, a semaphore member without its
/// `:<i>` suffix, ...); empty when it carries none or was not made by labelled_token() (a
/// holder of another client).
/// Thread-safety: any thread; the view points into `token`.
[[nodiscard]] std::string_view holder_label_of(std::string_view token) noexcept;

}  // namespace redcoord
REDCOORD_API_END
