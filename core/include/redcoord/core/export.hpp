#pragma once
/// @file
/// Which symbols the shared libraries export. The parts are compiled with hidden visibility
/// (-fvisibility=hidden, -fvisibility-inlines-hidden: CMake's CXX_VISIBILITY_PRESET and
/// VISIBILITY_INLINES_HIDDEN), and every installed header wraps its declarations in
/// REDCOORD_API_BEGIN / REDCOORD_API_END, so exactly what the installed headers declare is
/// exported; what only src/ declares stays internal to its library. A whole-header push
/// rather than a macro on each class and function: nothing a header declares can be left
/// out by mistake, and a new header needs the two lines only. For static libraries the
/// markers change nothing.

#if defined(__GNUC__) || defined(__clang__)
/// Opens the exported region of an installed header (GCC/Clang visibility push).
#define REDCOORD_API_BEGIN _Pragma("GCC visibility push(default)")
/// Closes the region REDCOORD_API_BEGIN opened.
#define REDCOORD_API_END _Pragma("GCC visibility pop")
#else
#define REDCOORD_API_BEGIN
#define REDCOORD_API_END
#endif
