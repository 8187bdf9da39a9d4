#ifndef PHOTOLEDGER_CCRYPTO_SHIM_H
#define PHOTOLEDGER_CCRYPTO_SHIM_H
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>
#endif
