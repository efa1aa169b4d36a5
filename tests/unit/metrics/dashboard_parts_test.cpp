// The dashboard's pieces without a server: which primitive a key names, the page cursor, and
// the JSON writer's escaping and cut (white-box, through the part's private headers).
#include "action_gate.hpp"
#include "host_check.hpp"
#include "json_out.hpp"
#include "key_scan.hpp"

#include <gtest/gtest.h>

namespace {

using redcoord::detail::json_out;
using redcoord::detail::parse_primitive_key;
using redcoord::detail::parse_scan_position;

TEST(DashboardKeys, PrimitiveKeysAreReadAndOthersIgnored) {
    auto a = parse_primitive_key("redcoord:lock:{orders}", "redcoord:");
    ASSERT_TRUE(a);
    EXPECT_EQ(a->kind, "lock");
    EXPECT_EQ(a->name, "orders");
    auto b = parse_primitive_key("redcoord:jobs:{reports}:job:42", "redcoord:");
    ASSERT_TRUE(b);
    EXPECT_EQ(b->kind, "jobs");
    EXPECT_EQ(b->name, "reports");
    auto c = parse_primitive_key("p:queue:{a}b}:dead", "p:");  // `}` inside the name
    ASSERT_TRUE(c);
    EXPECT_EQ(c->name, "a}b");
    for (const char* k : {"redcoord:lock", "redcoord:lock:{}", "other:lock:{x}", "redcoord::{x}",
                          "redcoord:lock:{x", "redcoord:a:b:{x}"})
        EXPECT_FALSE(parse_primitive_key(k, "redcoord:")) << k;
}

TEST(DashboardKeys, ScanPositionsRoundTripAndBadOnesAreRefused) {
    auto p = parse_scan_position("2.12345");
    ASSERT_TRUE(p);
    EXPECT_EQ(p->node, 2u);
    EXPECT_EQ(p->cursor, "12345");
    EXPECT_EQ(redcoord::detail::format_scan_position(*p), "2.12345");
    auto start = parse_scan_position("");
    ASSERT_TRUE(start);
    EXPECT_EQ(start->node, 0u);
    EXPECT_EQ(start->cursor, "0");
    for (const char* bad : {"x", "1", "1.", ".1", "a.1", "1.2a", "1.-2"})
        EXPECT_FALSE(parse_scan_position(bad)) << bad;
    EXPECT_EQ(redcoord::detail::scan_pattern("a*b:", "lock"), "a\\*b:lock:{*");
}

TEST(DashboardJson, StringsAreEscapedForJsonAndMarkup) {
    json_out j(100);
    j.begin_object().field("a", std::string_view("<script>\"x\"\\&\n\x01"));
    j.field("bin", std::string_view("\xff\xc3\xa9", 3)).key("n").null().end_object();
    EXPECT_EQ(j.text(), R"({"a":"\u003cscript\u003e\"x\"\\\u0026\n\u0001","bin":"\u00ff)"
                        "\xc3\xa9"
                        R"(","n":null})");
}

TEST(DashboardJson, LongStringsAreCutWithTheirSizeNeverInsideACharacter) {
    json_out j(4);
    j.begin_array().value("abcdefgh").value("ab\xc3\xa9").value("abc\xc3\xa9").end_array();
    EXPECT_EQ(j.text(),
              "[\"abcd \xE2\x80\xA6 [8 bytes]\",\"ab\xc3\xa9\",\"abc \xE2\x80\xA6 [5 bytes]\"]");
}

TEST(DashboardJson, NestedContainersGetTheirCommas) {
    json_out j(10);
    j.begin_object().key("x").begin_array().begin_object().field("a", 1).end_object();
    j.begin_object().end_object().end_array().field("y", true).end_object();
    EXPECT_EQ(j.text(), R"({"x":[{"a":1},{}],"y":true})");
    json_out k(10);
    k.begin_array().value(1).raw(j.text()).raw("[]").end_array();
    EXPECT_EQ(k.text(), R"([1,{"x":[{"a":1},{}],"y":true},[]])");
}

