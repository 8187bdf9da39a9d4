#ifndef PHOTOLEDGER_CFUZZING_H
#define PHOTOLEDGER_CFUZZING_H

#include <stddef.h>
#include <stdint.h>

/// libFuzzer's driver (in the fuzzer runtime that `-sanitize=fuzzer` links): parses the
/// command line as libFuzzer's own main does and fuzzes `callback`. The fuzz targets call it
/// from their Swift entry point, because SwiftPM gives an executable's `main` to its Swift
/// module.
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));

#endif
