#include "subscriber_refusal.hpp"

#include "subscriber_link.hpp"

#include <redcoord/core/errors.hpp>

namespace redcoord::detail {

void note_dial_refusal(subscriber_link& l, const permission_error& e) {
    lock_guard lk(l.mu);
    l.book.dial_refused(e.what());
    l.cv.notify_all();
}

}  // namespace redcoord::detail