TEST(DashboardHosts, LoopbackNamesAndAddressesPassOtherNamesOnlyWhenAllowed) {
    using redcoord::detail::host_allowed;
    for (const char* ok :
         {"", "127.0.0.1:8080", "127.0.0.1", "[::1]:80", "LocalHost:9", "localhost", "10.1.2.3:80"})
        EXPECT_TRUE(host_allowed(ok, {})) << ok;
    for (const char* bad : {"evil.example", "evil.example:8080", "localhost.evil.example:80",
                            "[evil]:80", "[::1", "127.0.0.1.evil.example"})
        EXPECT_FALSE(host_allowed(bad, {})) << bad;
    EXPECT_TRUE(host_allowed("Ops.Example:443", {"ops.example"}));
    EXPECT_FALSE(host_allowed("ops.example.evil:443", {"ops.example"}));
}

// A request that passes every check of the action gate; each test spoils one thing.
redcoord::http_request good_action() {
    redcoord::http_request r;
    r.method = "POST";
    r.host = "127.0.0.1:8080";
    r.body = "name=reports&id=j1";
    r.headers = {{"authorization", "Bearer tok-0123456789abcdef"},
                 {"x-redcoord-csrf", "c5rf"},
                 {"origin", "http://127.0.0.1:8080"}};
    return r;
}

const redcoord::detail::action_settings gate{true, "tok-0123456789abcdef", "c5rf", 64};

TEST(DashboardActionGate, ARequestWithEverythingRightPasses) {
    using redcoord::detail::check_action;
    EXPECT_FALSE(check_action(good_action(), gate));
    auto no_origin = good_action();
    no_origin.headers.pop_back();  // curl sends none: judged by the tokens alone
    EXPECT_FALSE(check_action(no_origin, gate));
    auto https = good_action();
    https.headers.back().second = "https://127.0.0.1:8080";
    EXPECT_FALSE(check_action(https, gate));
}

TEST(DashboardActionGate, EachFaultGetsItsAnswer) {
    using redcoord::detail::check_action;
    auto status = [](const redcoord::http_request& r, const redcoord::detail::action_settings& s) {
        const auto no = check_action(r, s);
        return no ? no->status : 200;
    };
    auto get = good_action();
    get.method = "GET";
    EXPECT_EQ(status(get, gate), 405);
    auto off = gate;
    off.enabled = false;
    EXPECT_EQ(status(good_action(), off), 403);
    auto big = good_action();
    big.body.assign(65, 'x');
    EXPECT_EQ(status(big, gate), 413);
    auto foreign = good_action();
    foreign.headers.back().second = "http://127.0.0.1:8081";
    EXPECT_EQ(status(foreign, gate), 403);
    foreign.headers.back().second = "null";
    EXPECT_EQ(status(foreign, gate), 403);
    for (const char* auth : {"Bearer tok-0123456789abcdeg", "Bearer tok-0123456789abcde",
                             "Basic tok-0123456789abcdef", "Bearer ", "tok-0123456789abcdef"}) {
        auto bad = good_action();
        bad.headers[0].second = auth;
        EXPECT_EQ(status(bad, gate), 403) << auth;
    }
    auto no_token = good_action();
    no_token.headers.erase(no_token.headers.begin());
    EXPECT_EQ(status(no_token, gate), 403);
    auto no_csrf = good_action();
    no_csrf.headers.erase(no_csrf.headers.begin() + 1);
    EXPECT_EQ(status(no_csrf, gate), 403);
    auto bad_csrf = good_action();
    bad_csrf.headers[1].second = "c5rg";
    EXPECT_EQ(status(bad_csrf, gate), 403);
}

TEST(DashboardActionGate, HeadersAreFoundInAnyCaseAndFormsAreDecoded) {
    auto r = good_action();
    EXPECT_EQ(r.header("Authorization").value_or(""), "Bearer tok-0123456789abcdef");
    EXPECT_EQ(r.header("X-Redcoord-CSRF").value_or(""), "c5rf");
    EXPECT_FALSE(r.header("cookie"));
    r.body = "name=a%20b&id=x+y";
    EXPECT_EQ(redcoord::detail::form_param(r, "name").value_or(""), "a b");
    EXPECT_EQ(redcoord::detail::form_param(r, "id").value_or(""), "x y");
    EXPECT_TRUE(redcoord::detail::constant_time_equal("abc", "abc"));
    EXPECT_FALSE(redcoord::detail::constant_time_equal("abc", "abd"));
    EXPECT_FALSE(redcoord::detail::constant_time_equal("abc", "ab"));
}

}  // namespace
