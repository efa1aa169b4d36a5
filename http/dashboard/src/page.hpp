#pragma once
// The dashboard's page, script and style sheet, compiled into the library (no CDN: the page
// works offline and loads nothing from elsewhere).

#include <chrono>
#include <string>
#include <string_view>

namespace redcoord::detail {

// The HTML page; the script refreshes every `refresh`.
[[nodiscard]] std::string dashboard_html(std::chrono::milliseconds refresh);
[[nodiscard]] std::string_view dashboard_js();
[[nodiscard]] std::string_view dashboard_css();

}  // namespace redcoord::detail
