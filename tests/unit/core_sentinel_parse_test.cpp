// The Sentinel client's reply and message parsers (core/src/sentinel_parse.hpp), without a
// server: replies are built as the server sends them.
#include "sentinel_parse.hpp"

#include <redcoord/core/errors.hpp>

#include <gtest/gtest.h>

using namespace redcoord;
using namespace redcoord::detail;

namespace {

reply str(std::string s) { return reply::make_text(reply::kind::string, std::move(s)); }
reply err(std::string s) { return reply::make_text(reply::kind::error, std::move(s)); }
reply arr(std::vector<reply> e) { return reply::make_array(std::move(e)); }
reply nil() { return reply{}; }

// One `SENTINEL replicas` entry (a flat field/value array, as RESP2 sends it).
reply replica(std::string ip, std::string port, std::string flags) {
    return arr({str("name"), str(ip + ":" + port), str("ip"), str(ip), str("port"), str(port),
                str("runid"), str("abc"), str("flags"), str(flags)});
}

}  // namespace

TEST(SentinelParse, Ports) {
    EXPECT_EQ(parse_port("6379"), 6379);
    EXPECT_EQ(parse_port("1"), 1);
    EXPECT_EQ(parse_port("65535"), 65535);
    EXPECT_FALSE(parse_port("0"));
    EXPECT_FALSE(parse_port("65536"));
    EXPECT_FALSE(parse_port("123456"));
    EXPECT_FALSE(parse_port(""));
    EXPECT_FALSE(parse_port("63a9"));
    EXPECT_FALSE(parse_port("-1"));
    EXPECT_FALSE(parse_port(" 6379"));
}

TEST(SentinelParse, MasterAddressAnswers) {
    auto a = parse_master_answer(arr({str("10.0.0.2"), str("6380")}));
    EXPECT_EQ(a.what, master_answer::kind::master);
    EXPECT_EQ(a.addr, (host_port{"10.0.0.2", 6380}));

    EXPECT_EQ(parse_master_answer(nil()).what, master_answer::kind::unknown);

    a = parse_master_answer(err("NOAUTH Authentication required."));
    EXPECT_EQ(a.what, master_answer::kind::refused);
    EXPECT_TRUE(a.auth);
    a = parse_master_answer(err("WRONGPASS invalid username-password pair"));
    EXPECT_TRUE(a.auth);
    a = parse_master_answer(err("ERR unknown command"));
    EXPECT_EQ(a.what, master_answer::kind::refused);
    EXPECT_FALSE(a.auth);
    EXPECT_EQ(a.text, "ERR unknown command");

    a = parse_master_answer(arr({str("10.0.0.2"), str("99999")}));
    EXPECT_EQ(a.what, master_answer::kind::bad_reply);
    EXPECT_EQ(a.text, "bad port in reply");
    EXPECT_EQ(parse_master_answer(arr({str("10.0.0.2")})).what, master_answer::kind::bad_reply);
    EXPECT_EQ(parse_master_answer(arr({str("a"), str("1"), str("b")})).what,
              master_answer::kind::bad_reply);
    EXPECT_EQ(parse_master_answer(reply::make_integer(1)).what, master_answer::kind::bad_reply);
    EXPECT_EQ(parse_master_answer(arr({str("a"), reply::make_integer(6379)})).what,
              master_answer::kind::bad_reply);
}

TEST(SentinelParse, UnreachableAnswersKeepTheirCause) {
    auto a = unreachable_answer("connect to 10.0.0.9:26379 failed recently (connection refused)");
    EXPECT_EQ(a.what, master_answer::kind::unreachable);
    EXPECT_TRUE(a.failed_recently);
    EXPECT_FALSE(a.auth);
    a = unreachable_answer("WRONGPASS invalid username-password pair");
    EXPECT_TRUE(a.auth);
    EXPECT_FALSE(a.failed_recently);
    a = unreachable_answer("timed out");
    EXPECT_FALSE(a.auth);
    EXPECT_FALSE(a.failed_recently);
}

TEST(SentinelParse, ReplicaEntries) {
    const auto r =
        arr({replica("10.0.0.3", "6379", "slave"), replica("10.0.0.4", "6379", "slave,s_down"),
             replica("10.0.0.5", "6379", "slave,o_down,disconnected"),
             replica("10.0.0.6", "6379", "slave,disconnected"), replica("", "6379", "slave"),
             replica("10.0.0.7", "http", "slave"), str("not an entry"),
             replica("10.0.0.8", "6381", "slave,promoted"),
             replica("10.0.0.8", "6381", "slave,promoted")});
    const auto e = parse_replica_entries(r);
    ASSERT_EQ(e.size(), 6u);  // no ip, bad port and the string are skipped
    EXPECT_EQ(e[0].addr, (host_port{"10.0.0.3", 6379}));
    EXPECT_EQ(e[1].flags, "slave,s_down");
    EXPECT_EQ(usable_replicas(e),
              (std::vector<host_port>{{"10.0.0.3", 6379}, {"10.0.0.8", 6381}, {"10.0.0.8", 6381}}));
    EXPECT_EQ(promoted_replicas(e), (std::vector<host_port>{{"10.0.0.8", 6381}}));
    EXPECT_TRUE(parse_replica_entries(arr({})).empty());
    EXPECT_THROW((void)parse_replica_entries(err("ERR No such master with that name")),
                 protocol_error);
    EXPECT_THROW((void)parse_replica_entries(nil()), protocol_error);
}

