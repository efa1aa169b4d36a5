#pragma once
/// @file
/// Which Redis servers a command talks to: `--redis URL` (repeatable), else the environment
/// variable `REDCOORD_REDIS` (comma-separated), else `redis://127.0.0.1:6379`. A password may
/// come from `REDCOORD_PASSWORD` so it never appears in `ps` output.

#include <redcoord/core/endpoint.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace redcoord::cli {

/// The URL used when neither `--redis` nor `REDCOORD_REDIS` names one.
inline constexpr std::string_view default_url = "redis://127.0.0.1:6379";

/// Splits the value of `REDCOORD_REDIS` into URLs. Commas separate URLs, except that a piece
/// without `://` continues the previous URL, so a Sentinel list
/// `redis-sentinel://h1:26379,h2:26379/svc` survives. Blank pieces are skipped.
[[nodiscard]] std::vector<std::string> split_url_list(std::string_view list);

/// The URLs to use: `flags` when non-empty, else split_url_list(`env_redis`) when set and
/// non-blank, else {default_url}.
[[nodiscard]] std::vector<std::string> choose_urls(const std::vector<std::string>& flags,
                                                   const char* env_redis);

/// `--connect-timeout` and `--command-timeout`, each only when given: it then overrides the
/// URL's `connect_timeout` / `command_timeout` (else the URL's value, or the endpoint's default,
/// stands).
struct endpoint_timeouts {
    std::optional<std::chrono::milliseconds> connect;  ///< TCP connect plus handshake; > 0.
    std::optional<std::chrono::milliseconds> command;  ///< One reply; >= 0, 0 waits forever.
};

/// Parses `urls` into endpoints. An endpoint whose URL carries no password gets
/// `env_password` (when set and non-empty); a Sentinel endpoint gets `env_sentinel_password`
/// (REDCOORD_SENTINEL_PASSWORD, when set and non-empty) for the sentinels themselves, which a
/// URL cannot carry yet. Applies the timeouts given in `timeouts`.
/// @throws redcoord::invalid_argument for a bad URL (message without any password), an empty
///         list, two URLs naming the same server, or a timeout out of range (naming its flag).
[[nodiscard]] std::vector<endpoint> resolve_endpoints(const std::vector<std::string>& urls,
                                                      const char* env_password,
                                                      endpoint_timeouts timeouts = {},
                                                      const char* env_sentinel_password = nullptr);

}  // namespace redcoord::cli
