// The ACL rule formatter and the refusal classifier (issue 18), without a server.
#include <redcoord/core/acl.hpp>
#include <redcoord/core/detail/refusal.hpp>
#include <redcoord/core/detail/subscription_book.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/core/script.hpp>

#include <gtest/gtest.h>

#include <algorithm>

using namespace redcoord;

TEST(AclFormat, OneLineResetsThenGrantsInOrder) {
    acl_needs n;
    n.allow_commands({"PING", "evalsha", "ping"});
    n.key_patterns = {"redcoord:lock:*"};
    n.channel_patterns = {"redcoord:lock:*"};
    EXPECT_EQ(format_acl_setuser("svc", n),
              "ACL SETUSER svc on resetkeys resetchannels -@all +ping +evalsha ~redcoord:lock:* "
              "&redcoord:lock:*");
    const auto argv = acl_setuser_argv("svc", n);
    ASSERT_EQ(argv.size(), 11u);
    EXPECT_EQ(argv[6], "-@all");
}

TEST(AclFormat, QuotesWhatRedisCliWouldSplitAndRefusesSpaces) {
    acl_needs n;
    n.key_patterns = {prefixed_pattern("a\"b\\c*:", "lock:*")};
    // Glob characters of the prefix are escaped, then the argument is quoted for redis-cli.
    EXPECT_EQ(n.key_patterns[0], "a\"b\\\\c\\*:lock:*");
    EXPECT_EQ(format_acl_setuser("u", n),
              "ACL SETUSER u on resetkeys resetchannels -@all \"~a\\\"b\\\\\\\\c\\\\*:lock:*\"");
    acl_needs spaced;
    spaced.key_patterns = {prefixed_pattern("my app:", "queue:*")};
    EXPECT_THROW((void)format_acl_setuser("u", spaced), invalid_argument);
    EXPECT_THROW((void)format_acl_setuser("", acl_needs{}), invalid_argument);
    EXPECT_THROW((void)format_acl_setuser("two words", acl_needs{}), invalid_argument);
}

TEST(AclNeeds, MergeKeepsOrderAndDropsDuplicates) {
    acl_needs a = connection_acl_needs();
    EXPECT_EQ(a.commands, (std::vector<std::string>{"ping", "role"}));
    EXPECT_EQ(connection_acl_needs(2).commands,
              (std::vector<std::string>{"ping", "role", "select"}));
    a.merge(pubsub_acl_needs(true));
    EXPECT_EQ(a.commands, (std::vector<std::string>{"ping", "role", "subscribe", "unsubscribe",
                                                    "psubscribe", "punsubscribe"}));
}

TEST(AclNeeds, ScriptNeedsEvalEvalshaAndWhatItCalls) {
    const script s(R"lua(
local v = redis.call('GET', KEYS[1])
redis.pcall("set", KEYS[1], ARGV[1])
local c = redis.call('PUBSUB', 'CHANNELS', ARGV[2])
return redis.call( 'GET', KEYS[1])
)lua");
    EXPECT_EQ(s.calls(), (std::vector<std::string>{"GET", "SET", "PUBSUB"}));
    acl_needs n;
    n.allow_script(s);
    EXPECT_EQ(n.commands,
              (std::vector<std::string>{"eval", "evalsha", "get", "set", "pubsub|channels"}));
}

TEST(Refusal, RecognisesNopermAndScriptRefusalsOfRedis70And72) {
    using detail::is_permission_refusal;
    EXPECT_TRUE(
        is_permission_refusal("NOPERM this user has no permissions to run the 'evalsha' command"));
    EXPECT_TRUE(is_permission_refusal("NOPERM User u has no permissions to run the 'get' command"));
    EXPECT_TRUE(is_permission_refusal(
        "NOPERM this user has no permissions to access one of the keys used as arguments"));
    EXPECT_TRUE(
        is_permission_refusal("ERR The user executing the script can't run this command or "
                              "subcommand script: ee5b, on @user_script:1."));
    EXPECT_TRUE(is_permission_refusal(
        "ERR Error running script (call to f_x): @user_script:1: NOPERM No permissions"));
    EXPECT_FALSE(
        is_permission_refusal("WRONGTYPE Operation against a key holding the wrong kind of value"));
    EXPECT_FALSE(is_permission_refusal("NOSCRIPT No matching script. Please use EVAL."));
    EXPECT_FALSE(is_permission_refusal("ERR unknown command 'FOO'"));
}

