#pragma once
// What a subscriber link does when its connect's handshake is refused for lack of ACL
// permissions (PING, SELECT): its waiters learn it at once instead of waiting for a link
// that no retry will bring up.

namespace redcoord {
class permission_error;
}

namespace redcoord::detail {

class subscriber_link;

/// Records the refusal on `l` (wanted names count as refused until the next link) and wakes
/// the threads waiting for a confirmation. Takes `l`'s mutex.
void note_dial_refusal(subscriber_link& l, const permission_error& e);

}  // namespace redcoord::detail
