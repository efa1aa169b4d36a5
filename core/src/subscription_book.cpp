#include <redcoord/core/detail/subscription_book.hpp>

namespace redcoord::detail {
namespace {

bool is_subscribe(const std::string& verb) {
    return verb == "SUBSCRIBE" || verb == "PSUBSCRIBE" || verb == "SSUBSCRIBE";
}
bool is_pattern(const std::string& verb) { return verb == "PSUBSCRIBE" || verb == "PUNSUBSCRIBE"; }
// The verb a confirmation push answers: "psubscribe" answers PSUBSCRIBE, and so on.
bool answers(const std::string& kind, const std::string& verb) {
    if (kind.size() != verb.size()) return false;
    for (std::size_t i = 0; i < kind.size(); ++i)
        if (kind[i] != static_cast<char>(verb[i] - 'A' + 'a')) return false;
    return true;
}

}  // namespace

std::vector<std::string> subscription_book::want(space s, const std::vector<std::string>& names) {
    auto& n = of(s);
    std::vector<std::string> fresh;
    for (const auto& name : names) {
        n.refused.erase(name);
        if (n.wanted.emplace(name, false).second) fresh.push_back(name);
    }
    return fresh;
}

std::vector<std::string> subscription_book::unwant(space s, const std::vector<std::string>& names) {
    auto& n = of(s);
    std::vector<std::string> gone;
    for (const auto& name : names)
        if (n.drop(name)) gone.push_back(name);
    return gone;
}

std::vector<std::string> subscription_book::sent(const std::string& verb,
                                                 const std::vector<std::string>& names) {
    if (is_subscribe(verb)) {
        auto& n = of(is_pattern(verb) ? space::pattern : space::channel);
        for (const auto& name : names) ++n.pending[name];
    }
    outstanding_.push_back(command{verb, names});
    std::vector<std::string> cmd{verb};
    cmd.insert(cmd.end(), names.begin(), names.end());
    return cmd;
}

void subscription_book::dial_refused(std::string text) {
    last_error_ = text;
    dial_error_ = std::move(text);
}

std::vector<std::vector<std::string>> subscription_book::relink() {
    outstanding_.clear();
    dial_error_.clear();
    std::vector<std::vector<std::string>> cmds;
    for (auto s : {space::channel, space::pattern}) {
        auto& n = of(s);
        for (auto& [name, confirmed] : n.wanted) confirmed = false;
        n.confirmed = 0;
        n.pending.clear();
        if (n.wanted.empty()) continue;
        std::vector<std::string> all;
        all.reserve(n.wanted.size());
        for (const auto& [name, confirmed] : n.wanted) all.push_back(name);
        cmds.push_back(sent(s == space::channel ? channel_subscribe() : "PSUBSCRIBE", all));
    }
    return cmds;
}

void subscription_book::settle_subscribe(names& n, const std::string& name) {
    auto it = n.pending.find(name);
    if (it != n.pending.end() && --it->second > 0) return;  // a later SUBSCRIBE is still on its way
    if (it != n.pending.end()) n.pending.erase(it);
    // A late confirmation for something unsubscribed since must not count.
    auto w = n.wanted.find(name);
    if (w != n.wanted.end() && !std::exchange(w->second, true)) ++n.confirmed;
}

bool subscription_book::confirmed(const std::string& kind, const std::string& name) {
    bool asked = false;  // the push answers a command of ours, not the server's own doing
    if (!outstanding_.empty()) {
        auto& c = outstanding_.front();
        if (answers(kind, c.verb) && c.answered < c.names.size() && c.names[c.answered] == name) {
            asked = true;
            if (++c.answered == c.names.size()) outstanding_.pop_front();
        }
    }
    const bool pattern = kind == "psubscribe" || kind == "punsubscribe";
    auto& n = of(pattern ? space::pattern : space::channel);
    if (kind == "subscribe" || kind == "psubscribe" || kind == "ssubscribe") {
        settle_subscribe(n, name);
    } else if (!n.pending.count(name)) {
        if (auto w = n.wanted.find(name); w != n.wanted.end()) n.unconfirm(w);
        // Sharded: the node dropped a channel we still want because its slot is served
        // elsewhere now. Subscribing again here would be refused (MOVED): refuse it now.
        if (sharded_ && kind == "sunsubscribe" && !asked && n.drop(name)) {
            last_error_ =
                "the server dropped shard channel subscription (its hash slot is "
                "served by another node now)";
            n.refused[name] = last_error_;
            return true;
        }
    }
    return false;
}

void subscription_book::ponged() {
    if (!outstanding_.empty() && outstanding_.front().verb == "PING") outstanding_.pop_front();
}

std::vector<std::string> subscription_book::error(const std::string& text) {
    last_error_ = text;
    if (outstanding_.empty()) return {};
    command c = std::move(outstanding_.front());
    outstanding_.pop_front();
    if (!is_subscribe(c.verb)) return {};
    // Redis checks a whole (P)SUBSCRIBE before subscribing to any of it: none took effect.
    auto& n = of(is_pattern(c.verb) ? space::pattern : space::channel);
    std::vector<std::string> refused;
    for (std::size_t i = c.answered; i < c.names.size(); ++i) {
        const auto& name = c.names[i];
        auto it = n.pending.find(name);
        if (it != n.pending.end() && --it->second == 0) n.pending.erase(it);
        if (n.drop(name)) {
            n.refused[name] = text;
            refused.push_back(name);
        }
    }
    return refused;
}

std::optional<std::string> subscription_book::refusal(space s, const std::string& name) const {
    const auto& n = of(s);
    if (auto it = n.refused.find(name); it != n.refused.end()) return it->second;
    if (!dial_error_.empty()) return dial_error_;
    return std::nullopt;
}

bool subscription_book::all_confirmed() const noexcept {
    return channels_.confirmed >= channels_.wanted.size() &&
           patterns_.confirmed >= patterns_.wanted.size();
}

bool subscription_book::confirmed_all(space s, const std::vector<std::string>& names) const {
    const auto& n = of(s);
    for (const auto& name : names) {
        const auto it = n.wanted.find(name);
        if (it == n.wanted.end() || !it->second) return false;
    }
    return true;
}

bool subscription_book::refused_any(space s, const std::vector<std::string>& names) const {
    if (!dial_error_.empty()) return true;
    const auto& n = of(s);
    for (const auto& name : names)
        if (n.refused.count(name)) return true;
    return false;
}

}  // namespace redcoord::detail