TEST(Refusal, NamesTheCommandFromTheReplyElseTheOneSent) {
    using detail::refused_command;
    EXPECT_EQ(
        refused_command("NOPERM this user has no permissions to run the 'client|setname' command",
                        "CLIENT"),
        "client|setname");
    EXPECT_EQ(
        refused_command("NOPERM User u has no permissions to run the 'get' command", "EVALSHA"),
        "get");
    EXPECT_EQ(
        refused_command(
            "NOPERM this user has no permissions to access one of the channels used as arguments",
            "SUBSCRIBE"),
        "subscribe");
}

TEST(Refusal, PermissionErrorIsAReplyErrorNamingTheCommand) {
    try {
        detail::throw_reply_error("NOPERM this user has no permissions to run the 'blmove' command",
                                  "BLMOVE");
        FAIL();
    } catch (const reply_error& e) {  // existing catch sites keep working
        const auto* p = dynamic_cast<const permission_error*>(&e);
        ASSERT_NE(p, nullptr);
        EXPECT_EQ(p->command(), "blmove");
        EXPECT_NE(std::string(e.what()).find("'blmove'"), std::string::npos);
    }
    EXPECT_THROW(detail::throw_reply_error("WRONGTYPE nope", "GET"), reply_error);
    try {
        detail::throw_reply_error("WRONGTYPE nope", "GET");
    } catch (const permission_error&) {
        FAIL() << "not an ACL refusal";
    } catch (const reply_error& e) {
        EXPECT_STREQ(e.what(), "WRONGTYPE nope");
    }
}

TEST(Refusal, SubscriptionBookKeepsEachRefusalAndTheHandshakeRefusalUntilRelink) {
    using space = detail::subscription_book::space;
    detail::subscription_book b;
    (void)b.want(space::channel, {"a", "b"});
    (void)b.sent("SUBSCRIBE", {"a", "b"});
    (void)b.error(
        "NOPERM this user has no permissions to access one of the channels used as arguments");
    EXPECT_TRUE(b.refused_any(space::channel, {"a"}));
    EXPECT_EQ(
        b.refusal(space::channel, "b").value_or(""),
        "NOPERM this user has no permissions to access one of the channels used as arguments");
    EXPECT_FALSE(b.refusal(space::pattern, "b"));
    (void)b.want(space::channel, {"b"});  // asked again: no longer refused
    EXPECT_FALSE(b.refusal(space::channel, "b"));

    b.dial_refused("handshake: NOPERM this user has no permissions to run the 'ping' command");
    EXPECT_TRUE(b.refused_any(space::pattern, {"x"}));
    EXPECT_TRUE(b.refusal(space::channel, "b"));
    (void)b.relink();
    EXPECT_FALSE(b.refusal(space::channel, "b"));
    EXPECT_FALSE(b.refused_any(space::channel, {"b"}));
}

TEST(AclNeeds, OnAClusterRoutingAndShardedPubSubAreAdded) {
    acl_needs plain;
    plain.allow_commands({"get"});
    plain.key_patterns = {"redcoord:queue:*"};
    const auto routed = cluster_acl_needs(plain);
    EXPECT_EQ(routed.commands,
              (std::vector<std::string>{"get", "cluster|shards", "cluster|slots", "asking"}));
    EXPECT_EQ(routed.key_patterns, plain.key_patterns);

    acl_needs pubsub = pubsub_acl_needs(true);
    pubsub.allow_commands({"publish", "pubsub|channels"});
    pubsub.channel_patterns = {"redcoord:unicast:*"};
    const auto sharded = cluster_acl_needs(pubsub);
    for (const char* c : {"subscribe", "psubscribe", "publish", "ssubscribe", "sunsubscribe",
                          "spublish", "pubsub|shardchannels", "cluster|shards", "asking"})
        EXPECT_NE(std::find(sharded.commands.begin(), sharded.commands.end(), c),
                  sharded.commands.end())
            << c;
    // Patterns have no sharded form; channels are the same patterns.
    EXPECT_EQ(std::count(sharded.commands.begin(), sharded.commands.end(), "spsubscribe"), 0);
    EXPECT_EQ(sharded.channel_patterns, pubsub.channel_patterns);
}
