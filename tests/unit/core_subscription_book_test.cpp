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
