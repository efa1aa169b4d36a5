#include "openssl_init.hpp"

#include <openssl/ssl.h>

namespace redcoord::detail {

void init_openssl() noexcept {
    static const bool done = [] {
        OPENSSL_init_ssl(OPENSSL_INIT_NO_ATEXIT | OPENSSL_INIT_LOAD_SSL_STRINGS |
                             OPENSSL_INIT_LOAD_CRYPTO_STRINGS,
                         nullptr);
        return true;
    }();
    (void)done;
}

}  // namespace redcoord::detail
