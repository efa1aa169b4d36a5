#pragma once
// Reads an election_child's log (see election_child.cpp) for the fault tests.

#include <chrono>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace election_test {

struct log_line {
    char kind = 0;            // 'E', 'R', 'W'
    std::uint64_t epoch = 0;  // E, W
    std::string reason;       // R
    std::chrono::steady_clock::time_point at;
};

inline std::vector<log_line> read_log(const std::string& path) {
    std::vector<log_line> out;
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream ls(line);
        log_line l;
        std::string kind;
        long long ns = 0;
        ls >> kind;
        if (kind == "E" || kind == "W")
            ls >> l.epoch >> ns;
        else if (kind == "R")
            ls >> l.reason >> ns;
        else
            continue;
        if (!ls) continue;  // a partly written last line
        l.kind = kind[0];
        l.at = std::chrono::steady_clock::time_point(std::chrono::nanoseconds(ns));
        out.push_back(l);
    }
    return out;
}

inline std::size_t count(const std::vector<log_line>& v, char kind) {
    std::size_t n = 0;
    for (auto& l : v) n += l.kind == kind;
    return n;
}

}  // namespace election_test
