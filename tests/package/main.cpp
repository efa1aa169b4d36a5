// Proves the installed headers and libraries are usable as a consumer spells them.
#include <redcoord/core/endpoint.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/core/keys.hpp>
#include <redcoord/core/token.hpp>

#include <cstdio>

int main() {
    auto ep = redcoord::parse_endpoint("redis://:secret@127.0.0.1:6390/1");
    if (ep.port != 6390 || ep.db != 1) return 1;
    if (redcoord::random_token().size() != 40) return 1;
    try {
        redcoord::validate_name("", "name");
        return 1;
    } catch (const redcoord::invalid_argument&) {
    }
    std::printf("package consumer: %s\n", ep.to_string().c_str());
    return 0;
}
