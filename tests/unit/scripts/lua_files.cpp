#include "lua_files.hpp"

#include <algorithm>
#include <fstream>
#include <regex>
#include <sstream>

namespace redcoord::testing {

namespace fs = std::filesystem;

std::vector<lua_file> read_lua_files(const fs::path& root) {
    std::vector<lua_file> out;
    for (const auto& part : fs::directory_iterator(root)) {
        const fs::path dir = part.path() / "src" / "lua";
        if (!fs::is_directory(dir)) continue;
        for (const auto& f : fs::directory_iterator(dir)) {
            if (f.path().extension() != ".lua") continue;
            std::ifstream in(f.path());
            lua_file l{part.path().filename().string(), f.path().stem().string(), "", "", false};
            bool in_header = true;
            for (std::string line; std::getline(in, line);) {
                if (in_header && line.rfind("--", 0) == 0) {
                    l.header += line + "\n";
                    continue;
                }
                in_header = false;
                // No script holds `--` inside a string literal, so this cuts comments only.
                if (auto at = line.find("--"); at != std::string::npos) line.erase(at);
                l.body += line + "\n";
            }
            l.fragment = l.header.rfind("-- Fragment", 0) == 0;
            out.push_back(std::move(l));
        }
    }
    std::sort(out.begin(), out.end(), [](const lua_file& a, const lua_file& b) {
        return std::tie(a.part, a.name) < std::tie(b.part, b.name);
    });
    return out;
}

std::set<int> indices_used(const std::string& text, const std::string& array) {
    std::set<int> used;
    const std::regex index(array + R"(\[(\d+)\])");
    for (std::sregex_iterator it(text.begin(), text.end(), index), end; it != end; ++it)
        used.insert(std::stoi((*it)[1].str()));
    return used;
}

}  // namespace redcoord::testing
