#ifndef PHOTOLEDGER_RESUMABLE_DIGEST_H
#define PHOTOLEDGER_RESUMABLE_DIGEST_H

#include <stddef.h>

/// A SHA-256 whose whole state is a plain block of bytes: it can be copied, stored and
/// continued later, in this process or another one of the same build, which a digest behind
/// OpenSSL's EVP interface cannot.

/// The size of a state, in bytes.
size_t pl_resumable_sha256_state_size(void);
/// Starts a digest in `state` (pl_resumable_sha256_state_size() bytes).
void pl_resumable_sha256_init(void *state);
/// Adds `count` bytes.
void pl_resumable_sha256_update(void *state, const void *bytes, size_t count);
/// Writes the 32-byte digest of a copy of the state (the state itself may go on).
void pl_resumable_sha256_peek(const void *state, unsigned char *digest);
/// Whether `state` (of pl_resumable_sha256_state_size() bytes) is one this build made after
/// `length` bytes: a check of stored states before they are continued.
int pl_resumable_sha256_is_plausible(const void *state, unsigned long long length);

#endif
