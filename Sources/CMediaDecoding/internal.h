#ifndef PHOTOLEDGER_CMEDIADECODING_INTERNAL_H
#define PHOTOLEDGER_CMEDIADECODING_INTERNAL_H

#include <stddef.h>
#include <vips/vips.h>

#include "CMediaDecoding.h"

// Shared by the C files of this target, not exported.

/// Runs `operation(context)` under the shared side of the decode lock; when it fails (returns
/// non-zero), runs it again under the exclusive side with libvips' error buffer cleared first,
/// and copies what libvips said into `message`. The operation must release what it made when it
/// fails, so that running it twice is harmless. Starts libvips when needed.
int photoledger_vips_run(int (*operation)(void *context), void *context, char *message, size_t message_size);

/// A picture is a libvips image whose pixels are in memory (or computed from one that is).
struct photoledger_picture {
    VipsImage *image;
};

/// Wraps `image` (taking its reference) as a picture, or NULL when out of memory (the image is
/// released then).
photoledger_picture *photoledger_picture_wrap(VipsImage *image);

/// Checks a JPEG's structure without decoding all of its image data (the JPEG side of
/// `PHOTOLEDGER_DECODE_STRUCTURE`): libjpeg reads its header, tables and metadata (into
/// `result`: size, one frame, EXIF and XMP as libvips' loader takes them, `too_large`) and
/// decodes its first rows, and a walk of its markers and entropy-coded data finds truncation,
/// a second frame header, unknown markers, restart markers out of order or missing. Returns 0,
/// or -1 with the reason in libvips' error buffer.
int photoledger_jpeg_check_structure(const char *path, photoledger_still *result);

#endif
