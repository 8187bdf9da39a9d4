#ifndef PHOTOLEDGER_CZLIB_SHIM_H
#define PHOTOLEDGER_CZLIB_SHIM_H
#include <zlib.h>
#endif
