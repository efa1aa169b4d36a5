#pragma once
/// @file
/// An owning copy of one RESP2 reply, so no hiredis type appears in public headers.

#include <redcoord/core/export.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

REDCOORD_API_BEGIN
namespace redcoord {

/// One reply from the server: a tree of strings, integers, nils, statuses, errors and arrays.
///
/// @par Thread safety
/// A plain value type.
///
/// @par Errors
/// Accessors of the wrong kind (str() of an integer, integer() of a string, ...) throw
/// protocol_error; the predicates never throw.
///
/// @par Cost
/// A value in memory: nothing is sent.
class reply {
public:
    /// RESP2 reply kinds.
    enum class kind {
        nil,
        string,
        status,
        integer,
        array,
        error
    };

    reply() = default;
    /// Makes a reply of kind `k` with text `s` (string, status, error).
    static reply make_text(kind k, std::string s);
    /// Makes an integer reply.
    static reply make_integer(std::int64_t v);
    /// Makes an array reply.
    static reply make_array(std::vector<reply> elements);

    /// The reply's RESP type.
    [[nodiscard]] kind type() const noexcept { return kind_; }
    /// True for a nil reply (a missing key, a timed-out blocking pop).
    [[nodiscard]] bool is_nil() const noexcept { return kind_ == kind::nil; }
    /// True for an error reply (its text: str()).
    [[nodiscard]] bool is_error() const noexcept { return kind_ == kind::error; }
    /// True for a bulk string reply.
    [[nodiscard]] bool is_string() const noexcept { return kind_ == kind::string; }
    /// True for a status reply ("OK", "QUEUED").
    [[nodiscard]] bool is_status() const noexcept { return kind_ == kind::status; }
    /// True for an integer reply.
    [[nodiscard]] bool is_integer() const noexcept { return kind_ == kind::integer; }
    /// True for an array reply (its elements: elements()).
    [[nodiscard]] bool is_array() const noexcept { return kind_ == kind::array; }

    /// The text of a string, status or error reply (binary-safe).
    /// @throws protocol_error for other kinds.
    [[nodiscard]] const std::string& text() const;
    /// The value of an integer reply. @throws protocol_error for other kinds.
    [[nodiscard]] std::int64_t integer() const;
    /// The elements of an array reply. @throws protocol_error for other kinds.
    [[nodiscard]] const std::vector<reply>& elements() const;
    /// The text of a string reply, or nullopt for nil. @throws protocol_error otherwise.
    [[nodiscard]] std::optional<std::string> maybe_text() const;
    /// True for a status reply equal to `s` (for example "OK").
    [[nodiscard]] bool is_status(std::string_view s) const noexcept;

private:
    kind kind_ = kind::nil;
    std::int64_t integer_ = 0;
    std::string text_;
    std::vector<reply> elements_;
};

}  // namespace redcoord

REDCOORD_API_END
