#ifndef PHOTOLEDGER_CEXIFRECOVERY_H
#define PHOTOLEDGER_CEXIFRECOVERY_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Re-encodes EXIF that libexif cannot read whole (its reader stops at 64 KB, so the IFDs of a
/// larger block, as HEIC, PNG and WebP files may hold, are lost) into a compact block that it can:
/// libexiv2 decodes the TIFF structure `tiff` (starting with `II*` or `MM*`), the MakerNote and
/// the thumbnail are dropped, and the rest is written again. Returns 0 with the new TIFF bytes in
/// `*result` (free them with `photoledger_exif_recovered_free`), or -1 when libexiv2 cannot read
/// the block either. Never throws and writes nothing to the standard error.
int photoledger_exif_recover(const unsigned char *tiff, size_t length, unsigned char **result, size_t *result_length);

/// Frees bytes returned by `photoledger_exif_recover`.
void photoledger_exif_recovered_free(unsigned char *bytes);

/// Reads an XMP packet (`length` bytes of XML, as a photo's `xmp-data` holds it) with libexiv2's
/// XMP parser and lists its properties as UTF-8 text, one a line: the libexiv2 key
/// (`Xmp.GPano.ProjectionType`, a namespace it does not know named by the packet's own prefix),
/// a tab, the value (a language alternative gives its `x-default` text; tabs and line breaks in
/// values become spaces). Returns 0 with the NUL-terminated text in `*result` (free it with
/// `photoledger_xmp_properties_free`), or -1 when the packet does not parse. Safe to call from
/// several threads at once; never throws and writes nothing to the standard error.
int photoledger_xmp_properties(const char *packet, size_t length, char **result);

/// Frees text returned by `photoledger_xmp_properties`.
void photoledger_xmp_properties_free(char *text);

#ifdef __cplusplus
}
#endif

#endif
