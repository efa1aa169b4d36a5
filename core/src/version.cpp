#include <redcoord/version.hpp>

namespace redcoord {

// Compiled from the generated header, so the library carries the number it was built with.
const char* version() noexcept { return REDCOORD_VERSION_STRING; }

}  // namespace redcoord
