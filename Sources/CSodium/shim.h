// libsodium (Debian's libsodium-dev): authenticated encryption, sealed boxes, keyed hashing,
// key derivation and streaming encryption for PhotoLedger's end-to-end encryption.
#include <sodium.h>
