#include <redcoord/core/connection.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/testing/local_server.hpp>

#include <gtest/gtest.h>

#include <cstdlib>
#include <signal.h>

using namespace redcoord;
using namespace std::chrono_literals;
using redcoord::testing::local_server;

TEST(LocalServer, StartsKillsAndRestartsOnTheSamePort) {
    local_server srv;
    auto port = srv.port();
    EXPECT_TRUE(srv.command({"PING"}).is_status("PONG"));
    EXPECT_EQ(::kill(srv.pid(), 0), 0);
    auto old = srv.pid();
    srv.kill();
    EXPECT_FALSE(srv.running());
    EXPECT_NE(::kill(old, 0), 0);
    EXPECT_THROW(srv.command({"PING"}), connection_error);
    srv.restart();
    EXPECT_EQ(srv.port(), port);
    EXPECT_TRUE(srv.command({"PING"}).is_status("PONG"));
}

TEST(LocalServer, AofSurvivesRestart) {
    redcoord::testing::server_options o;
    o.appendonly = true;
    o.appendfsync = "always";
    local_server srv(o);
    srv.command({"SET", "k", "v"});
    srv.restart();
    EXPECT_EQ(srv.command({"GET", "k"}).text(), "v");
}

TEST(LocalServer, PauseAndResume) {
    local_server srv;
    srv.pause();
    auto e = srv.endpoint();
    e.connect_timeout = 100ms;
    EXPECT_THROW(connection{e}, timeout_error);
    srv.resume();
    EXPECT_NO_THROW(connection{e});
}

TEST(LocalServer, ReplicaFollowsAndCanBePromoted) {
    local_server master;
    auto replica = local_server::replica_of(master);
    master.command({"SET", "k", "v"});
    master.command({"WAIT", "1", "1000"});
    EXPECT_EQ(replica->command({"GET", "k"}).text(), "v");
    EXPECT_THROW(replica->command({"SET", "x", "y"}), reply_error);
    master.kill();
    replica->promote();
    EXPECT_TRUE(replica->command({"SET", "x", "y"}).is_status("OK"));
}

TEST(LocalServer, ProcessesDieWithTheObject) {
    pid_t pid;
    std::filesystem::path dir;
    {
        local_server srv;
        pid = srv.pid();
        dir = srv.dir();
    }
    EXPECT_NE(::kill(pid, 0), 0);
    EXPECT_FALSE(std::filesystem::exists(dir));
}

TEST(LocalServer, SaysClearlyWhenRedisServerIsMissing) {
    ::setenv("REDCOORD_REDIS_SERVER", "/nonexistent/redis-server", 1);
    try {
        local_server srv;
        FAIL();
    } catch (const error& e) {
        EXPECT_NE(std::string(e.what()).find("REDCOORD_REDIS_SERVER"), std::string::npos);
    }
    ::unsetenv("REDCOORD_REDIS_SERVER");
}
