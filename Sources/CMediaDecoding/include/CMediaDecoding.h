#ifndef PHOTOLEDGER_CMEDIADECODING_H
#define PHOTOLEDGER_CMEDIADECODING_H

#include <stddef.h>

// Still images through libvips: its loaders take variadic option lists, which Swift does not
// import, and its error buffer is shared by every thread. These functions wrap both behind one
// call per file that returns plain values. libvips types stay inside the C file.

/// What libvips read from a still image and what its decoder said.
typedef struct {
    /// Width of the image as the decoder returns it (libheif applies a HEIF's rotation).
    int width;
    /// Height of one frame.
    int height;
    /// Frames (pages): more than 1 for an animated GIF or WebP.
    int frames;
    /// The EXIF orientation (1-8) libvips read, or 1 when the file records none.
    int orientation;
    /// Whether the decoder reported a chunk whose checksum does not match (a libpng CRC warning
    /// about an ancillary chunk, which libpng otherwise skips).
    int checksum_mismatch;
    /// The EXIF payload libvips found (`exif-data`), copied with malloc, or NULL.
    unsigned char *exif;
    size_t exif_length;
    /// The text of a PNG `Raw profile type exif` text chunk (hex-encoded EXIF), or NULL.
    char *exif_text_profile;
    /// On failure: what the decoder said, NUL-terminated.
    char message[512];
} photoledger_still;

/// Decode levels of `photoledger_still_check`.
enum {
    /// Read the header and metadata only.
    PHOTOLEDGER_DECODE_HEADER = 0,
    /// Also decode every pixel of every frame, stopping on errors and truncation.
    PHOTOLEDGER_DECODE_PIXELS = 1,
};

/// Starts libvips once per process (later calls return at once): no operation cache (a file
/// changed on disk must be read again), one worker thread per decode, and its GLib warnings
/// routed to `photoledger_still_check` instead of the standard error. Returns 0, or -1 with a
/// message in `error`.
int photoledger_vips_start(char *error, size_t error_size);

/// Reads the still image at `path` with the libvips loader `loader` ("jpegload", "pngload",
/// "gifload", "webpload", "heifload", "tiffload"). With `PHOTOLEDGER_DECODE_PIXELS` the pixels are
/// decoded too (with libvips' `fail_on=error`: corrupt data and truncation fail, decoder warnings
/// such as extraneous bytes between JPEG segments do not); `reduce` (1, 2, 4 or 8) lets JPEG and
/// WebP decode at a fraction of the size, which still reads all of the compressed data. Returns
/// 0 with `result` filled, or -1 with `result->message` set. Free `result` with
/// `photoledger_still_free` either way. Safe to call from several threads at once.
int photoledger_still_check(const char *path, const char *loader, int level, int reduce, photoledger_still *result);

/// Frees what `photoledger_still_check` allocated in `result`.
void photoledger_still_free(photoledger_still *result);

#endif
