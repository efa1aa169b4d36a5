#include "payloads.hpp"

#include <redcoord/core/errors.hpp>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <system_error>

namespace redcoord::cli {
namespace {

constexpr char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int sextet(char c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

std::string read_all(std::istream& in) {
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

std::string base64_encode(std::string_view bytes) {
    std::string out;
    out.reserve((bytes.size() + 2) / 3 * 4);
    std::size_t i = 0;
    const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(bytes[k]); };
    for (; i + 2 < bytes.size(); i += 3) {
        const unsigned n = (byte(i) << 16) | (byte(i + 1) << 8) | byte(i + 2);
        for (const int shift : {18, 12, 6, 0}) out += alphabet[(n >> shift) & 63];
    }
    if (i < bytes.size()) {
        unsigned n = byte(i) << 16;
        if (i + 1 < bytes.size()) n |= byte(i + 1) << 8;
        out += alphabet[(n >> 18) & 63];
        out += alphabet[(n >> 12) & 63];
        out += i + 1 < bytes.size() ? alphabet[(n >> 6) & 63] : '=';
        out += '=';
    }
    return out;
}

std::string base64_decode(std::string_view text) {
    std::string out;
    unsigned acc = 0;
    int bits = 0, digits = 0;
    bool padded = false;
    for (const char c : text) {
        if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
        if (c == '=') {
            padded = true;
            continue;
        }
        const int v = sextet(c);
        if (v < 0 || padded)
            throw invalid_argument("--base64: not base64 text (at '" + std::string(1, c) + "')");
        acc = (acc << 6) | static_cast<unsigned>(v);
        bits += 6;
        ++digits;
        if (bits >= 8) {
            bits -= 8;
            out += static_cast<char>((acc >> bits) & 0xFF);
        }
    }
    if (digits % 4 == 1) throw invalid_argument("--base64: truncated base64 text");
    return out;
}

void add_payload_options(CLI::App& sub, payload_input& in) {
    sub.add_option("payloads", in.args, "Payloads, one message each; '-' reads one from stdin");
    sub.add_option("--file", in.file, "One payload: the bytes of this file")->type_name("F");
    sub.add_flag("--base64", in.base64,
                 "Payloads are base64 text, decoded before sending (binary payloads)");
}

std::vector<std::string> read_payloads(const payload_input& in) {
    const bool has_stdin = std::find(in.args.begin(), in.args.end(), "-") != in.args.end();
    if (in.args.empty() && in.file.empty())
        throw invalid_argument("give payloads, '-' (stdin) or --file F");
    if (has_stdin && in.args.size() > 1)
        throw invalid_argument("'-' (stdin) is one payload: give it alone");
    if (!in.file.empty() && !in.args.empty())
        throw invalid_argument("--file is one payload: give it without other payloads or '-'");
    std::vector<std::string> out;
    if (!in.file.empty()) {
        std::ifstream f(in.file, std::ios::binary);
        if (!f)
            throw invalid_argument("cannot read --file '" + in.file +
                                   "': " + std::generic_category().message(errno));
        out.push_back(read_all(f));
        if (f.bad()) throw invalid_argument("cannot read --file '" + in.file + "'");
    } else if (has_stdin) {
        out.push_back(read_all(std::cin));
    } else {
        out = in.args;
    }
    if (in.base64)
        for (auto& p : out) p = base64_decode(p);
    return out;
}

}  // namespace redcoord::cli
