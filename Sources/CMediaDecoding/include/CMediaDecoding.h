#ifndef PHOTOLEDGER_CMEDIADECODING_H
#define PHOTOLEDGER_CMEDIADECODING_H

#include <stddef.h>

// Still images through libvips: its loaders take variadic option lists, which Swift does not
// import, and its error buffer is shared by every thread. These functions wrap both behind one
// call per file that returns plain values. libvips types stay inside the C files.

/// A picture decoded by libvips and held in memory, upright (its orientation applied): what the
/// renditions of a photo or video are scaled and encoded from. Opaque; free it with
/// `photoledger_picture_free`.
typedef struct photoledger_picture photoledger_picture;

/// What libvips read from a still image and what its decoder said.
typedef struct {
    /// Width of the image as the decoder returns it (libheif applies a HEIF's rotation).
    int width;
    /// Height of one frame.
    int height;
    /// Frames (pages): more than 1 for an animated GIF or WebP.
    int frames;
    /// The EXIF orientation (1-8) libvips read, or 1 when the file records none (always 1 for a
    /// JPEG checked for its structure, whose orientation its reader takes from the EXIF).
    int orientation;
    /// Whether the decoder reported a chunk whose checksum does not match (a libpng CRC warning
    /// about an ancillary chunk, which libpng otherwise skips).
    int checksum_mismatch;
    /// Whether a frame has more than `PHOTOLEDGER_MAX_PIXELS` pixels, or a side more than
    /// `PHOTOLEDGER_MAX_SIDE`: its pixels were then not decoded.
    int too_large;
    /// The EXIF payload libvips found (`exif-data`; for a JPEG checked for its structure, the
    /// same segment as libjpeg saved it), copied with malloc, or NULL.
    unsigned char *exif;
    size_t exif_length;
    /// The text of a PNG `Raw profile type exif` text chunk (hex-encoded EXIF), or NULL.
    char *exif_text_profile;
    /// The XMP packet libvips found (`xmp-data`; likewise for a JPEG checked for its structure),
    /// copied with malloc, or NULL.
    char *xmp;
    size_t xmp_length;
    /// With a `preview` size: the decoded picture, upright, its shorter side at least that size
    /// (or the whole picture when it is smaller), or NULL when the format has no reduced decode.
    /// `photoledger_still_free` frees it unless the caller took it (and set it to NULL).
    photoledger_picture *preview;
    /// On failure: what the decoder said, NUL-terminated.
    char message[512];
} photoledger_still;

/// Decode levels of `photoledger_still_check`.
enum {
    /// Read the header and metadata only.
    PHOTOLEDGER_DECODE_HEADER = 0,
    /// Also decode every pixel of every frame, stopping on errors and truncation.
    PHOTOLEDGER_DECODE_PIXELS = 1,
    /// For a JPEG: the header, tables and metadata through libjpeg alone (not libvips' loader) up
    /// to the start of decompression, its
    /// first rows decoded, and a walk of the markers and entropy-coded data of every scan that
    /// finds truncation (no end-of-image marker), a second frame header or start of image,
    /// unknown markers, a second scan in a single-scan frame, restart markers out of order or
    /// fewer than the frame's MCUs need, without Huffman-decoding the rest. Other formats are
    /// decoded as with `PHOTOLEDGER_DECODE_PIXELS`.
    PHOTOLEDGER_DECODE_STRUCTURE = 2,
};

/// The most pixels one frame of a still may have for its pixels to be decoded: 2^28 (268
/// megapixels, more than any camera's sensor). A decoder may hold every pixel of a frame at
/// once whatever the file's size (a GIF's canvas takes 4 bytes a pixel, so a 2 KB GIF that
/// claims 65535 × 65535 pixels asks for 17 GB), so larger images are refused from their header.
/// A side may have at most `PHOTOLEDGER_MAX_SIDE` pixels (2^20), as many as an asset's events
/// may record.
enum { PHOTOLEDGER_MAX_PIXELS = 1 << 28, PHOTOLEDGER_MAX_SIDE = 1 << 20 };

/// Starts libvips once per process (later calls return at once): no operation cache (a file
/// changed on disk must be read again), one worker thread per decode, and its GLib warnings
/// routed to `photoledger_still_check` instead of the standard error. Returns 0, or -1 with a
/// message in `error`.
int photoledger_vips_start(char *error, size_t error_size);

