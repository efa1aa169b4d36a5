// The README's least-privilege ACL table must name every command, key pattern and channel
// pattern each part's acl_needs() holds (issue 18), so the table cannot fall behind a script.
#include <redcoord/election/acl.hpp>
#include <redcoord/jobs/acl.hpp>
#include <redcoord/limit/acl.hpp>
#include <redcoord/lock/acl.hpp>
#include <redcoord/queue/acl.hpp>
#include <redcoord/signaling/acl.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <string>

namespace {

// The table row whose first cell starts with `part`.
std::string row_of(const std::string& part) {
    std::ifstream in(REDCOORD_SOURCE_DIR "/README.md");
    for (std::string l; std::getline(in, l);)
        if (l.rfind("| " + part + " (", 0) == 0) return l;
    return {};
}

// `w` as a whole word of the row: between spaces or backticks.
bool has_word(const std::string& row, const std::string& w) {
    for (auto at = row.find(w); at != std::string::npos; at = row.find(w, at + 1)) {
        const bool starts = at > 0 && (row[at - 1] == ' ' || row[at - 1] == '`');
        const auto end = at + w.size();
        const bool ends = end < row.size() && (row[end] == ' ' || row[end] == '`');
        if (starts && ends) return true;
    }
    return false;
}

std::string upper(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::toupper(c); });
    return s;
}

void expect_row_covers(const std::string& part, const redcoord::acl_needs& n) {
    const auto row = row_of(part);
    ASSERT_FALSE(row.empty()) << "no README row for " << part;
    for (auto c : n.commands) {
        if (c == "ping" || c == "role" || c == "select") continue;  // named once above the table
        c = upper(c);
        if (auto bar = c.find('|'); bar != std::string::npos)
            c.replace(bar, 1, "\\|");  // Markdown cell
        EXPECT_TRUE(has_word(row, c)) << part << ": " << c;
    }
    // `P ` stands for the prefix in the table.
    auto in_table = [](std::string pattern) {
        return "`P " + pattern.substr(std::string("redcoord:").size()) + "`";
    };
    for (const auto& k : n.key_patterns)
        EXPECT_NE(row.find(in_table(k)), std::string::npos) << part << ": " << k;
    for (const auto& ch : n.channel_patterns)
        EXPECT_NE(row.find(in_table(ch)), std::string::npos) << part << ": " << ch;
}

}  // namespace

TEST(ReadmeAcl, TableNamesEveryNeedOfEveryPart) {
    expect_row_covers("lock", redcoord::lock_acl_needs());
    expect_row_covers("election", redcoord::election_acl_needs());
    expect_row_covers("signaling", redcoord::signaling_acl_needs());
    expect_row_covers("queue", redcoord::queue_acl_needs());
    expect_row_covers("jobs", redcoord::jobs_acl_needs());
    expect_row_covers("limit", redcoord::limit_acl_needs());
}
