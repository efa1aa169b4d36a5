#pragma once
// The Lua files of every part (<part>/src/lua/*.lua), read from the source tree: their header
// comment (the leading `--` lines) and their body.

#include <filesystem>
#include <set>
#include <string>
#include <vector>

namespace redcoord::testing {

struct lua_file {
    std::string part;    // the folder above src/lua
    std::string name;    // the file's stem
    std::string header;  // the leading comment lines
    std::string body;    // the rest, with `--` comments cut from each line
    bool fragment;       // a piece prepended to other scripts, not run on its own
};

/// Every <part>/src/lua/*.lua under `root`, sorted by part and name.
std::vector<lua_file> read_lua_files(const std::filesystem::path& root);

/// The indices n of every `<array>[n]` in `text` (`array`: KEYS or ARGV).
std::set<int> indices_used(const std::string& text, const std::string& array);

}  // namespace redcoord::testing
