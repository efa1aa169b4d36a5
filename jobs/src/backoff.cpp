#include <redcoord/core/errors.hpp>
#include <redcoord/jobs/backoff.hpp>

#include <algorithm>
#include <cmath>

namespace redcoord {

void backoff_policy::validate() const {
    if (base.count() < 0) throw invalid_argument("backoff_policy::base must be >= 0");
    if (shape == kind::exponential && max < base)
        throw invalid_argument("backoff_policy::max must be >= base");
    if (!(jitter >= 0.0 && jitter <= 1.0))  // also false for NaN
        throw invalid_argument("backoff_policy::jitter must be in [0, 1]");
}

std::chrono::milliseconds backoff_policy::delay(unsigned failures, double unit_random) const {
    using ms = std::chrono::milliseconds;
    ms d = base;
    if (shape == kind::exponential) {
        // Doubling until the cap, in steps, so no shift or product can overflow.
        const unsigned doublings = failures > 0 ? failures - 1 : 0;
        for (unsigned i = 0; i < doublings && d < max; ++i)
            d = d.count() > max.count() / 2 ? max : d * 2;
        d = std::min(d, max);
    }
    if (jitter <= 0.0 || d.count() == 0) return d;
    const double u = std::clamp(unit_random, 0.0, 1.0);
    const auto span = static_cast<double>(d.count()) * jitter;
    return ms(d.count() - static_cast<ms::rep>(std::floor(span * u)));
}

}  // namespace redcoord
