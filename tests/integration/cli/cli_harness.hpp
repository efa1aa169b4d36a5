#pragma once
// Runs the real `redcoord` binary as a user would, against local_server, and reads what it
// printed (stdout and stderr together, through process_options::output_file).

#include <redcoord/core/token.hpp>
#include <redcoord/testing/local_server.hpp>
#include <redcoord/testing/process.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace cli_test {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

/// A fresh directory removed at the end of the test.
class temp_dir {
public:
    temp_dir()
        : path_(fs::temp_directory_path() /
                ("redcoord-cli-" + redcoord::random_token().substr(0, 12))) {
        fs::create_directories(path_);
    }
    ~temp_dir() {
        std::error_code ec;
        fs::remove_all(path_, ec);
    }
    [[nodiscard]] std::string file(const std::string& name) const {
        return (path_ / name).string();
    }

private:
    fs::path path_;
};

inline std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

inline std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);) out.push_back(l);
    return out;
}

/// One running `redcoord` process whose output goes to a file.
class cli_process {
public:
    cli_process(std::vector<std::string> args, const std::string& output_file,
                std::vector<std::string> env = {})
        : output_(output_file), proc_(make(std::move(args), output_file, std::move(env))) {}
    [[nodiscard]] std::optional<int> wait_for(std::chrono::milliseconds t) {
        return proc_.wait_for(t);
    }
    [[nodiscard]] std::string output() const { return read_file(output_); }
    void signal(int sig) const { proc_.signal(sig); }
    void kill() { proc_.kill(); }
    [[nodiscard]] pid_t pid() const { return proc_.pid(); }
    [[nodiscard]] bool running() { return proc_.running(); }

private:
    static redcoord::testing::process make(std::vector<std::string> args, const std::string& out,
                                           std::vector<std::string> env) {
        args.insert(args.begin(), REDCOORD_CLI_PATH);
        redcoord::testing::process_options o;
        o.output_file = out;
        o.env = std::move(env);
        return redcoord::testing::process(std::move(args), o);
    }
    std::string output_;
    redcoord::testing::process proc_;
};

struct result {
    int status = -1;
    std::string output;
};

/// Runs `redcoord args...` to completion (bounded by `limit`; a hang fails the test).
inline result run(const temp_dir& dir, std::vector<std::string> args,
                  std::vector<std::string> env = {}, std::chrono::milliseconds limit = 20s) {
    static int counter = 0;
    const std::string out = dir.file("run-" + std::to_string(++counter) + ".out");
    cli_process p(std::move(args), out, std::move(env));
    const auto st = p.wait_for(limit);
    EXPECT_TRUE(st.has_value()) << "redcoord did not finish within the limit";
    if (!st) p.kill();
    return {st.value_or(-1), read_file(out)};
}

/// Polls `pred` every 20 ms until it holds or `limit` passes.
template <class Pred>
bool eventually(Pred pred, std::chrono::milliseconds limit = 10s) {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < end) {
        if (pred()) return true;
        std::this_thread::sleep_for(20ms);
    }
    return pred();
}

inline bool contains(const std::string& hay, const std::string& needle) {
    return hay.find(needle) != std::string::npos;
}

/// Exit codes documented in `redcoord --help` (tools/src/exit_codes.hpp), spelled out here so
/// a change to either shows up as a failing test.
namespace code {
inline constexpr int ok = 0, no = 1, usage = 2, connection = 120, auth = 121, server = 122,
                     timed_out = 124, lost = 125, not_found = 127;
}

}  // namespace cli_test
