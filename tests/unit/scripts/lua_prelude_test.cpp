// detail::with_needed_helpers(): a prelude cut down to the helpers a script body reaches.

#include "lua_files.hpp"

#include <redcoord/core/detail/lua_prelude.hpp>

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

using redcoord::detail::with_needed_helpers;

namespace lua_prelude_test {

bool has(const std::string& text, const std::string& piece) {
    return text.find(piece) != std::string::npos;
}

const char* const prelude =
    "-- The file's header.\n"
    "local base = KEYS[1]\n"
    "local function jk(id) return base .. ':job:' .. id end\n"
    "-- Ranks a job; says nothing of unused_helper.\n"
    "local function rank(id)\n"
    "  return 'unused_helper' .. jk(id)\n"
    "end\n"
    "local function unused_helper()\n"
    "  return {\n"
    "    a = 1,\n"
    "}\n"
    "end\n"
    "local finish\n"
    "local function release(id)\n"
    "  finish(id)\n"
    "end\n"
    "finish = function(id)\n"
    "  redis.call('DEL', jk(id))\n"
    "end\n"
    "local counter, last = 0, 0\n";

}  // namespace lua_prelude_test

using lua_prelude_test::has;
using lua_prelude_test::prelude;

TEST(LuaPrelude, KeepsWhatTheBodyReachesInOrderAndDropsTheRest) {
    const auto s = with_needed_helpers(prelude, "return rank(ARGV[1])\n");
    EXPECT_TRUE(has(s, "local base = KEYS[1]\n"));
    EXPECT_TRUE(has(s, "local function jk(id)"));
    EXPECT_TRUE(has(s,
                    "-- Ranks a job; says nothing of unused_helper.\nlocal function rank(id)\n"
                    "  return 'unused_helper' .. jk(id)\nend\n"));
    // Named only in a comment and a string: not reached.
    EXPECT_FALSE(has(s, "local function unused_helper"));
    EXPECT_FALSE(has(s, "a = 1"));
    EXPECT_FALSE(has(s, "release"));
    EXPECT_FALSE(has(s, "counter"));
    EXPECT_LT(s.find("local base"), s.find("local function jk"));
    EXPECT_LT(s.find("local function jk"), s.find("local function rank"));
    EXPECT_TRUE(s.size() >= 21 && s.substr(s.size() - 21) == "return rank(ARGV[1])\n");
}

TEST(LuaPrelude, AForwardDeclaredFunctionKeepsItsDeclarationAndItsAssignment) {
    const auto s = with_needed_helpers(prelude, "release(ARGV[1])\n");
    EXPECT_TRUE(has(s, "local finish\n"));
    EXPECT_TRUE(has(s, "local function release(id)"));
    EXPECT_TRUE(has(s, "finish = function(id)\n  redis.call('DEL', jk(id))\nend\n"));
    EXPECT_TRUE(has(s, "local function jk(id)"));
    EXPECT_LT(s.find("local finish\n"), s.find("local function release"));
    EXPECT_LT(s.find("local function release"), s.find("finish = function"));
}

TEST(LuaPrelude, ATableClosedInColumnZeroStaysWithItsDefinition) {
    const auto s = with_needed_helpers(prelude, "return unused_helper()\n");
    EXPECT_TRUE(has(s, "local function unused_helper()\n  return {\n    a = 1,\n}\nend\n"));
}

TEST(LuaPrelude, MultipleNamesAndTopLevelCode) {
    const auto two = with_needed_helpers(prelude, "last = 1\n");
    EXPECT_TRUE(has(two, "local counter, last = 0, 0\n"));
    // Top-level code that defines nothing is always kept, with what it names.
    const auto code =
        with_needed_helpers(std::string(prelude) + "redis.call('SET', jk('x'), 1)\n", "return 1\n");
    EXPECT_TRUE(has(code, "redis.call('SET', jk('x'), 1)\n"));
    EXPECT_TRUE(has(code, "local function jk(id)"));
}

TEST(LuaPrelude, ALongBracketKeepsTheWholePrelude) {
    const std::string p = std::string(prelude) + "local text = [[rank]]\n";
    EXPECT_EQ(with_needed_helpers(p, "return 1\n"), p + "return 1\n");
}

// The jobs part's prelude: a read-only script keeps a few lines, the worker's settlement
// keeps the claim and drops the add side.
TEST(LuaPrelude, TheJobsScriptsKeepWhatTheyUse) {
    std::string pre, get, settle;
    for (const auto& f : redcoord::testing::read_lua_files(REDCOORD_SOURCE_DIR)) {
        if (f.part != "jobs") continue;
        std::ifstream in(std::string(REDCOORD_SOURCE_DIR) + "/jobs/src/lua/" + f.name + ".lua");
        std::stringstream text;
        text << in.rdbuf();
        if (f.name == "jobs_prelude") pre = text.str();
        if (f.name == "jobs_get") get = text.str();
        if (f.name == "jobs_settle") settle = text.str();
    }
    ASSERT_FALSE(pre.empty());
    const auto g = with_needed_helpers(pre, get);
    EXPECT_TRUE(has(g, "local base = KEYS[1]"));
    EXPECT_TRUE(has(g, "local function jk("));
    EXPECT_FALSE(has(g, "local function claim_next("));
    EXPECT_LT(g.size(), pre.size() / 10 + get.size());
    const auto s = with_needed_helpers(pre, settle);
    for (const char* kept : {"local function claim_next(", "local function housekeep(",
                             "local function release_dependents(", "finish = function(",
                             "local function settle_failure(", "local function claim_rotation("})
        EXPECT_TRUE(has(s, kept)) << kept;
    for (const char* dropped :
         {"local function add_jobs(", "local function create_flow(", "local function debounce("})
        EXPECT_FALSE(has(s, dropped)) << dropped;
}
