#ifndef PHOTOLEDGER_CVIPS_SHIM_H
#define PHOTOLEDGER_CVIPS_SHIM_H
// libvips, for the C shims that call it (its loaders and savers take variadic option lists,
// which Swift does not import): CMediaDecoding and the test-support CMediaEncoding.
#include <vips/vips.h>
#endif