TEST(SentinelParse, Notifications) {
    EXPECT_EQ(
        parse_notification("+switch-master", "mymaster 10.0.0.1 6379 10.0.0.2 6380", "mymaster"),
        (host_port{"10.0.0.2", 6380}));
    EXPECT_FALSE(
        parse_notification("+switch-master", "other 10.0.0.1 6379 10.0.0.2 6380", "mymaster"));
    EXPECT_FALSE(
        parse_notification("+switch-master", "mymaster 10.0.0.1 6379 10.0.0.2", "mymaster"));
    EXPECT_FALSE(
        parse_notification("+switch-master", "mymaster 10.0.0.1 6379 10.0.0.2 0", "mymaster"));
    EXPECT_FALSE(parse_notification("+switch-master", "", "mymaster"));
    EXPECT_EQ(parse_notification("+promoted-slave",
                                 "slave 10.0.0.3:6379 10.0.0.3 6379 @ mymaster 10.0.0.1 6379",
                                 "mymaster"),
              (host_port{"10.0.0.3", 6379}));
    EXPECT_FALSE(parse_notification(
        "+promoted-slave", "slave 10.0.0.3:6379 10.0.0.3 6379 @ other 10.0.0.1 6379", "mymaster"));
    EXPECT_FALSE(parse_notification("+promoted-slave",
                                    "slave 10.0.0.3:6379 10.0.0.3 6379 # mymaster", "mymaster"));
    // Other channels carry the same shapes but announce nothing.
    EXPECT_FALSE(parse_notification("+sdown", "mymaster 10.0.0.1 6379 10.0.0.2 6380", "mymaster"));
    // Extra whitespace is tolerated.
    EXPECT_EQ(parse_notification("+switch-master", "  mymaster  10.0.0.1 6379\t10.0.0.2 6380\r\n",
                                 "mymaster"),
              (host_port{"10.0.0.2", 6380}));
}

TEST(SentinelParse, Roles) {
    EXPECT_EQ(role_from_role_reply(arr({str("master"), reply::make_integer(0), arr({})})),
              "master");
    EXPECT_EQ(role_from_role_reply(arr({str("slave"), str("10.0.0.1"), reply::make_integer(6379)})),
              "slave");
    EXPECT_FALSE(role_from_role_reply(arr({})));
    EXPECT_FALSE(role_from_role_reply(err("NOPERM")));
    EXPECT_EQ(role_from_hello(arr({str("server"), str("redis"), str("proto"),
                                   reply::make_integer(2), str("role"), str("replica")})),
              "replica");
    EXPECT_FALSE(role_from_hello(arr({str("server"), str("redis")})));
    EXPECT_EQ(role_from_info(
                  str("# Replication\r\nrole_extra:x\r\nrole:master\r\nconnected_slaves:0\r\n")),
              "master");
    EXPECT_FALSE(role_from_info(str("# Replication\r\nconnected_slaves:0\r\n")));
    EXPECT_FALSE(role_from_info(nil()));
    EXPECT_EQ(info_field(str("a:1\nb:2"), "b"), "2");
}

TEST(SentinelParse, ReplicasOfAMastersRole) {
    const auto role =
        arr({str("master"), reply::make_integer(100),
             arr({arr({str("10.0.0.3"), str("6379"), str("100")}),
                  arr({str("10.0.0.4"), str("bad"), str("100")}), arr({str("10.0.0.5")}),
                  arr({str("10.0.0.6"), str("6380"), str("90")})})});
    EXPECT_EQ(replicas_from_role(role),
              (std::vector<host_port>{{"10.0.0.3", 6379}, {"10.0.0.6", 6380}}));
    EXPECT_TRUE(replicas_from_role(arr({str("slave"), str("10.0.0.1"), reply::make_integer(6379)}))
                    .empty());
    EXPECT_TRUE(replicas_from_role(arr({str("master"), reply::make_integer(0)})).empty());
    EXPECT_TRUE(replicas_from_role(err("NOPERM")).empty());
}

// For a user refused ROLE (it is @admin @dangerous) that may run INFO.
TEST(SentinelParse, ReplicasFromInfoReplication) {
    const auto info =
        str("# Replication\r\nrole:master\r\nconnected_slaves:3\r\n"
            "slave0:ip=10.0.0.3,port=6379,state=online,offset=42,lag=0\r\n"
            "slave1:ip=::1,port=6380,state=wait_bgsave,offset=0,lag=1\r\n"
            "slave2:ip=10.0.0.7,port=0,state=online,offset=1,lag=0\r\n"
            "slaveX:ip=10.0.0.8,port=6381\r\nmaster_failover_state:no-failover\r\n"
            "master_repl_offset:42\r\n");
    EXPECT_EQ(replicas_from_info(info),
              (std::vector<host_port>{{"10.0.0.3", 6379}, {"::1", 6380}}));
    EXPECT_TRUE(
        replicas_from_info(str("# Replication\r\nrole:slave\r\nmaster_host:10.0.0.1\r\n")).empty());
    EXPECT_TRUE(replicas_from_info(err("NOPERM")).empty());
}
