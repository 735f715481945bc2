#ifndef RECORDKEEPER_CCRYPTO_SHIM_H
#define RECORDKEEPER_CCRYPTO_SHIM_H

// OpenSSL's libcrypto, for the relay's token signatures (HMAC-SHA256 and ECDSA P-256)
// (Debian: libssl-dev; pkg-config: libcrypto; Homebrew: openssl@3). Server-side only:
// RecordKeeperRelay imports this module; the RecordKeeper library never links it.
// Linux and macOS only.
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/objects.h>
#include <openssl/pem.h>

/// OPENSSL_free is a macro, which Swift does not import.
static inline void recordkeeper_openssl_free(void *pointer) { OPENSSL_free(pointer); }

#endif
