#pragma once
// Private to core: OpenSSL's one initialisation for the process.

namespace redcoord::detail {

// Initialises OpenSSL once, without its exit-time clean-up: the runtime's shared threads may
// still read a TLS link or hash a script while the process exits, and OpenSSL's atexit
// handler would free what they use. Called before any use of OpenSSL (the first
// initialisation decides whether that handler is registered).
void init_openssl() noexcept;

}  // namespace redcoord::detail