/// Reads the still image at `path` with the libvips loader `loader` ("jpegload", "pngload",
/// "gifload", "webpload", "heifload", "tiffload"). With `PHOTOLEDGER_DECODE_STRUCTURE` a JPEG's
/// structure is checked (see there) and other formats decoded. With `PHOTOLEDGER_DECODE_PIXELS` the pixels are
/// decoded too (with libvips' `fail_on=error`: corrupt data and truncation fail, decoder warnings
/// such as extraneous bytes between JPEG segments do not); `reduce` (1, 2, 4 or 8) lets JPEG and
/// WebP decode at a fraction of the size, which still reads all of the compressed data. With
/// `preview` > 0 (and `PHOTOLEDGER_DECODE_PIXELS`), a JPEG or WebP is decoded at the smallest
/// fraction whose shorter side is still at least `preview` pixels, into memory, and handed out
/// as `result->preview`: the same decode validates the file and gives the picture its small
/// renditions are made from. Returns 0 with `result` filled, or -1 with `result->message` set.
/// Free `result` with `photoledger_still_free` either way. Safe to call from several threads at
/// once. An image with more than `PHOTOLEDGER_MAX_PIXELS` pixels in a frame, or more than
/// `PHOTOLEDGER_MAX_SIDE` on a side, is read to its header only and marked `too_large`.
int photoledger_still_check(const char *path, const char *loader, int level, int reduce, int preview, photoledger_still *result);

/// Frees what `photoledger_still_check` allocated in `result`.
void photoledger_still_free(photoledger_still *result);

// Pictures: thumbnails of encoded stills by libvips' thumbnailer (shrink-on-load), pictures from
// decoded video frames, smaller pictures from larger ones, and their JPEG or PNG encoding. Each
// call returns 0, or -1 with what libvips said in `message`; all are safe to call from several
// threads at once (a picture itself is used by one thread at a time).

/// How a picture is scaled down into a square box of `size` pixels, without cropping: `fill` 0
/// scales it to fit inside the box (its longer side becomes `size`), 1 to cover the box (its
/// shorter side becomes `size`). A picture is never enlarged; `size` 0 keeps the full size.
typedef struct {
    int size;
    int fill;
} photoledger_scale;

/// Decodes the encoded still in `bytes` (any format libvips reads; an animation's first frame)
/// scaled as `scale` says, with shrink-on-load where the format allows it (JPEG's DCT scaling,
/// WebP's scaled decode, a HEIF's embedded thumbnail when it is large enough), its EXIF
/// orientation applied, and a picture with an embedded colour profile converted to sRGB.
int photoledger_picture_thumbnail(const void *bytes, size_t length, photoledger_scale scale, photoledger_picture **picture,
                                  char *message, size_t message_size);

/// A picture of `width × height` RGB pixels (3 bytes each, rows of `stride` bytes), turned as
/// the EXIF `orientation` (1-8) says, then scaled.
int photoledger_picture_from_rgb(const unsigned char *pixels, int width, int height, size_t stride, int orientation,
                                 photoledger_scale scale, photoledger_picture **picture, char *message, size_t message_size);

/// `picture` scaled down as `scale` says (a new picture).
int photoledger_picture_scaled(const photoledger_picture *picture, photoledger_scale scale, photoledger_picture **result,
                               char *message, size_t message_size);

/// The size of a picture, and whether it has an alpha channel.
void photoledger_picture_describe(const photoledger_picture *picture, int *width, int *height, int *has_alpha);

/// Encodes a picture as a baseline JPEG of `quality` (1-100), or as an 8-bit PNG when it has
/// transparent pixels (`*is_png` says which; an alpha channel that is opaque everywhere, as a
/// GIF's decoder gives, is dropped), without metadata. Free `*bytes` with
/// `photoledger_bytes_free`.
int photoledger_picture_encode(const photoledger_picture *picture, int quality, unsigned char **bytes, size_t *length, int *is_png,
                               char *message, size_t message_size);

/// The pixel size of the encoded image in `bytes`, read from its header (no pixel is decoded).
int photoledger_image_size(const void *bytes, size_t length, int *width, int *height, char *message, size_t message_size);

/// Frees bytes returned by `photoledger_picture_encode`.
void photoledger_bytes_free(unsigned char *bytes);

/// Frees a picture (NULL is allowed).
void photoledger_picture_free(photoledger_picture *picture);

#endif
