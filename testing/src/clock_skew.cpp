#include <redcoord/core/errors.hpp>
#include <redcoord/testing/clock_skew.hpp>

#include <unistd.h>

#include <array>
#include <sstream>

namespace redcoord::testing {

namespace {
// Where Debian puts a shared library: the multiarch directory of the build's architecture,
// then the plain ones.
std::string find_library(const std::string& relative, const char* package) {
    static constexpr std::array<const char*, 4> dirs{"/usr/lib/x86_64-linux-gnu/",
                                                     "/usr/lib/aarch64-linux-gnu/", "/usr/lib/",
                                                     "/usr/local/lib/"};
    for (const char* d : dirs) {
        std::string p = std::string(d) + relative;
        if (::access(p.c_str(), R_OK) == 0) return p;
    }
    throw error(relative + " not found: install " + package + " (./scripts/bootstrap)");
}
}  // namespace

std::vector<std::string> clock_rate_launcher(double rate) {
    if (!(rate > 0)) throw invalid_argument("clock_rate_launcher: the rate must be > 0");
    const std::string tcmalloc = find_library("libtcmalloc_minimal.so.4", "libtcmalloc-minimal4");
    const std::string faketime = find_library("faketime/libfaketime.so.1", "libfaketime");
    std::ostringstream r;
    r.precision(6);
    r << rate;
    return {"env", "LD_PRELOAD=" + tcmalloc + ":" + faketime, "FAKETIME=+0 x" + r.str()};
}

}  // namespace redcoord::testing
