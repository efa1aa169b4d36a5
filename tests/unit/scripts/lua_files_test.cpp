// Every Lua script is a file beside its part, and its header comment says what it touches:
// the keys and arguments it reads, its reply and its cost (issue 39; docs/scripts.md).
#include "lua_files.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <regex>

using redcoord::testing::indices_used;
using redcoord::testing::read_lua_files;

namespace {

const std::filesystem::path source_root = REDCOORD_SOURCE_DIR;

TEST(LuaFiles, EveryPartsScriptsAreFilesWithUniqueNames) {
    const auto files = read_lua_files(source_root);
    std::set<std::string> parts, names;
    for (const auto& f : files) {
        parts.insert(f.part);
        EXPECT_TRUE(names.insert(f.name).second) << f.name << " is in two parts";
        EXPECT_TRUE(std::regex_match(f.name, std::regex("[a-z][a-z0-9_]*"))) << f.name;
    }
    for (const char* p : {"core", "lock", "election", "signaling", "queue", "limit", "jobs"})
        EXPECT_TRUE(parts.count(p)) << "no script files in " << p << "/src/lua";
    EXPECT_GE(files.size(), 35u);
    // No script source is left in C++ (the raw-string delimiter the parts used for Lua).
    for (const auto& part : std::filesystem::directory_iterator(source_root)) {
        const auto src = part.path() / "src";
        if (!std::filesystem::is_directory(src)) continue;
        for (const auto& f : std::filesystem::recursive_directory_iterator(src)) {
            const auto ext = f.path().extension();
            if (ext != ".cpp" && ext != ".hpp") continue;
            std::ifstream in(f.path());
            const std::string text((std::istreambuf_iterator<char>(in)), {});
            EXPECT_EQ(text.find("R\"lua("), std::string::npos) << f.path() << " holds Lua";
        }
    }
}

TEST(LuaFiles, EveryHeaderDeclaresTheKeysAndArgumentsTheScriptUses) {
    for (const auto& f : read_lua_files(source_root)) {
        SCOPED_TRACE(f.part + "/src/lua/" + f.name + ".lua");
        ASSERT_FALSE(f.header.empty()) << "no header comment";
        EXPECT_NE(f.header.find("-- Cost"), std::string::npos) << "no Cost line";
        if (!f.fragment) EXPECT_NE(f.header.find("-- Reply"), std::string::npos) << "no Reply line";
        const auto declared_keys = indices_used(f.header, "KEYS");
        for (int k : indices_used(f.body, "KEYS"))
            EXPECT_TRUE(declared_keys.count(k)) << "KEYS[" << k << "] is used but not declared";
        const auto declared_args = indices_used(f.header, "ARGV");
        for (int a : indices_used(f.body, "ARGV"))
            EXPECT_TRUE(declared_args.count(a)) << "ARGV[" << a << "] is used but not declared";
    }
}

// The checker itself: a body that reads an undeclared key or argument is caught.
TEST(LuaFiles, TheCheckerSeesAnUndeclaredKey) {
    const std::string header = "-- KEYS[1]  lock key\n-- ARGV[1]  token\n";
    const std::string body = "redis.call('GET', KEYS[2], ARGV[1])\n";
    EXPECT_FALSE(indices_used(header, "KEYS").count(2));
    EXPECT_TRUE(indices_used(body, "KEYS").count(2));
    EXPECT_EQ(indices_used("ARGV[10] ARGV[1]", "ARGV"), (std::set<int>{1, 10}));
}

}  // namespace
