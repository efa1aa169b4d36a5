// What /readyz answers for given probe outcomes, and query-string decoding (no server).
#include <redcoord/http/health.hpp>
#include <redcoord/http/route.hpp>

#include <gtest/gtest.h>

namespace {

using redcoord::readiness_entry;

TEST(HealthAnswer, AllReadyIs200AndNoneConfiguredToo) {
    std::vector<readiness_entry> e{
        {"redis://127.0.0.1:1/0", true, "", std::chrono::microseconds(1500)}};
    auto r = redcoord::readiness_answer(e);
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body, "ready\nok   redis://127.0.0.1:1/0 1.5 ms\n");
    EXPECT_EQ(redcoord::readiness_answer({}).status, 200);
}

TEST(HealthAnswer, OneFailingIs503NamingItAndWhy) {
    std::vector<readiness_entry> e{
        {"redis://127.0.0.1:1/0", true, "", std::chrono::microseconds(100)},
        {"redis://:***@127.0.0.1:2/0", false, "no reply within the deadline",
         std::chrono::microseconds(1000000)}};
    auto r = redcoord::readiness_answer(e);
    EXPECT_EQ(r.status, 503);
    EXPECT_EQ(r.body,
              "not ready\nok   redis://127.0.0.1:1/0 0.1 ms\n"
              "FAIL redis://:***@127.0.0.1:2/0 1000.0 ms: no reply within the deadline\n");
}

TEST(HealthAnswer, QueryParametersArePercentDecoded) {
    redcoord::http_request q;
    q.query = "a=1&name=x%2Fy+z&empty&bad=%zz";
    EXPECT_EQ(q.param("name"), "x/y z");
    EXPECT_EQ(q.param("empty"), "");
    EXPECT_EQ(q.param("bad"), "%zz");
    EXPECT_EQ(q.param("missing"), std::nullopt);
}

}  // namespace
