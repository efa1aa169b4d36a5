#include <redcoord/core/errors.hpp>
#include <redcoord/jobs/cron.hpp>

#include <array>
#include <cctype>
#include <charconv>
#include <vector>

namespace redcoord {

namespace {

using namespace std::chrono;

struct field_spec {
    const char* name;
    int low;
    int high;
    const std::array<const char*, 12>* names;  // names[i] is the value low + i; may be null
};

constexpr std::array<const char*, 12> month_names{"jan", "feb", "mar", "apr", "may", "jun",
                                                  "jul", "aug", "sep", "oct", "nov", "dec"};
constexpr std::array<const char*, 12> weekday_names{
    "sun", "mon", "tue", "wed", "thu", "fri", "sat", nullptr, nullptr, nullptr, nullptr, nullptr};

// Weekday 7 is Sunday too: parsed in 0..7, folded to 0 afterwards.
constexpr std::array<field_spec, 5> fields{{{"minute", 0, 59, nullptr},
                                            {"hour", 0, 23, nullptr},
                                            {"day-of-month", 1, 31, nullptr},
                                            {"month", 1, 12, &month_names},
                                            {"day-of-week", 0, 7, &weekday_names}}};

[[noreturn]] void bad(const field_spec& f, std::string_view text, const std::string& why) {
    throw invalid_argument("cron: " + std::string(f.name) + " field '" + std::string(text) +
                           "': " + why);
}

int value_of(const field_spec& f, std::string_view whole, std::string_view v) {
    if (v.empty()) bad(f, whole, "a value is missing");
    if (f.names && std::isalpha(static_cast<unsigned char>(v.front()))) {
        std::string lower;
        for (char c : v)
            lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
        for (std::size_t i = 0; i < f.names->size(); ++i)
            if ((*f.names)[i] && lower == (*f.names)[i]) return f.low + static_cast<int>(i);
        bad(f, whole, "unknown name '" + std::string(v) + "'");
    }
    int n = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec != std::errc() || end != v.data() + v.size())
        bad(f, whole, "'" + std::string(v) + "' is not a number");
    if (n < f.low || n > f.high)
        bad(f, whole,
            std::to_string(n) + " is outside " + std::to_string(f.low) + "-" +
                std::to_string(f.high));
    return n;
}

// Sets the bits of one field (values low..high) in `bits`; returns whether it starts with `*`.
template <std::size_t N>
bool parse_field(const field_spec& f, std::string_view text, std::bitset<N>& bits) {
    if (text.empty()) bad(f, text, "empty");
    std::size_t start = 0;
    while (start <= text.size()) {
        const auto comma = text.find(',', start);
        const auto item = text.substr(
            start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
        if (item.empty()) bad(f, text, "an empty list item");
        auto range = item;
        int step = 1;
        if (const auto slash = item.find('/'); slash != std::string_view::npos) {
            range = item.substr(0, slash);
            const auto s = item.substr(slash + 1);
            const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), step);
            if (s.empty() || ec != std::errc() || end != s.data() + s.size())
                bad(f, text, "the step '" + std::string(s) + "' is not a number");
            if (step <= 0) bad(f, text, "the step must be at least 1");
        }
        int first = f.low;
        int last = f.high;
        if (range != "*") {
            const auto dash = range.find('-');
            if (dash == std::string_view::npos) {
                first = value_of(f, text, range);
                // `a/n` runs to the field's end; a bare value is that value alone.
                last = item.find('/') == std::string_view::npos ? first : f.high;
            } else {
                first = value_of(f, text, range.substr(0, dash));
                last = value_of(f, text, range.substr(dash + 1));
                if (last < first)
                    bad(f, text, "the range " + std::string(range) + " runs backwards");
            }
        }
        for (int v = first; v <= last; v += step) bits.set(static_cast<std::size_t>(v));
        if (comma == std::string_view::npos) break;
        start = comma + 1;
    }
    return text.front() == '*';
}

std::string_view expand_shorthand(std::string_view e) {
    if (e == "@yearly" || e == "@annually") return "0 0 1 1 *";
    if (e == "@monthly") return "0 0 1 * *";
    if (e == "@weekly") return "0 0 * * 0";
    if (e == "@daily" || e == "@midnight") return "0 0 * * *";
    if (e == "@hourly") return "0 * * * *";
    return e;
}

}  // namespace

