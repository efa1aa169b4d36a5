#include "posix_tz.hpp"

#include <redcoord/core/errors.hpp>
#include <redcoord/jobs/time_zone.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <optional>
#include <vector>

namespace redcoord {

struct time_zone::data {
    std::string name;
    std::vector<std::int64_t> at;   // transition instants, seconds since the epoch, ascending
    std::vector<std::int32_t> off;  // the offset from each transition on
    std::int32_t before_first = 0;  // time type 0 (RFC 8536, 3.2)
    std::optional<detail::posix_tz> rule;  // after the last transition (the footer)
};

namespace {

class bytes {
public:
    bytes(std::string_view name, std::string_view s) : name_(name), s_(s) {}
    [[noreturn]] void bad(const char* why) const {
        throw invalid_argument("time zone '" + std::string(name_) + "': not a valid TZif file (" +
                               why + ")");
    }
    std::string_view take(std::size_t n) {
        if (s_.size() - i_ < n) bad("truncated");
        const auto out = s_.substr(i_, n);
        i_ += n;
        return out;
    }
    std::int64_t be(std::size_t n) {
        const auto b = take(n);
        std::uint64_t v = 0;
        for (char c : b) v = (v << 8) | static_cast<unsigned char>(c);
        if (n < 8 && (v >> (n * 8 - 1)) & 1) v |= ~std::uint64_t{0} << (n * 8);  // sign-extend
        return static_cast<std::int64_t>(v);
    }
    std::string_view rest() const { return s_.substr(i_); }

private:
    std::string_view name_;
    std::string_view s_;
    std::size_t i_ = 0;
};

struct header {
    char version = 0;
    std::int64_t isutcnt = 0, isstdcnt = 0, leapcnt = 0, timecnt = 0, typecnt = 0, charcnt = 0;
};

header read_header(bytes& b) {
    if (b.take(4) != "TZif") b.bad("no TZif magic");
    header h;
    h.version = b.take(1)[0];
    (void)b.take(15);
    for (auto* f : {&h.isutcnt, &h.isstdcnt, &h.leapcnt, &h.timecnt, &h.typecnt, &h.charcnt}) {
        *f = b.be(4);
        if (*f < 0 || *f > (1 << 20)) b.bad("a count out of range");
    }
    if (h.typecnt == 0) b.bad("no local time types");
    return h;
}

// One data block; `wide` for the 64-bit block of version 2 and later.
void read_block(bytes& b, const header& h, bool wide, time_zone::data& d) {
    const std::size_t tsize = wide ? 8 : 4;
    std::vector<std::int64_t> times(static_cast<std::size_t>(h.timecnt));
    for (auto& t : times) t = b.be(tsize);
    std::vector<std::size_t> idx(static_cast<std::size_t>(h.timecnt));
    for (auto& i : idx) i = static_cast<unsigned char>(b.take(1)[0]);
    std::vector<std::int32_t> offsets(static_cast<std::size_t>(h.typecnt));
    for (auto& o : offsets) {
        o = static_cast<std::int32_t>(b.be(4));
        (void)b.take(2);  // isdst, desigidx
    }
    (void)b.take(static_cast<std::size_t>(h.charcnt));
    (void)b.take(static_cast<std::size_t>(h.leapcnt) * (tsize + 4));
    (void)b.take(static_cast<std::size_t>(h.isstdcnt + h.isutcnt));
    d.at.clear();
    d.off.clear();
    for (std::size_t i = 0; i < times.size(); ++i) {
        if (idx[i] >= offsets.size()) b.bad("a transition names no time type");
        if (i > 0 && times[i] <= times[i - 1]) b.bad("transitions out of order");
        d.at.push_back(times[i]);
        d.off.push_back(offsets[idx[i]]);
    }
    d.before_first = offsets[0];
}

bool safe_name(std::string_view n) {
    if (n.empty() || n.front() == '/' || n.find("..") != std::string_view::npos) return false;
    return std::all_of(n.begin(), n.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '/' || c == '_' || c == '-' ||
               c == '+';
    });
}

}  // namespace

time_zone time_zone::utc() {
    auto d = std::make_shared<data>();
    d->name = "UTC";
    return time_zone(std::move(d));
}

time_zone time_zone::parse(std::string_view name, std::string_view tzif) {
    auto d = std::make_shared<data>();
    d->name = std::string(name);
    bytes b(name, tzif);
    const auto h1 = read_header(b);
    read_block(b, h1, false, *d);
    if (h1.version >= '2') {
        const auto h2 = read_header(b);
        read_block(b, h2, true, *d);
        auto footer = b.rest();
        if (footer.size() < 2 || footer.front() != '\n') b.bad("no footer");
        footer.remove_prefix(1);
        const auto end = footer.find('\n');
        if (end == std::string_view::npos) b.bad("an unterminated footer");
        if (end > 0) d->rule = detail::posix_tz::parse(footer.substr(0, end));
    }
    return time_zone(std::move(d));
}

time_zone time_zone::load(std::string_view name, std::string dir) {
    if (name == "UTC" || name == "Etc/UTC") {
        auto d = std::make_shared<data>();
        d->name = std::string(name);
        return time_zone(std::move(d));
    }
    if (!safe_name(name))
        throw invalid_argument("time zone name '" + std::string(name) +
                               "' is not an IANA zone name (like Europe/Berlin)");
    if (dir.empty()) {
        const char* env = std::getenv("TZDIR");  // NOLINT(concurrency-mt-unsafe): read only
        dir = env && *env ? env : "/usr/share/zoneinfo";
    }
    const std::string path = dir + "/" + std::string(name);
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw invalid_argument("time zone '" + std::string(name) + "': no zone file " + path +
                               " (is the tzdata package installed?)");
    const std::string content((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
    return parse(name, content);
}

std::chrono::seconds time_zone::offset_at(std::chrono::sys_seconds t) const {
    const auto s = t.time_since_epoch().count();
    const auto& d = *d_;
    if (d.at.empty() || s < d.at.front()) {
        if (d.at.empty() && d.rule) return std::chrono::seconds(d.rule->offset_at(s));
        return std::chrono::seconds(d.before_first);
    }
    if (s >= d.at.back() && d.rule) return std::chrono::seconds(d.rule->offset_at(s));
    const auto it = std::upper_bound(d.at.begin(), d.at.end(), s);
    return std::chrono::seconds(d.off[static_cast<std::size_t>(it - d.at.begin()) - 1]);
}

const std::string& time_zone::name() const noexcept { return d_->name; }

}  // namespace redcoord
