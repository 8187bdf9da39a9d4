#ifndef PHOTOLEDGER_CCURL_SHIM_H
#define PHOTOLEDGER_CCURL_SHIM_H
#include <curl/curl.h>
#endif
