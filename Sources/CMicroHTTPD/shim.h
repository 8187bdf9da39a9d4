#ifndef PHOTOLEDGER_CMICROHTTPD_SHIM_H
#define PHOTOLEDGER_CMICROHTTPD_SHIM_H
#include <microhttpd.h>
#endif
