#ifndef PHOTOLEDGER_CZSTD_SHIM_H
#define PHOTOLEDGER_CZSTD_SHIM_H
#include <zstd.h>
#endif
