#include <redcoord/core/detail/lua_prelude.hpp>

#include <cctype>
#include <cstddef>
#include <map>
#include <set>
#include <vector>

namespace redcoord::detail {
namespace {

struct chunk {
    std::vector<std::string> defines;
    std::string text;
    bool always = false;  // top-level code that defines nothing: kept
};

bool ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// The identifier at the start of `s` (empty when none).
std::string_view ident_at(std::string_view s) {
    if (s.empty() || !ident_start(s[0])) return {};
    std::size_t n = 1;
    while (n < s.size() && ident_char(s[n])) ++n;
    return s.substr(0, n);
}

std::string_view skip_spaces(std::string_view s) {
    while (!s.empty() && (s[0] == ' ' || s[0] == '\t')) s.remove_prefix(1);
    return s;
}

bool starts_with_word(std::string_view line, std::string_view word) {
    return line.substr(0, word.size()) == word &&
           (line.size() == word.size() || !ident_char(line[word.size()]));
}

// Whether `line` is a definition head, adding the names it defines to `names`.
bool parse_head(std::string_view line, std::vector<std::string>& names) {
    if (starts_with_word(line, "local")) {
        auto rest = skip_spaces(line.substr(5));
        if (starts_with_word(rest, "function")) {
            const auto name = ident_at(skip_spaces(rest.substr(8)));
            if (name.empty()) return false;
            names.emplace_back(name);
            return true;
        }
        // local a, b = ... | local a
        for (;;) {
            const auto name = ident_at(rest);
            if (name.empty()) return false;
            names.emplace_back(name);
            rest = skip_spaces(rest.substr(name.size()));
            if (rest.empty() || rest[0] == '=') return true;
            if (rest[0] != ',') return false;
            rest = skip_spaces(rest.substr(1));
        }
    }
    // NAME = function
    const auto name = ident_at(line);
    if (name.empty()) return false;
    auto rest = skip_spaces(line.substr(name.size()));
    if (rest.empty() || rest[0] != '=' || (rest.size() > 1 && rest[1] == '=')) return false;
    if (!starts_with_word(skip_spaces(rest.substr(1)), "function")) return false;
    names.emplace_back(name);
    return true;
}

// A line that goes on with the chunk above: indented or blank, or closing a block or a
// table written from column 0.
bool continues(std::string_view line) {
    if (line.empty() || line[0] == ' ' || line[0] == '\t' || line[0] == '}' || line[0] == ')')
        return true;
    for (const auto* w : {"end", "else", "elseif", "until"})
        if (starts_with_word(line, w)) return true;
    return false;
}

// The identifiers of `code`, leaving out comments and quoted strings.
std::set<std::string> code_names(std::string_view code) {
    std::set<std::string> out;
    for (std::size_t i = 0; i < code.size();) {
        const char c = code[i];
        if (c == '-' && i + 1 < code.size() && code[i + 1] == '-') {
            while (i < code.size() && code[i] != '\n') ++i;
        } else if (c == '\'' || c == '"') {
            ++i;
            while (i < code.size() && code[i] != c && code[i] != '\n') i += code[i] == '\\' ? 2 : 1;
            ++i;
        } else if (ident_start(c)) {
            const auto name = ident_at(code.substr(i));
            out.emplace(name);
            i += name.size();
        } else if (std::isdigit(static_cast<unsigned char>(c))) {
            while (i < code.size() && ident_char(code[i])) ++i;  // 1e3, 0x1f: no name
        } else {
            ++i;
        }
    }
    return out;
}

// The prelude's chunks, in order.
void split(std::string_view prelude, std::vector<chunk>& out) {
    std::string pending;  // comment lines above the next head
    for (std::size_t at = 0; at < prelude.size();) {
        auto end = prelude.find('\n', at);
        if (end == std::string_view::npos) end = prelude.size();
        const auto line = prelude.substr(at, end - at);
        const auto with_newline = prelude.substr(at, std::min(end + 1, prelude.size()) - at);
        at = end + 1;
        if (line.substr(0, 2) == "--") {
            pending.append(with_newline);
            continue;
        }
        std::vector<std::string> names;
        if (parse_head(line, names) || !continues(line) || out.empty()) {
            chunk c;
            c.always = names.empty();
            c.defines = std::move(names);
            c.text = std::move(pending) + std::string(with_newline);
            pending.clear();
            out.push_back(std::move(c));
        } else {
            out.back().text += pending;
            out.back().text.append(with_newline);
            pending.clear();
        }
    }
    if (!pending.empty()) {
        chunk c;
        c.always = true;
        c.text = std::move(pending);
        out.push_back(std::move(c));
    }
}

}  // namespace

std::string with_needed_helpers(std::string_view prelude, std::string_view body) {
    std::string whole(prelude);
    if (!whole.empty() && whole.back() != '\n') whole += '\n';
    whole.append(body);
    // Long brackets would need a real lexer to tell code from text: keep everything.
    if (prelude.find("[[") != std::string_view::npos ||
        prelude.find("[=") != std::string_view::npos)
        return whole;
    std::vector<chunk> chunks;
    split(prelude, chunks);
    std::map<std::string, std::vector<std::size_t>> definers;
    for (std::size_t i = 0; i < chunks.size(); ++i)
        for (const auto& n : chunks[i].defines) definers[n].push_back(i);
    std::vector<bool> keep(chunks.size(), false);
    std::vector<std::string> todo;
    auto reach = [&](std::string_view code) {
        for (const auto& n : code_names(code))
            if (definers.count(n)) todo.push_back(n);
    };
    reach(body);
    for (std::size_t i = 0; i < chunks.size(); ++i)
        if (chunks[i].always) {
            keep[i] = true;
            reach(chunks[i].text);
        }
    std::set<std::string> seen;
    while (!todo.empty()) {
        const auto n = std::move(todo.back());
        todo.pop_back();
        if (!seen.insert(n).second) continue;
        for (const auto i : definers[n]) {
            if (keep[i]) continue;
            keep[i] = true;
            reach(chunks[i].text);
        }
    }
    std::string out;
    for (std::size_t i = 0; i < chunks.size(); ++i)
        if (keep[i]) out += chunks[i].text;
    if (!out.empty() && out.back() != '\n') out += '\n';
    out.append(body);
    return out;
}

}  // namespace redcoord::detail
