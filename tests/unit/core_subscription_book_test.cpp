// The subscriber's confirmation bookkeeping (review findings C3 and C4), without a server.
#include <redcoord/core/detail/subscription_book.hpp>

#include <gtest/gtest.h>

using redcoord::detail::subscription_book;
using space = subscription_book::space;

namespace {
// Queues the commands a subscribe()/unsubscribe() call would send, as the reader does.
void subscribe(subscription_book& b, const std::string& name) {
    for (const auto& n : b.want(space::channel, {name})) (void)b.sent("SUBSCRIBE", {n});
}
void unsubscribe(subscription_book& b, const std::string& name) {
    for (const auto& n : b.unwant(space::channel, {name})) (void)b.sent("UNSUBSCRIBE", {n});
}
}  // namespace

// C4: SUBSCRIBE x, UNSUBSCRIBE x, SUBSCRIBE x are all on their way. The first command's
// confirmation must not confirm the second SUBSCRIBE: the server has yet to unsubscribe and
// subscribe again, and a publish in between would be missed.
TEST(SubscriptionBook, C4_ConfirmationsCountPerSubscribeCommandNotPerName) {
    subscription_book b;
    (void)b.relink();
    subscribe(b, "x");
    unsubscribe(b, "x");
    subscribe(b, "x");
    b.confirmed("subscribe", "x");
    EXPECT_FALSE(b.confirmed_all(space::channel, {"x"}));
    b.confirmed("unsubscribe", "x");
    EXPECT_FALSE(b.confirmed_all(space::channel, {"x"}));
    b.confirmed("subscribe", "x");
    EXPECT_TRUE(b.confirmed_all(space::channel, {"x"}));
    EXPECT_TRUE(b.all_confirmed());
}

TEST(SubscriptionBook, C4_LateConfirmationOfAnUnwantedNameDoesNotCount) {
    subscription_book b;
    (void)b.relink();
    subscribe(b, "x");
    unsubscribe(b, "x");
    b.confirmed("subscribe", "x");
    b.confirmed("unsubscribe", "x");
    EXPECT_FALSE(b.confirmed_all(space::channel, {"x"}));
    EXPECT_TRUE(b.all_confirmed());  // nothing is wanted
}

// C3: an error reply is charged to the command it answers (replies come in order), its names
// are refused and no longer wanted, and the text is kept.
TEST(SubscriptionBook, C3_ErrorReplyRefusesTheCommandItAnswers) {
    subscription_book b;
    (void)b.relink();
    subscribe(b, "ok");
    (void)b.want(space::channel, {"no1", "no2"});
    (void)b.sent("SUBSCRIBE", {"no1", "no2"});
    subscribe(b, "ok2");
    b.confirmed("subscribe", "ok");
    const auto refused =
        b.error("NOPERM this user has no permissions to access one of the channels");
    EXPECT_EQ(refused, (std::vector<std::string>{"no1", "no2"}));
    EXPECT_TRUE(b.refused_any(space::channel, {"no2"}));
    EXPECT_FALSE(b.refused_any(space::channel, {"ok2"}));
    b.confirmed("subscribe", "ok2");
    EXPECT_TRUE(b.all_confirmed());
    EXPECT_EQ(b.last_error().rfind("NOPERM", 0), 0u);
    // Wanting it again clears the refusal, and a new link asks for it again.
    (void)b.want(space::channel, {"no1"});
    EXPECT_FALSE(b.refused_any(space::channel, {"no1"}));
    const auto again = b.relink();
    ASSERT_EQ(again.size(), 1u);
    EXPECT_EQ(again[0], (std::vector<std::string>{"SUBSCRIBE", "no1", "ok", "ok2"}));
}

// A health PING's reply between subscriptions keeps the order of the rest.
TEST(SubscriptionBook, C3_PingRepliesKeepErrorsChargedToTheRightCommand) {
    subscription_book b;
    (void)b.relink();
    (void)b.sent("PING", {});
    subscribe(b, "no");
    b.ponged();
    EXPECT_EQ(b.error("NOPERM"), (std::vector<std::string>{"no"}));
}

// Sharded pub/sub (issue 19): the channel space speaks SSUBSCRIBE / SUNSUBSCRIBE.
TEST(SubscriptionBook, ShardedBookSubscribesWithSsubscribe) {
    subscription_book b(true);
    EXPECT_STREQ(b.channel_subscribe(), "SSUBSCRIBE");
    EXPECT_STREQ(b.channel_unsubscribe(), "SUNSUBSCRIBE");
    EXPECT_STREQ(subscription_book().channel_subscribe(), "SUBSCRIBE");
    (void)b.want(space::channel, {"{a}x", "{a}y"});
    const auto cmds = b.relink();
    ASSERT_EQ(cmds.size(), 1u);
    EXPECT_EQ(cmds[0], (std::vector<std::string>{"SSUBSCRIBE", "{a}x", "{a}y"}));
    b.confirmed("ssubscribe", "{a}x");
    EXPECT_FALSE(b.all_confirmed());
    b.confirmed("ssubscribe", "{a}y");
    EXPECT_TRUE(b.all_confirmed());
}

// The node sends sunsubscribe by itself when the channel's slot moves away: a channel still
// wanted is refused (subscribing there again would get MOVED), its waiters learn why.
TEST(SubscriptionBook, ShardChannelDroppedByTheServerIsRefused) {
    subscription_book b(true);
    (void)b.want(space::channel, {"c"});
    (void)b.relink();
    EXPECT_FALSE(b.confirmed("ssubscribe", "c"));
    ASSERT_TRUE(b.all_confirmed());
    EXPECT_TRUE(b.confirmed("sunsubscribe", "c"));  // nothing of ours asked for it: refused
    EXPECT_TRUE(b.refused_any(space::channel, {"c"}));
    ASSERT_TRUE(b.refusal(space::channel, "c"));
    EXPECT_NE(b.refusal(space::channel, "c")->find("another node"), std::string::npos);
    EXPECT_TRUE(b.relink().empty());  // no longer wanted: not subscribed again
}

TEST(SubscriptionBook, RequestedSunsubscribeIsNoRefusal) {
    subscription_book b(true);
    (void)b.want(space::channel, {"c"});
    (void)b.relink();
    b.confirmed("ssubscribe", "c");
    for (const auto& n : b.unwant(space::channel, {"c"})) (void)b.sent("SUNSUBSCRIBE", {n});
    b.confirmed("sunsubscribe", "c");
    EXPECT_FALSE(b.refused_any(space::channel, {"c"}));
    EXPECT_TRUE(b.all_confirmed());
}

// A plain book keeps its behaviour: a server-sent unsubscribe (CLIENT KILL is the usual
// cause) only unconfirms.
TEST(SubscriptionBook, PlainBookDoesNotRefuseAnUnaskedUnsubscribe) {
    subscription_book b;
    (void)b.want(space::channel, {"c"});
    (void)b.relink();
    b.confirmed("subscribe", "c");
    b.confirmed("unsubscribe", "c");
    EXPECT_FALSE(b.refused_any(space::channel, {"c"}));
    EXPECT_FALSE(b.all_confirmed());
}
