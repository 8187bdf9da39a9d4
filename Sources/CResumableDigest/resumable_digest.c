// OpenSSL 3 marks the low-level SHA-256 calls deprecated in favour of EVP, whose state cannot
// be exported; they remain the same implementation (with the CPU's SHA instructions).
#define OPENSSL_SUPPRESS_DEPRECATED 1

#include "resumable_digest.h"

#include <openssl/sha.h>
#include <string.h>

size_t pl_resumable_sha256_state_size(void) { return sizeof(SHA256_CTX); }

void pl_resumable_sha256_init(void *state) { SHA256_Init((SHA256_CTX *)state); }

void pl_resumable_sha256_update(void *state, const void *bytes, size_t count) {
    if (count > 0) SHA256_Update((SHA256_CTX *)state, bytes, count);
}

void pl_resumable_sha256_peek(const void *state, unsigned char *digest) {
    SHA256_CTX copy;
    memcpy(&copy, state, sizeof copy);
    SHA256_Final(digest, &copy);
}

int pl_resumable_sha256_is_plausible(const void *state, unsigned long long length) {
    const SHA256_CTX *context = (const SHA256_CTX *)state;
    unsigned long long bits = ((unsigned long long)context->Nh << 32) | context->Nl;
    return bits == length * 8 && context->num < SHA256_CBLOCK && context->md_len == SHA256_DIGEST_LENGTH;
}
