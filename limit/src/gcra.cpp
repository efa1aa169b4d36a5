#include "gcra.hpp"

#include <algorithm>
#include <cmath>

namespace redcoord::detail {

namespace {
std::uint64_t units_left(double capacity, double lead, double interval) {
    return static_cast<std::uint64_t>(std::max(0.0, std::floor((capacity - lead) / interval)));
}
std::chrono::microseconds ceil_us(double us) {
    return std::chrono::microseconds(static_cast<std::int64_t>(std::ceil(us)));
}
}  // namespace

gcra_step gcra_decide(const gcra_params& p, const std::optional<gcra_tat>& tat, std::int64_t now_us,
                      std::uint64_t cost) {
    const double capacity = p.burst * p.interval_us;
    double lead = tat ? static_cast<double>(tat->whole_us - now_us) + tat->fraction : 0;
    if (lead < 0) lead = 0;
    const double new_lead = lead + static_cast<double>(cost) * p.interval_us;
    gcra_step s;
    if (new_lead > capacity) {
        s.tat = tat;
        s.result.remaining = units_left(capacity, lead, p.interval_us);
        s.result.retry_after = ceil_us(new_lead - capacity);
        s.result.reset_after = ceil_us(lead);
        return s;
    }
    const double whole = std::floor(new_lead);
    s.tat = gcra_tat{now_us + static_cast<std::int64_t>(whole), new_lead - whole};
    s.ttl_ms = std::max<std::int64_t>(1, static_cast<std::int64_t>(std::ceil(new_lead / 1000)));
    s.result.allowed = true;
    s.result.remaining = units_left(capacity, new_lead, p.interval_us);
    s.result.reset_after = ceil_us(new_lead);
    return s;
}

}  // namespace redcoord::detail
