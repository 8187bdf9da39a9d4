#ifndef PHOTOLEDGER_CMEDIAENCODING_H
#define PHOTOLEDGER_CMEDIAENCODING_H

#include <stddef.h>

// libvips' savers (variadic in C) behind one call, for test, demo and benchmark media only.

/// How `photoledger_encode` writes an image.
typedef struct {
    /// "jpeg", "png", "gif", "webp", "heic", "avif" or "tiff".
    const char *format;
    /// 1-100, for JPEG, WebP, HEIC and AVIF.
    int quality;
    /// JPEG: 1 to sample colour at half resolution (4:2:0), 0 for full resolution.
    int subsample;
    /// An EXIF payload (starting with `Exif\0\0`) to embed, or NULL.
    const unsigned char *exif;
    size_t exif_length;
    /// An EXIF orientation (1-8) to record, or 0 for none.
    int orientation;
} photoledger_encoding;

/// Encodes `frames` RGB frames of `width × height` pixels, stacked top to bottom in `pixels`
/// (3 bytes a pixel), as `encoding` says. Returns 0 with the file's bytes in `*bytes` (free them
/// with `photoledger_encoded_free`), or -1 with a message in `error`.
int photoledger_encode(const unsigned char *pixels, int width, int height, int frames, const photoledger_encoding *encoding,
                       unsigned char **bytes, size_t *length, char *error, size_t error_size);

/// Frees bytes returned by `photoledger_encode`.
void photoledger_encoded_free(unsigned char *bytes);

/// Decodes the encoded image in `bytes` (its first frame) to 8-bit RGB as stored, without turning
/// it by its orientation: `*width × *height` pixels, 3 bytes each, in `*pixels` (free them with
/// `photoledger_encoded_free`). Returns 0, or -1 with a message in `error`.
int photoledger_decode(const unsigned char *bytes, size_t length, unsigned char **pixels, int *width, int *height, char *error,
                       size_t error_size);

#endif
