#include "context.hpp"

#include <redcoord/core/errors.hpp>

#include <cstdio>
#include <cstdlib>
#include <iostream>

namespace redcoord::cli {

std::vector<endpoint> context::endpoints() const {
    return resolve_endpoints(choose_urls(opts.urls, std::getenv("REDCOORD_REDIS")), std::getenv("REDCOORD_PASSWORD"),
                             endpoint_timeouts{opts.connect_timeout, opts.command_timeout});
}

endpoint context::single_endpoint(std::string_view command) const {
    auto eps = endpoints();
    if (eps.size() != 1)
        throw invalid_argument("'" + std::string(command) + "' talks to one server; got " + std::to_string(eps.size()) +
                               " (only 'lock' takes several: Redlock)");
    return eps.front();
}

void print_line(std::string_view line) {
    std::fwrite(line.data(), 1, line.size(), stdout);
    std::fputc('\n', stdout);
    std::fflush(stdout);
}

void print_note(std::string_view message) {
    std::string s = "redcoord: ";
    s += message;
    s += '\n';
    std::fwrite(s.data(), 1, s.size(), stderr);
    std::fflush(stderr);
}

CLI::Option* add_duration(CLI::App& app, const std::string& name, std::chrono::milliseconds& target,
                          const std::string& description, bool show_default) {
    auto* opt = app.add_option_function<std::string>(
        name,
        [&target, name](const std::string& text) {
            try {
                target = parse_duration(text);
            } catch (const std::exception& e) {
                throw CLI::ValidationError(name, e.what());
            }
        },
        show_default ? description + " (default " + format_duration(target) + ")" : description);
    opt->type_name("DURATION");
    return opt;
}

}  // namespace redcoord::cli
