#include "job_queue_keys.hpp"

#include <redcoord/core/errors.hpp>
#include <redcoord/jobs/job_events.hpp>

#include <array>

namespace redcoord {

namespace {
constexpr std::array<std::string_view, 4> kinds{"completed", "failed", "stalled", "progress"};
}  // namespace

job_events::job_events(job_queue& queue, signal_hub& hub)
    : hub_(hub), channel_(detail::make_job_keys(queue.options().prefix, queue.name()).events) {}

boost::signals2::scoped_connection job_events::on(std::function<void(const job_event&)> slot) {
    if (!slot) throw invalid_argument("job_events::on needs a slot");
    return hub_.on(channel_, [slot = std::move(slot)](const signal& s) {
        if (auto e = decode(s.payload)) slot(*e);
    });
}

std::string job_events::encode(job_event_kind kind, std::string_view id, std::string_view data) {
    std::string out(kinds.at(static_cast<std::size_t>(kind)));
    out.append("\n").append(id).append("\n").append(data);
    return out;
}

std::optional<job_event> job_events::decode(std::string_view payload) {
    const auto a = payload.find('\n');
    if (a == std::string_view::npos) return std::nullopt;
    const auto b = payload.find('\n', a + 1);
    if (b == std::string_view::npos) return std::nullopt;
    const auto kind = payload.substr(0, a);
    for (std::size_t i = 0; i < kinds.size(); ++i)
        if (kinds[i] == kind)
            return job_event{static_cast<job_event_kind>(i),
                             std::string(payload.substr(a + 1, b - a - 1)),
                             std::string(payload.substr(b + 1))};
    return std::nullopt;
}

}  // namespace redcoord
