#pragma once
// A streaming JSON writer for the dashboard's /api answers. Every string from Redis goes
// through it: escaped so that the text is valid JSON whatever the bytes (invalid UTF-8 is read
// as Latin-1), with `<`, `>` and `&` escaped too so no answer can be read as markup, and cut
// at a byte limit with the full size said, so one huge payload cannot swell an answer.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace redcoord::detail {

class json_out {
public:
    // `cap`: most bytes of one string value written; a longer one is cut and followed by
    // ` … [N bytes]`.
    explicit json_out(std::size_t cap) : cap_(cap) {}

    json_out& begin_object();
    json_out& end_object();
    json_out& begin_array();
    json_out& end_array();
    // Starts a member of the current object; the next value written is its value.
    json_out& key(std::string_view k);

    json_out& value(std::string_view s);
    json_out& value(const char* s) { return value(std::string_view(s)); }
    json_out& value(const std::string& s) { return value(std::string_view(s)); }
    json_out& value(std::uint64_t n);
    json_out& value(std::int64_t n);
    json_out& value(int n) { return value(static_cast<std::int64_t>(n)); }
    json_out& value(unsigned n) { return value(static_cast<std::uint64_t>(n)); }
    json_out& value(bool b);
    json_out& null();
    // Inserts `json`, a complete value another json_out wrote, as the next value.
    json_out& raw(std::string_view json);
    template <class T>
    json_out& value(const std::optional<T>& v) {
        return v ? value(*v) : null();
    }
    json_out& value(std::chrono::milliseconds ms) {
        return value(static_cast<std::int64_t>(ms.count()));
    }

    // Shorthand for key(k).value(v).
    template <class T>
    json_out& field(std::string_view k, const T& v) {
        return key(k).value(v);
    }

    [[nodiscard]] const std::string& text() const noexcept { return out_; }
    [[nodiscard]] std::size_t size() const noexcept { return out_.size(); }

private:
    void separate();
    void quoted(std::string_view s);

    std::size_t cap_;
    std::string out_;
    bool first_ = true;       // no member or element written yet at this level
    bool after_key_ = false;  // a key was written: the value needs no comma
};

}  // namespace redcoord::detail
