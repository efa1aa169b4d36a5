// Sentinel resolution against real redis-sentinel processes: the master is found and checked,
// replicas are listed, and each way of failing has its own error type.
#include <redcoord/core/errors.hpp>
#include <redcoord/core/pool.hpp>
#include <redcoord/core/sentinel.hpp>
#include <redcoord/testing/local_sentinel.hpp>

#include <gtest/gtest.h>

#include <thread>

using namespace redcoord;
using namespace std::chrono_literals;
using redcoord::testing::local_sentinel;
using redcoord::testing::local_sentinel_options;

namespace {

bool is_master(const connection& c) {
    auto& cc = const_cast<connection&>(c);
    auto r = cc.command({"ROLE"});
    return r.elements().at(0).text() == "master";
}

}  // namespace

// One service shared by the tests that do not change it (start-up costs about a second).
class SentinelResolve : public ::testing::Test {
protected:
    // In SetUp(), not SetUpTestSuite(): a suite set-up that fails makes GoogleTest report its
    // tests as skipped, which ctest counts as such (tests/integration/cluster/shared_cluster.hpp).
    void SetUp() override {
        if (svc_) return;
        local_sentinel_options o;
        o.replicas = 2;
        svc_ = new local_sentinel(o);
    }
    static void TearDownTestSuite() {
        delete svc_;
        svc_ = nullptr;
    }
    static local_sentinel* svc_;
};
local_sentinel* SentinelResolve::svc_ = nullptr;

TEST_F(SentinelResolve, PoolTalksToTheMasterTheSentinelsName) {
    connection_pool pool(svc_->endpoint());
    ASSERT_NE(pool.sentinel(), nullptr);
    EXPECT_TRUE(pool.command({"SET", "sentinel:k", "v"}).is_status("OK"));
    EXPECT_EQ(pool.command({"GET", "sentinel:k"}).text(), "v");
    auto c = pool.borrow();
    EXPECT_EQ(c->where().port, svc_->master_address().port);
    EXPECT_TRUE(is_master(*c));
    EXPECT_EQ(pool.sentinel()->cached_master(), std::optional<host_port>(svc_->master_address()));
    EXPECT_EQ(pool.sentinel()->switches(), 0u);
}

TEST_F(SentinelResolve, UriFormWorksToo) {
    connection_pool pool(parse_endpoint(svc_->url()));
    EXPECT_TRUE(pool.command({"PING"}).is_status("PONG"));
}

TEST_F(SentinelResolve, ListsReplicasFromSentinelAndFromTheMaster) {
    std::vector<std::uint16_t> expected;
    for (std::size_t i = 1; i < svc_->servers().size(); ++i)
        expected.push_back(svc_->servers()[i]->port());
    std::sort(expected.begin(), expected.end());

    auto via_sentinel = discover_replicas(svc_->endpoint());
    std::vector<std::uint16_t> got;
    for (auto& e : via_sentinel) {
        EXPECT_FALSE(e.is_sentinel());
        got.push_back(e.port);
    }
    std::sort(got.begin(), got.end());
    EXPECT_EQ(got, expected);

    auto via_role = discover_replicas(svc_->master().endpoint());
    got.clear();
    for (auto& e : via_role) got.push_back(e.port);
    std::sort(got.begin(), got.end());
    EXPECT_EQ(got, expected);
    // A replica lists no replicas of its own.
    EXPECT_TRUE(discover_replicas(svc_->servers()[1]->endpoint()).empty());
}

TEST_F(SentinelResolve, ConcurrentBorrowersShareOneResolution) {
    auto ep = svc_->endpoint();
    ep.command_timeout = 2345ms;  // an endpoint no other test uses: a fresh shared resolver
    connection_pool pool(ep, {.max_size = 8});
    std::vector<std::thread> ts;
    std::atomic<int> ok{0};
    for (int i = 0; i < 8; ++i)
        ts.emplace_back([&] {
            auto c = pool.borrow();
            if (c->command({"PING"}).is_status("PONG")) ++ok;
        });
    for (auto& t : ts) t.join();
    EXPECT_EQ(ok.load(), 8);
    EXPECT_EQ(pool.sentinel()->rounds(), 1u)
        << "every borrower should share one round of questions";
    // A second pool on the same endpoint shares the resolver and its answer.
    connection_pool other(ep);
    EXPECT_EQ(other.sentinel(), pool.sentinel());
    EXPECT_TRUE(other.command({"PING"}).is_status("PONG"));
    EXPECT_EQ(pool.sentinel()->rounds(), 1u);
}

TEST_F(SentinelResolve, UnknownServiceIsTyped) {
    auto ep = svc_->endpoint();
    ep.service = "no-such-service";
    connection_pool pool(ep);
    try {
        (void)pool.borrow();
        FAIL() << "borrow should throw";
    } catch (const unknown_service& e) {
        EXPECT_NE(std::string(e.what()).find("no-such-service"), std::string::npos);
    }
    EXPECT_THROW((void)discover_replicas(ep), unknown_service);
}

