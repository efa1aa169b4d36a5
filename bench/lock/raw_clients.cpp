#include "raw_clients.hpp"

#include <poll.h>

#include <stdexcept>

namespace lock_bench {

redisContext* raw_connect(std::uint16_t port) {
    auto* c = redisConnect("127.0.0.1", port);
    if (!c || c->err) throw std::runtime_error("raw connect failed");
    return c;
}

std::string raw_load_release(redisContext* c) {
    auto* r = static_cast<redisReply*>(redisCommand(c, "SCRIPT LOAD %s", raw_release_lua));
    if (!r || r->type != REDIS_REPLY_STRING) throw std::runtime_error("SCRIPT LOAD failed");
    std::string sha(r->str, r->len);
    freeReplyObject(r);
    return sha;
}

bool raw_try(redisContext* c, const std::string& key, const std::string& token,
             const std::string& ttl_ms) {
    const char* argv[] = {"SET", key.c_str(), token.c_str(), "NX", "PX", ttl_ms.c_str()};
    const size_t lens[] = {3, key.size(), token.size(), 2, 2, ttl_ms.size()};
    auto* r = static_cast<redisReply*>(redisCommandArgv(c, 6, argv, lens));
    if (!r) throw std::runtime_error("raw SET failed");
    const bool ok = r->type == REDIS_REPLY_STATUS;
    freeReplyObject(r);
    return ok;
}

void raw_release(redisContext* c, const std::string& sha, const std::string& key,
                 const std::string& token) {
    const char* argv[] = {"EVALSHA", sha.c_str(), "1", key.c_str(), token.c_str()};
    const size_t lens[] = {7, sha.size(), 1, key.size(), token.size()};
    auto* r = static_cast<redisReply*>(redisCommandArgv(c, 5, argv, lens));
    if (!r) throw std::runtime_error("raw EVALSHA failed");
    freeReplyObject(r);
}

raw_quorum::raw_quorum(const std::vector<std::uint16_t>& ports) {
    for (auto p : ports) cs_.push_back(raw_connect(p));
    stale_.assign(cs_.size(), 0);
}

raw_quorum::~raw_quorum() {
    for (auto* c : cs_) redisFree(c);
}

std::size_t raw_quorum::round(const std::vector<std::string>& argv, std::size_t quorum) {
    std::vector<const char*> a;
    std::vector<size_t> l;
    for (auto& s : argv) {
        a.push_back(s.c_str());
        l.push_back(s.size());
    }
    std::vector<bool> waiting(cs_.size(), true);
    for (auto* c : cs_) {
        redisAppendCommandArgv(c, static_cast<int>(a.size()), a.data(), l.data());
        int done = 0;
        while (!done)
            if (redisBufferWrite(c, &done) != REDIS_OK)
                throw std::runtime_error("raw write failed");
    }
    std::size_t answered = 0, yes = 0;
    std::vector<pollfd> fds(cs_.size());
    while (yes < quorum && answered - yes <= cs_.size() - quorum) {
        for (std::size_t i = 0; i < cs_.size(); ++i) fds[i] = {cs_[i]->fd, POLLIN, 0};
        ::poll(fds.data(), fds.size(), 1000);
        for (std::size_t i = 0; i < cs_.size(); ++i) {
            if (!fds[i].revents) continue;
            if (redisBufferRead(cs_[i]) != REDIS_OK) throw std::runtime_error("raw read failed");
            void* r = nullptr;
            while (redisGetReplyFromReader(cs_[i], &r) == REDIS_OK && r) {
                auto* rr = static_cast<redisReply*>(r);
                if (stale_[i] > 0) {
                    --stale_[i];
                } else if (waiting[i]) {
                    waiting[i] = false;
                    ++answered;
                    if (rr->type == REDIS_REPLY_STATUS ||
                        (rr->type == REDIS_REPLY_INTEGER && rr->integer == 1))
                        ++yes;
                }
                freeReplyObject(rr);
            }
        }
    }
    for (std::size_t i = 0; i < cs_.size(); ++i)
        if (waiting[i]) ++stale_[i];
    return yes;
}

}  // namespace lock_bench
