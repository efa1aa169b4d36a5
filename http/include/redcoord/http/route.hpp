#pragma once
/// @file
/// The request and answer types that metrics_server's extra handlers (the dashboard, a
/// service's own pages) see, so a handler needs no Boost.Beast in its interface.

#include <redcoord/core/export.hpp>

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

REDCOORD_API_BEGIN
namespace redcoord {

/// One HTTP request as a handler sees it.
///
/// Thread-safety: a plain value type.
struct http_request {
    std::string method;  ///< `GET`, `HEAD`, `POST`, ... as sent.
    std::string path;    ///< The target's path, without the query (`/api/locks`).
    std::string query;   ///< What follows `?` in the target, undecoded; empty when none.
    std::string body;    ///< The request body (bounded by metrics_server_options).
    std::string host;    ///< The `Host` header as sent (`127.0.0.1:8080`); empty when absent.
    /// Every header field as sent, in order, names in lower case (`authorization`, `origin`).
    std::vector<std::pair<std::string, std::string>> headers;

    /// The value of the first header field `name` (any case), or nothing when absent.
    [[nodiscard]] std::optional<std::string_view> header(std::string_view name) const;

    /// The value of query parameter `name` (percent-decoded, `+` as space), or empty when the
    /// query does not name it.
    [[nodiscard]] std::optional<std::string> param(const std::string& name) const;
};

/// One HTTP answer.
///
/// Thread-safety: a plain value type.
struct http_response {
    int status = 200;                                          ///< HTTP status code.
    std::string content_type = "text/plain; charset=utf-8";    ///< `Content-Type`.
    std::string body;                                          ///< The body, sent as is.
    std::vector<std::pair<std::string, std::string>> headers;  ///< Extra header fields.
};

/// A route handler: answers the requests it serves and returns nothing for the others, so
/// several handlers can share one server (the first that answers wins). Runs on the server's
/// thread; an exception becomes a 500 answer with its message.
using http_handler = std::function<std::optional<http_response>(const http_request&)>;

/// `text` with `%XX` decoded and `+` read as a space (query strings); a malformed escape is
/// kept as is.
[[nodiscard]] std::string percent_decode(std::string_view text);

}  // namespace redcoord
REDCOORD_API_END
