#ifndef PHOTOLEDGER_CEXIF_SHIM_H
#define PHOTOLEDGER_CEXIF_SHIM_H
#include <libexif/exif-data.h>
#endif