TEST(SentinelErrors, NoSentinelReachableIsTyped) {
    endpoint ep;
    ep.sentinels = {{"127.0.0.1", redcoord::testing::free_port()},
                    {"127.0.0.1", redcoord::testing::free_port()}};
    ep.service = "svc";
    ep.connect_timeout = 300ms;
    connection_pool pool(ep);
    auto t0 = std::chrono::steady_clock::now();
    EXPECT_THROW((void)pool.borrow(), sentinel_unreachable);
    // The resolver retries within the connect timeout, then gives up (generous bound).
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
    EXPECT_THROW((void)discover_replicas(ep), sentinel_unreachable);
}

TEST(SentinelErrors, NotASentinelEndpointIsRejected) {
    endpoint ep;
    EXPECT_THROW(sentinel_resolver r(ep), invalid_argument);
    ep.sentinels = {{"127.0.0.1", 1}};
    EXPECT_THROW(sentinel_resolver r(ep), invalid_argument);  // no service name
    ep.service = "s";
    EXPECT_THROW(sentinel_resolver r(ep, {.query_timeout = 0ms}), invalid_argument);
}

TEST(SentinelAuth, WrongOrMissingSentinelPasswordIsAnAuthError) {
    local_sentinel_options o;
    o.sentinel_password = "sentinel-secret";
    o.server.password = "data-secret";
    local_sentinel svc(o);

    auto good = svc.endpoint();
    connection_pool ok_pool(good);
    EXPECT_TRUE(ok_pool.command({"PING"}).is_status("PONG"));

    auto wrong = good;
    wrong.sentinel_password = "wrong";
    connection_pool wrong_pool(wrong);
    try {
        (void)wrong_pool.borrow();
        FAIL() << "borrow should throw";
    } catch (const auth_error& e) {
        EXPECT_EQ(std::string(e.what()).find("wrong"), std::string::npos) << "password leaked";
        EXPECT_EQ(std::string(e.what()).find("sentinel-secret"), std::string::npos)
            << "password leaked";
    }

    auto none = good;
    none.sentinel_password.clear();
    connection_pool none_pool(none);
    EXPECT_THROW((void)none_pool.borrow(), auth_error);

    // Right sentinel password, wrong data password: the master refuses, also auth_error.
    auto bad_data = good;
    bad_data.password = "nope";
    connection_pool bad_data_pool(bad_data);
    EXPECT_THROW((void)bad_data_pool.borrow(), auth_error);
}

namespace {

// Creates `user` (password "pw") with `rules` on every data server: ACL users are not
// replicated, and after a failover any of them may be the master.
endpoint acl_user_endpoint(const local_sentinel& svc, const std::string& user,
                           std::initializer_list<std::string_view> rules) {
    for (const auto& s : svc.servers()) {
        connection admin(s->endpoint());
        std::vector<std::string> cmd{"ACL", "SETUSER", user, "reset", "on", ">pw"};
        cmd.insert(cmd.end(), rules.begin(), rules.end());
        EXPECT_TRUE(admin.command(cmd).is_status("OK"));
    }
    endpoint ep = svc.endpoint();
    ep.user = user;
    ep.password = "pw";
    return ep;
}

}  // namespace

// C2: ROLE is @admin @dangerous, so a least-privilege application user could not connect
// through Sentinel at all.
TEST_F(SentinelResolve, C2_LeastPrivilegeAclUser) {
    const endpoint ep = acl_user_endpoint(*svc_, "c2app", {"~*", "&*", "+@all", "-@dangerous"});
    connection_pool pool(ep, pool_options{.max_size = 2, .borrow_timeout = 3000ms});
    auto c = pool.borrow();
    EXPECT_EQ(c->where().port, svc_->master_address().port);
    EXPECT_TRUE(c->command({"SET", "c2:k", "v"}).is_status("OK"));
    EXPECT_EQ(c->command({"GET", "c2:k"}).text(), "v");
}

// C2: a user refused ROLE, HELLO and INFO still connects to the master the sentinels agree on.
TEST_F(SentinelResolve, C2_AclUserWithoutAnyRoleCommandTrustsTheSentinelMajority) {
    const endpoint ep =
        acl_user_endpoint(*svc_, "c2min", {"~*", "&*", "+@all", "-@dangerous", "-hello"});
    connection_pool pool(ep, pool_options{.max_size = 2, .borrow_timeout = 3000ms});
    auto c = pool.borrow();
    EXPECT_EQ(c->where().port, svc_->master_address().port);
    EXPECT_TRUE(c->command({"SET", "c2:k2", "v"}).is_status("OK"));
}
