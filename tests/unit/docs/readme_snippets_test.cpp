// Every ```cpp block in README.md that follows a `<!-- snippet: path -->` line must appear,
// line for line and contiguously (indentation aside), in that file.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

std::vector<std::string> read_lines(const std::string& path) {
    std::ifstream in(path);
    std::vector<std::string> lines;
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    return lines;
}

std::string trim(const std::string& s) {
    auto b = s.find_first_not_of(" \t");
    if (b == std::string::npos) return {};
    auto e = s.find_last_not_of(" \t");
    return s.substr(b, e - b + 1);
}

bool contains_block(const std::vector<std::string>& file, const std::vector<std::string>& block) {
    if (block.empty()) return false;
    for (std::size_t i = 0; i + block.size() <= file.size(); ++i) {
        std::size_t k = 0;
        while (k < block.size() && trim(file[i + k]) == trim(block[k])) ++k;
        if (k == block.size()) return true;
    }
    return false;
}

struct snippet {
    std::string source;
    std::size_t line;
    std::vector<std::string> body;
};

std::vector<snippet> snippets(const std::vector<std::string>& readme) {
    std::vector<snippet> out;
    const std::string marker = "<!-- snippet: ";
    for (std::size_t i = 0; i < readme.size(); ++i) {
        if (readme[i].rfind(marker, 0) != 0) continue;
        auto end = readme[i].find(" -->");
        snippet s{readme[i].substr(marker.size(), end - marker.size()), i + 1, {}};
        std::size_t j = i + 1;
        if (j < readme.size() && readme[j].rfind("```", 0) == 0) {
            for (++j; j < readme.size() && readme[j].rfind("```", 0) != 0; ++j)
                s.body.push_back(readme[j]);
        }
        out.push_back(std::move(s));
    }
    return out;
}

}  // namespace

TEST(Readme, SnippetsAreCutFromTheExamples) {
    const std::string root = REDCOORD_SOURCE_DIR;
    auto readme = read_lines(root + "/README.md");
    ASSERT_FALSE(readme.empty());
    auto all = snippets(readme);
    ASSERT_GE(all.size(), 4u) << "the README tour should show the examples";
    for (auto& s : all) {
        auto file = read_lines(root + "/" + s.source);
        ASSERT_FALSE(file.empty()) << "README line " << s.line << ": no file " << s.source;
        EXPECT_TRUE(contains_block(file, s.body))
            << "README line " << s.line << ": the snippet is not a contiguous excerpt of "
            << s.source;
    }
}

TEST(Readme, ShowsTheTwoCommands) {
    std::ifstream in(std::string(REDCOORD_SOURCE_DIR) + "/README.md");
    std::stringstream ss;
    ss << in.rdbuf();
    EXPECT_NE(ss.str().find("./scripts/demo"), std::string::npos);
    EXPECT_NE(ss.str().find("./scripts/test"), std::string::npos);
}
