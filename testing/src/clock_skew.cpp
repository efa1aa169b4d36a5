#include <redcoord/core/errors.hpp>
#include <redcoord/testing/clock_skew.hpp>

#include <unistd.h>

#include <array>
#include <cstdlib>
#include <fstream>
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

std::vector<std::string> wall_clock_jump_launcher(const std::filesystem::path& offset_file) {
    const std::string faketime = find_library("faketime/libfaketimeMT.so.1", "libfaketime");
    if (!std::filesystem::exists(offset_file))
        write_clock_offset(offset_file, std::chrono::seconds(0));
    std::vector<std::string> argv{"env", "LD_PRELOAD=" + faketime,
                                  "FAKETIME_TIMESTAMP_FILE=" + offset_file.string(),
                                  "FAKETIME_NO_CACHE=1", "DONT_FAKE_MONOTONIC=1"};
#if defined(__SANITIZE_ADDRESS__)
    // The launched client is built with ASan too, whose runtime refuses to start unless it
    // comes first among the loaded libraries; the preloaded libfaketime comes before it. The
    // order does not matter for what ASan checks here (libfaketime allocates nothing of ours),
    // so the check is turned off for this child only, keeping the caller's other options.
    const char* inherited = std::getenv("ASAN_OPTIONS");
    argv.push_back("ASAN_OPTIONS=" + std::string(inherited ? inherited : "") +
                   (inherited && *inherited ? ":" : "") + "verify_asan_link_order=0");
#endif
    return argv;
}

void write_clock_offset(const std::filesystem::path& offset_file, std::chrono::seconds offset) {
    // libfaketime reads "+N"/"-N" as an offset of N seconds from the real clock.
    const auto n = offset.count();
    const std::filesystem::path next = offset_file.string() + ".next";
    {
        std::ofstream f(next, std::ios::trunc);
        f << (n < 0 ? "-" : "+") << (n < 0 ? -n : n) << "\n";
        if (!f) throw error("cannot write " + next.string());
    }
    std::error_code ec;
    std::filesystem::rename(next, offset_file, ec);
    if (ec) throw error("cannot replace " + offset_file.string() + ": " + ec.message());
}

}  // namespace redcoord::testing
