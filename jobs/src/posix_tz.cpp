#include "posix_tz.hpp"

#include <redcoord/core/errors.hpp>

#include <cctype>
#include <string>

namespace redcoord::detail {

namespace {

using namespace std::chrono;

class reader {
public:
    explicit reader(std::string_view s) : s_(s) {}
    [[noreturn]] void bad(const char* why) const {
        throw invalid_argument("time zone rule '" + std::string(s_) + "': " + why);
    }
    bool done() const { return i_ >= s_.size(); }
    char peek() const { return done() ? '\0' : s_[i_]; }
    bool take(char c) {
        if (peek() != c) return false;
        ++i_;
        return true;
    }
    void name() {
        if (take('<')) {
            while (!done() && peek() != '>') ++i_;
            if (!take('>')) bad("an unterminated <name>");
            return;
        }
        std::size_t n = 0;
        while (std::isalpha(static_cast<unsigned char>(peek()))) ++i_, ++n;
        if (n < 3) bad("a zone abbreviation has fewer than 3 letters");
    }
    int number(int max) {
        if (!std::isdigit(static_cast<unsigned char>(peek()))) bad("a number is missing");
        int v = 0;
        while (std::isdigit(static_cast<unsigned char>(peek()))) {
            v = v * 10 + (s_[i_++] - '0');
            if (v > max) bad("a number is out of range");
        }
        return v;
    }
    // [+-]hh[:mm[:ss]] in seconds, hours up to `max_hours`.
    std::int32_t clock(int max_hours) {
        const bool negative = take('-');
        if (!negative) (void)take('+');
        std::int32_t v = number(max_hours) * 3600;
        if (take(':')) v += number(59) * 60;
        if (take(':')) v += number(59);
        return negative ? -v : v;
    }
    posix_tz::date rule_date() {
        posix_tz::date d;
        if (take('J')) {
            d.kind = posix_tz::date::form::julian1;
            d.day = number(365);
            if (d.day < 1) bad("Jn needs n in 1..365");
        } else if (take('M')) {
            d.kind = posix_tz::date::form::month_week_day;
            d.month = number(12);
            if (!take('.')) bad("Mm.w.d needs '.'");
            d.week = number(5);
            if (!take('.')) bad("Mm.w.d needs '.'");
            d.day = number(6);
            if (d.month < 1 || d.week < 1) bad("Mm.w.d out of range");
        } else {
            d.kind = posix_tz::date::form::julian0;
            d.day = number(365);
        }
        if (take('/')) d.time = clock(167);
        return d;
    }

private:
    std::string_view s_;
    std::size_t i_ = 0;
};

bool leap(int y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

// The local midnight (as seconds, in a calendar where local time is counted like UTC) of
// `d` in year `y`.
std::int64_t local_day(const posix_tz::date& d, int y) {
    sys_days day;
    switch (d.kind) {
        case posix_tz::date::form::julian1:
            day = sys_days{year(y) / 1 / 1} + days(d.day - 1 + (leap(y) && d.day >= 60 ? 1 : 0));
            break;
        case posix_tz::date::form::julian0: day = sys_days{year(y) / 1 / 1} + days(d.day); break;
        case posix_tz::date::form::month_week_day: {
            const auto ym = year(y) / month(static_cast<unsigned>(d.month));
            const sys_days first{ym / 1};
            const auto first_wd = static_cast<int>(weekday{first}.c_encoding());
            int dom = 1 + (d.day - first_wd + 7) % 7 + (d.week - 1) * 7;
            const auto days_in =
                static_cast<int>(static_cast<unsigned>((ym / std::chrono::last).day()));
            while (dom > days_in) dom -= 7;
            day = first + days(dom - 1);
            break;
        }
    }
    return duration_cast<seconds>(day.time_since_epoch()).count();
}

}  // namespace

posix_tz posix_tz::parse(std::string_view s) {
    reader r(s);
    posix_tz tz;
    r.name();
    // POSIX offsets are west of UTC ("CET-1" is one hour east): negate.
    tz.std_offset = -r.clock(24);
    if (r.done()) return tz;
    r.name();
    tz.dst_offset = tz.std_offset + 3600;
    if (!r.done() && r.peek() != ',') tz.dst_offset = -r.clock(24);
    if (r.done()) {
        // No rule: POSIX leaves it to the implementation; the US rule is the common default.
        tz.start = {date::form::month_week_day, 0, 3, 2, 2 * 3600};
        tz.end = {date::form::month_week_day, 0, 11, 1, 2 * 3600};
        return tz;
    }
    if (!r.take(',')) r.bad("expected ',' before the start rule");
    tz.start = r.rule_date();
    if (!r.take(',')) r.bad("expected ',' before the end rule");
    tz.end = r.rule_date();
    if (!r.done()) r.bad("unexpected text after the end rule");
    return tz;
}

std::int32_t posix_tz::offset_at(std::int64_t t) const {
    if (!dst_offset) return std_offset;
    const auto local = t + std_offset;
    const auto y =
        static_cast<int>(year_month_day{floor<days>(sys_seconds{seconds(local)})}.year());
    // Into daylight time at the start time in standard time; out of it at the end time in
    // daylight time.
    const auto into = local_day(start, y) + start.time - std_offset;
    const auto out = local_day(end, y) + end.time - *dst_offset;
    const bool dst = into < out ? (t >= into && t < out) : !(t >= out && t < into);
    return dst ? *dst_offset : std_offset;
}

}  // namespace redcoord::detail
