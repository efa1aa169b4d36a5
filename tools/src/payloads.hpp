#pragma once
/// @file
/// Payloads as the shell gives them: arguments, `-` for stdin, `--file F`, and base64 for
/// bytes a command line or a text line cannot carry (NUL, invalid UTF-8). `queue push`,
/// `jobs add` and the commands that print payloads share these rules.

#include <CLI/CLI.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace redcoord::cli {

/// The payload options of one subcommand.
struct payload_input {
    std::vector<std::string> args;  ///< Positional payloads; `-` reads stdin.
    std::string file;               ///< --file: one payload, the file's bytes.
    bool base64 = false;            ///< --base64: each payload is base64 text, decoded.
};

/// Adds the positional `payloads`, `--file` and `--base64` to `sub`.
void add_payload_options(CLI::App& sub, payload_input& in);

/// The payloads to send, read from the arguments, stdin (`-`) or --file, base64-decoded with
/// --base64. Stdin and a file are read whole, byte for byte (a trailing newline included).
/// @throws invalid_argument naming the option: no payload, `-` with other payloads or with
///         --file, an unreadable file (with the system's reason), invalid base64.
[[nodiscard]] std::vector<std::string> read_payloads(const payload_input& in);

/// RFC 4648 base64 with padding.
[[nodiscard]] std::string base64_encode(std::string_view bytes);
/// Decodes RFC 4648 base64 (padding optional; spaces and newlines skipped).
/// @throws invalid_argument for any other character or a truncated group.
[[nodiscard]] std::string base64_decode(std::string_view text);

}  // namespace redcoord::cli
