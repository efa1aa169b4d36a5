// scripts/core-layers: core's include order (docs/architecture.md, "Core layers"). The tree
// passes; a copy of core with one include upwards, or with a file of no layer, fails and names
// the file.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace core_layers_test {

namespace fs = std::filesystem;

struct outcome {
    int status = -1;
    std::string output;
};

outcome run_checker(const fs::path& root, const fs::path& scratch) {
    const auto out = scratch / "output.txt";
    const std::string cmd = std::string("python3 '") + REDCOORD_SOURCE_DIR +
                            "/scripts/core-layers' --root '" + root.string() + "' > '" +
                            out.string() + "' 2>&1";
    outcome o;
    const int rc = std::system(cmd.c_str());  // NOLINT(cert-env33-c): a fixed command line
    o.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
    std::ifstream in(out);
    std::stringstream ss;
    ss << in.rdbuf();
    o.output = ss.str();
    return o;
}

class CoreLayers : public ::testing::Test {
protected:
    void SetUp() override {
        scratch_ = fs::temp_directory_path() /
                   ("redcoord-layers-" +
                    std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "-" +
                    ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(scratch_);
        fs::create_directories(scratch_ / "copy");
        fs::copy(fs::path(REDCOORD_SOURCE_DIR) / "core", scratch_ / "copy" / "core",
                 fs::copy_options::recursive);
    }
    void TearDown() override { fs::remove_all(scratch_); }

    static void append(const fs::path& file, const std::string& text) {
        std::ofstream out(file, std::ios::app);
        out << text;
    }

    fs::path scratch_;
};

TEST_F(CoreLayers, TheTreeIncludesNothingUpwards) {
    const auto o = run_checker(REDCOORD_SOURCE_DIR, scratch_);
    EXPECT_EQ(o.status, 0) << o.output;
    EXPECT_NE(o.output.find("no include upwards"), std::string::npos) << o.output;
}

TEST_F(CoreLayers, APoolIncludingTheRuntimeFails) {
    append(scratch_ / "copy/core/src/pool.cpp", "#include <redcoord/core/runtime.hpp>\n");
    const auto o = run_checker(scratch_ / "copy", scratch_);
    EXPECT_EQ(o.status, 1) << o.output;
    EXPECT_NE(o.output.find("core/src/pool.cpp:"), std::string::npos) << o.output;
    EXPECT_NE(o.output.find("pool unit 'pool' includes runtime unit 'runtime'"), std::string::npos)
        << o.output;
}

TEST_F(CoreLayers, APubSubLinkIncludingTheResolverFails) {
    append(scratch_ / "copy/core/src/subscriber_link.hpp",
           "#include <redcoord/core/sentinel.hpp>\n");
    const auto o = run_checker(scratch_ / "copy", scratch_);
    EXPECT_EQ(o.status, 1) << o.output;
    EXPECT_NE(o.output.find("pubsub unit 'subscriber_link' includes topology unit 'sentinel'"),
              std::string::npos)
        << o.output;
}

TEST_F(CoreLayers, AFileWithoutALayerFails) {
    append(scratch_ / "copy/core/src/new_helper.cpp", "#include <redcoord/core/errors.hpp>\n");
    const auto o = run_checker(scratch_ / "copy", scratch_);
    EXPECT_EQ(o.status, 1) << o.output;
    EXPECT_NE(o.output.find("unit 'new_helper' has no layer"), std::string::npos) << o.output;
}

TEST_F(CoreLayers, AnIncludeDownwardsPasses) {
    append(scratch_ / "copy/core/src/runtime.cpp", "#include <redcoord/core/errors.hpp>\n");
    const auto o = run_checker(scratch_ / "copy", scratch_);
    EXPECT_EQ(o.status, 0) << o.output;
}

}  // namespace core_layers_test
