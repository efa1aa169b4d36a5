#pragma once
// The dashboard's page, script and style sheet, compiled into the library (no CDN: the page
// works offline and loads nothing from elsewhere).

#include <chrono>
#include <string>
#include <string_view>

namespace redcoord::detail {

// The HTML page; the script refreshes every `refresh`. A non-empty `csrf` (hex: needs no
// escaping) turns the action buttons on; the script sends it back with each action.
[[nodiscard]] std::string dashboard_html(std::chrono::milliseconds refresh,
                                         std::string_view csrf = {});
[[nodiscard]] std::string_view dashboard_js();
[[nodiscard]] std::string_view dashboard_css();

}  // namespace redcoord::detail
