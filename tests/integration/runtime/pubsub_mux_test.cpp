// The runtime's shared pub/sub link on a real server: one connection for many listeners,
// SUBSCRIBE on the first listener of a channel and UNSUBSCRIBE on the last, fan-out of one
// message to every listener, and resubscription (with on_link) after the link drops.
#include <redcoord/core/detail/pubsub_mux.hpp>
#include <redcoord/core/runtime.hpp>
#include <redcoord/testing/local_server.hpp>
#include <redcoord/testing/wait.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

using namespace redcoord;
using namespace std::chrono_literals;
using redcoord::testing::eventually;
using redcoord::testing::local_server;
using clock_type = std::chrono::steady_clock;

namespace {
long long numsub(const local_server& srv, const std::string& ch) {
    auto r = srv.command({"PUBSUB", "NUMSUB", ch});
    return r.elements().at(1).integer();
}

long long pubsub_clients(const local_server& srv) {
    auto r = srv.command({"CLIENT", "LIST", "TYPE", "pubsub"});
    const auto& t = r.text();
    return std::count(t.begin(), t.end(), '\n');
}
}  // namespace

TEST(PubsubMux, ManyListenersShareOneConnectionAndOneSubscription) {
    local_server srv;
    auto rt = runtime::create();
    auto mux = rt->pubsub(srv.endpoint());
    EXPECT_EQ(rt->pubsub(srv.endpoint()), mux);  // equal endpoints share the link
    std::atomic<int> got{0};
    std::vector<detail::pubsub_mux::listener> ls;
    for (int i = 0; i < 50; ++i)
        ls.push_back(mux->listen("ch", {[&](const pubsub_message&) { ++got; }, {}}));
    for (int i = 0; i < 50; ++i)
        ls.push_back(mux->listen("other:" + std::to_string(i), {[](const pubsub_message&) {}, {}}));
    ASSERT_TRUE(ls.front().wait_confirmed(3s));
    ASSERT_TRUE(ls.back().wait_confirmed(3s));
    EXPECT_EQ(numsub(srv, "ch"), 1);
    EXPECT_EQ(pubsub_clients(srv), 1);
    EXPECT_EQ(rt->stats().pubsub_interests, 51u);
    srv.command({"PUBLISH", "ch", "x"});
    EXPECT_TRUE(eventually([&] { return got.load() == 50; }));
}

TEST(PubsubMux, TheLastListenerUnsubscribesAndANewFirstOneSubscribesAgain) {
    local_server srv;
    auto rt = runtime::create();
    auto mux = rt->pubsub(srv.endpoint());
    auto a = mux->listen("ch", {[](const pubsub_message&) {}, {}});
    auto b = mux->listen("ch", {[](const pubsub_message&) {}, {}});
    ASSERT_TRUE(a.wait_confirmed(3s));
    a.reset();
    std::this_thread::sleep_for(50ms);
    EXPECT_EQ(numsub(srv, "ch"), 1);  // b still listens
    b.reset();
    EXPECT_TRUE(eventually([&] { return numsub(srv, "ch") == 0; }));
    EXPECT_EQ(mux->interests(), 0u);
    std::atomic<int> got{0};
    auto c = mux->listen("ch", {[&](const pubsub_message&) { ++got; }, {}});
    ASSERT_TRUE(c.wait_confirmed(3s));
    srv.command({"PUBLISH", "ch", "x"});
    EXPECT_TRUE(eventually([&] { return got.load() == 1; }));
}

TEST(PubsubMux, NoHandlerRunsAfterItsListenerIsReset) {
    local_server srv;
    auto rt = runtime::create();
    auto mux = rt->pubsub(srv.endpoint());
    std::atomic<bool> gone{false};
    std::atomic<int> late{0}, got{0};
    auto l = mux->listen("ch", {[&](const pubsub_message&) {
                                    if (gone) ++late;
                                    ++got;
                                    std::this_thread::sleep_for(1ms);
                                },
                                {}});
    auto keep = mux->listen("ch", {[](const pubsub_message&) {}, {}});
    ASSERT_TRUE(l.wait_confirmed(3s));
    std::atomic<bool> stop{false};
    std::thread pub([&] {
        while (!stop) srv.command({"PUBLISH", "ch", "x"});
    });
    ASSERT_TRUE(eventually([&] { return got.load() > 5; }));
    l.reset();
    gone = true;
    std::this_thread::sleep_for(50ms);
    stop = true;
    pub.join();
    EXPECT_EQ(late.load(), 0);
}

TEST(PubsubMux, ResubscribesAfterTheLinkDropsAndTellsEveryListener) {
    local_server srv;
    auto rt = runtime::create();
    auto mux = rt->pubsub(srv.endpoint());
    std::atomic<int> ups{0}, downs{0}, got{0};
    auto l = mux->listen(
        "ch", {[&](const pubsub_message&) { ++got; }, [&](bool up) { ++(up ? ups : downs); }});
    ASSERT_TRUE(l.wait_confirmed(3s));
    ASSERT_TRUE(eventually([&] { return ups.load() >= 1; }));
    const int ups_before = ups.load();
    srv.command({"CLIENT", "KILL", "TYPE", "pubsub"});
    ASSERT_TRUE(eventually([&] { return downs.load() >= 1 && ups.load() > ups_before; }));
    ASSERT_TRUE(l.wait_confirmed(3s));
    srv.command({"PUBLISH", "ch", "x"});
    EXPECT_TRUE(eventually([&] { return got.load() == 1; }));
}

TEST(PubsubMux, PatternListenersGetMatchingChannels) {
    local_server srv;
    auto rt = runtime::create();
    auto mux = rt->pubsub(srv.endpoint());
    std::atomic<int> got{0};
    std::string channel;
    std::mutex mu;
    auto l = mux->listen_pattern("ev:*", {[&](const pubsub_message& m) {
                                              std::lock_guard g(mu);
                                              channel = m.channel;
                                              ++got;
                                          },
                                          {}});
    ASSERT_TRUE(l.wait_confirmed(3s));
    srv.command({"PUBLISH", "ev:1", "x"});
    srv.command({"PUBLISH", "nope", "x"});
    ASSERT_TRUE(eventually([&] { return got.load() == 1; }));
    std::lock_guard g(mu);
    EXPECT_EQ(channel, "ev:1");
}

TEST(PubsubMux, RejectsEmptyNamesAndMissingHandlers) {
    auto rt = runtime::create();
    endpoint ep;
    ep.port = 1;  // never dialled: the checks come first
    auto mux = rt->pubsub(ep);
    EXPECT_THROW((void)mux->listen("", {[](const pubsub_message&) {}, {}}), invalid_argument);
    EXPECT_THROW((void)mux->listen("ch", {}), invalid_argument);
}
