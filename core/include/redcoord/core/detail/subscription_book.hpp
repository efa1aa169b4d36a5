#pragma once
/// @file
/// The subscriber's bookkeeping of what it asked the server for and what the server
/// confirmed or refused on the current link. Internal to core (public only so that it can be
/// tested without a server); not a stable API.

#include <redcoord/core/export.hpp>

#include <cstddef>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

REDCOORD_API_BEGIN
namespace redcoord::detail {

/// Channels or patterns of one subscriber link: which are wanted, which the server has
/// confirmed, which it refused, and the commands still awaiting their replies.
///
/// Confirmations are counted per outstanding SUBSCRIBE command, not by name: after
/// SUBSCRIBE x, UNSUBSCRIBE x, SUBSCRIBE x, the first confirmation does not make x confirmed,
/// because the server has yet to process the other two (a publish in between would be missed
/// after the caller was told "confirmed"). Replies are matched to commands in order, which is
/// how Redis answers them, so an error reply is charged to the command it answers.
///
/// Thread-safety: none; the subscriber guards it with its mutex.
class subscription_book {
public:
    /// With `sharded`, the channel space is subscribed with SSUBSCRIBE/SUNSUBSCRIBE (sharded
    /// pub/sub), and a `sunsubscribe` the server sends unasked for a wanted channel (its
    /// slot moved away) refuses that channel.
    explicit subscription_book(bool sharded = false) noexcept : sharded_(sharded) {}
    /// The verb that subscribes the channel space: SUBSCRIBE, or SSUBSCRIBE when sharded.
    [[nodiscard]] const char* channel_subscribe() const noexcept {
        return sharded_ ? "SSUBSCRIBE" : "SUBSCRIBE";
    }
    /// The verb that unsubscribes it: UNSUBSCRIBE, or SUNSUBSCRIBE when sharded.
    [[nodiscard]] const char* channel_unsubscribe() const noexcept {
        return sharded_ ? "SUNSUBSCRIBE" : "UNSUBSCRIBE";
    }

    /// Which namespace a command or reply is about.
    enum class space {
        channel,
        pattern
    };

    /// Adds names to the wanted set (clearing an earlier refusal of them); returns those
    /// that were not wanted yet, which the caller must send.
    std::vector<std::string> want(space s, const std::vector<std::string>& names);
    /// Removes names from the wanted and confirmed sets; returns those that were wanted.
    std::vector<std::string> unwant(space s, const std::vector<std::string>& names);
    /// Records that `verb` (SUBSCRIBE, PSUBSCRIBE, UNSUBSCRIBE, PUNSUBSCRIBE or PING) with
    /// `names` was queued for the server, and returns the command to send.
    std::vector<std::string> sent(const std::string& verb, const std::vector<std::string>& names);
    /// A new link: nothing is confirmed or outstanding; returns the commands that subscribe
    /// every wanted name again (already recorded as sent).
    std::vector<std::vector<std::string>> relink();
    /// A confirmation push (`subscribe`, `psubscribe`, `unsubscribe`, `punsubscribe`, and the
    /// sharded `ssubscribe`, `sunsubscribe`) for `name`. Returns true when it refused `name`
    /// (sharded: the server dropped a wanted channel by itself, its slot having moved).
    bool confirmed(const std::string& kind, const std::string& name);
    /// A PING's reply.
    void ponged();
    /// An error reply: charged to the oldest outstanding command. A refused (P)SUBSCRIBE's
    /// names stop being wanted and are marked refused. Returns the refused names.
    std::vector<std::string> error(const std::string& text);

    /// True when every wanted name of both spaces is confirmed.
    [[nodiscard]] bool all_confirmed() const noexcept;
    /// True when every one of `names` is wanted and confirmed in `s`.
    [[nodiscard]] bool confirmed_all(space s, const std::vector<std::string>& names) const;
    /// True when one of `names` was refused since it was last wanted.
    [[nodiscard]] bool refused_any(space s, const std::vector<std::string>& names) const;
    /// The last connect's handshake was refused for lack of ACL permissions (`text`: the
    /// error's message): every wanted name counts as refused until the next link (relink()).
    void dial_refused(std::string text);
    /// The server's error text for `name`'s refusal in `s` (e.g. `NOPERM ...`), when it was
    /// refused since it was last wanted, or the handshake refusal of dial_refused() while no
    /// link is up; nullopt otherwise.
    [[nodiscard]] std::optional<std::string> refusal(space s, const std::string& name) const;
    /// The text of the last error reply, empty when none.
    [[nodiscard]] const std::string& last_error() const noexcept { return last_error_; }

private:
    struct names {
        // Wanted names, each with whether the server confirmed it (since the last relink):
        // one node per name, as a link may carry 10,000 waiters' channels.
        std::map<std::string, bool> wanted;
        std::size_t confirmed = 0;  // wanted names confirmed
        void unconfirm(std::map<std::string, bool>::iterator it) noexcept {
            if (std::exchange(it->second, false)) --confirmed;
        }
        bool drop(const std::string& name) {  // no longer wanted; false when it was not
            auto it = wanted.find(name);
            if (it == wanted.end()) return false;
            unconfirm(it);
            wanted.erase(it);
            return true;
        }
        std::map<std::string, std::string> refused;  // name -> the server's error text
        std::map<std::string, std::size_t> pending;  // SUBSCRIBEs sent, not yet confirmed
    };
    struct command {
        std::string verb;
        std::vector<std::string> names;
        std::size_t answered = 0;
    };
    names& of(space s) noexcept { return s == space::channel ? channels_ : patterns_; }
    const names& of(space s) const noexcept { return s == space::channel ? channels_ : patterns_; }
    void settle_subscribe(names& n, const std::string& name);

    bool sharded_ = false;
    names channels_, patterns_;
    std::deque<command> outstanding_;
    std::string last_error_;
    std::string dial_error_;  // dial_refused() since the last relink()
};

}  // namespace redcoord::detail

REDCOORD_API_END
