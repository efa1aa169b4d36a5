#pragma once
/// @file
/// The Redis an example program runs against: the one its `--redis` option names, or a local
/// server of its own when none is named.

#include <redcoord/core/endpoint.hpp>
#include <redcoord/testing/local_server.hpp>

#include <optional>
#include <string>

namespace redcoord::testing {

/// The server `url` names, or, for an empty `url`, a local redis-server started now and
/// stopped with this object, so an example runs as it is on a machine with only
/// `redis-server` installed.
///
/// @par Thread safety
/// Not thread-safe; endpoint() may be read from any thread once constructed.
class server_or_url {
public:
    /// @throws invalid_argument for a malformed `url` (parse_endpoint());
    ///         redcoord::error when no URL is given and redis-server does not come up.
    explicit server_or_url(const std::string& url) {
        if (url.empty()) {
            own_.emplace();
            ep_ = own_->endpoint();
        } else {
            ep_ = parse_endpoint(url);
        }
    }

    /// Where to connect: the named server or the local one.
    [[nodiscard]] const redcoord::endpoint& endpoint() const noexcept { return ep_; }

private:
    std::optional<local_server> own_;  // only when no URL was given
    redcoord::endpoint ep_;
};

}  // namespace redcoord::testing
