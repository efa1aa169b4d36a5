#include <redcoord/core/errors.hpp>
#include <redcoord/core/reply.hpp>

namespace redcoord {
namespace {
[[noreturn]] void wrong(const char* wanted) {
    throw protocol_error(std::string("unexpected reply type: expected ") + wanted);
}
}  // namespace

reply reply::make_text(kind k, std::string s) {
    reply r;
    r.kind_ = k;
    r.text_ = std::move(s);
    return r;
}

reply reply::make_integer(std::int64_t v) {
    reply r;
    r.kind_ = kind::integer;
    r.integer_ = v;
    return r;
}

reply reply::make_array(std::vector<reply> elements) {
    reply r;
    r.kind_ = kind::array;
    r.elements_ = std::move(elements);
    return r;
}

const std::string& reply::text() const {
    if (kind_ != kind::string && kind_ != kind::status && kind_ != kind::error) wrong("text");
    return text_;
}

std::int64_t reply::integer() const {
    if (kind_ != kind::integer) wrong("integer");
    return integer_;
}

const std::vector<reply>& reply::elements() const {
    if (kind_ != kind::array) wrong("array");
    return elements_;
}

std::optional<std::string> reply::maybe_text() const {
    if (kind_ == kind::nil) return std::nullopt;
    if (kind_ != kind::string && kind_ != kind::status) wrong("string or nil");
    return text_;
}

bool reply::is_status(std::string_view s) const noexcept {
    return kind_ == kind::status && text_ == s;
}

}  // namespace redcoord