cron_schedule::cron_schedule(std::string_view expression) : expression_(expression) {
    std::string_view e = expression;
    while (!e.empty() && (e.front() == ' ' || e.front() == '\t')) e.remove_prefix(1);
    while (!e.empty() && (e.back() == ' ' || e.back() == '\t')) e.remove_suffix(1);
    if (!e.empty() && e.front() == '@') {
        const auto full = expand_shorthand(e);
        if (full == e) throw invalid_argument("cron: unknown shorthand '" + std::string(e) + "'");
        e = full;
    }
    std::vector<std::string_view> parts;
    std::size_t i = 0;
    while (i < e.size()) {
        while (i < e.size() && (e[i] == ' ' || e[i] == '\t')) ++i;
        const auto begin = i;
        while (i < e.size() && e[i] != ' ' && e[i] != '\t') ++i;
        if (i > begin) parts.push_back(e.substr(begin, i - begin));
    }
    if (parts.size() != fields.size())
        throw invalid_argument("cron: '" + std::string(expression) + "' has " +
                               std::to_string(parts.size()) +
                               " fields; expected 5 (minute hour day-of-month month day-of-week)");
    (void)parse_field(fields[0], parts[0], minutes_);
    (void)parse_field(fields[1], parts[1], hours_);
    days_any_ = parse_field(fields[2], parts[2], days_);
    (void)parse_field(fields[3], parts[3], months_);
    std::bitset<8> week;
    weekdays_any_ = parse_field(fields[4], parts[4], week);
    for (std::size_t d = 0; d < 7; ++d) weekdays_[d] = week[d];
    if (week[7]) weekdays_.set(0);
}

bool cron_schedule::day_matches(sys_days d) const {
    const year_month_day ymd{d};
    const bool dom = days_[static_cast<unsigned>(ymd.day())];
    const bool dow = weekdays_[weekday{d}.c_encoding()];
    if (days_any_ || weekdays_any_) return dom && dow;
    return dom || dow;
}

bool cron_schedule::matches(sys_seconds t) const {
    const auto day = floor<days>(t);
    const year_month_day ymd{day};
    const hh_mm_ss<seconds> tod{t - day};
    return months_[static_cast<unsigned>(ymd.month())] && day_matches(day) &&
           hours_[static_cast<std::size_t>(tod.hours().count())] &&
           minutes_[static_cast<std::size_t>(tod.minutes().count())];
}

std::optional<sys_seconds> cron_schedule::next_after(sys_seconds after) const {
    auto t = floor<minutes>(after) + minutes(1);
    const auto limit = t + days(366 * 8 + 2);
    while (t < limit) {
        const auto day = floor<days>(t);
        const year_month_day ymd{day};
        if (!months_[static_cast<unsigned>(ymd.month())]) {
            // To the first day of the next month.
            const auto next = ymd.year() / ymd.month() / 1 + months(1);
            t = sys_days{next};
            continue;
        }
        if (!day_matches(day)) {
            t = day + days(1);
            continue;
        }
        const hh_mm_ss<minutes> tod{t - day};
        if (!hours_[static_cast<std::size_t>(tod.hours().count())]) {
            t = day + tod.hours() + hours(1);
            continue;
        }
        if (!minutes_[static_cast<std::size_t>(tod.minutes().count())]) {
            t += minutes(1);
            continue;
        }
        return sys_seconds{t};
    }
    return std::nullopt;
}

std::optional<sys_seconds> cron_schedule::next_after(sys_seconds after,
                                                     const time_zone& zone) const {
    const auto local_of = [&](sys_seconds u) { return u + zone.offset_at(u); };
    auto local_after = local_of(after);
    // Each step moves local_after forward; the bound is the UTC search's own horizon.
    for (int step = 0; step < 100000; ++step) {
        const auto l = next_after(local_after);
        if (!l) return std::nullopt;
        // The offsets on either side of any change near `l` (zones change at most once a day).
        const auto before = zone.offset_at(*l - days(1));
        const auto later = zone.offset_at(*l + days(1));
        std::optional<sys_seconds> first;
        for (const auto off : {before, later}) {
            const auto u = *l - off;
            if (local_of(u) == *l && (!first || u < *first)) first = u;
        }
        if (!first) {
            // In a gap (clocks moved forward): the first instant whose local time passed `l`.
            auto lo = *l - std::max(before, later);
            auto hi = *l - std::min(before, later);
            while (lo < hi) {
                const auto mid = lo + (hi - lo) / 2;
                if (local_of(mid) >= *l)
                    hi = mid;
                else
                    lo = mid + seconds(1);
            }
            first = lo;
        }
        // A repeated local time counts at its first occurrence only.
        if (*first > after) return first;
        local_after = *l;
    }
    return std::nullopt;
}

}  // namespace redcoord
