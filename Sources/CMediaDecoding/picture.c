#include "CMediaDecoding.h"
#include "internal.h"

#include <stdlib.h>
#include <string.h>

// Renditions: libvips' thumbnailer, rotation, scaling and the JPEG and PNG savers, each behind one
// non-variadic call run through `photoledger_vips_run` (so that a failure reports its own message).

photoledger_picture *photoledger_picture_wrap(VipsImage *image) {
    photoledger_picture *picture = malloc(sizeof *picture);
    if (picture == NULL) {
        g_object_unref(image);
        vips_error("photoledger", "out of memory");
        return NULL;
    }
    picture->image = image;
    return picture;
}

void photoledger_picture_free(photoledger_picture *picture) {
    if (picture == NULL) return;
    g_object_unref(picture->image);
    free(picture);
}

void photoledger_picture_describe(const photoledger_picture *picture, int *width, int *height, int *has_alpha) {
    *width = vips_image_get_width(picture->image);
    *height = vips_image_get_height(picture->image);
    *has_alpha = vips_image_hasalpha(picture->image) ? 1 : 0;
}

void photoledger_bytes_free(unsigned char *bytes) { g_free(bytes); }

/// The box the thumbnailer scales into for a picture shown `width × height` (orientation
/// applied): the square for `fit`; for `fill`, a box as tall (or wide) as the square whose other
/// side does not bound, so the shorter side becomes the size. Size 0 is the full size.
static void scale_box(photoledger_scale scale, int width, int height, int *box_width, int *box_height) {
    if (scale.size <= 0) {
        *box_width = VIPS_MAX_COORD;
        *box_height = VIPS_MAX_COORD;
    } else if (!scale.fill) {
        *box_width = scale.size;
        *box_height = scale.size;
    } else if (width >= height) {
        *box_width = VIPS_MAX_COORD;
        *box_height = scale.size;
    } else {
        *box_width = scale.size;
        *box_height = VIPS_MAX_COORD;
    }
}

/// Converts `*image` to sRGB when it carries a colour profile (replacing it), so that a
/// rendition saved without metadata shows its colours.
static int to_srgb(VipsImage **image) {
    if (vips_image_get_typeof(*image, VIPS_META_ICC_NAME) == 0) return 0;
    VipsImage *converted = NULL;
    if (vips_icc_transform(*image, &converted, "srgb", "embedded", TRUE, "intent", VIPS_INTENT_RELATIVE, NULL) != 0) return -1;
    g_object_unref(*image);
    *image = converted;
    return 0;
}

/// Keeps `image`'s pixels in memory as a picture (taking its reference).
static int keep(VipsImage *image, photoledger_picture **picture) {
    VipsImage *memory = vips_image_copy_memory(image);
    g_object_unref(image);
    if (memory == NULL) return -1;
    *picture = photoledger_picture_wrap(memory);
    return *picture == NULL ? -1 : 0;
}

// MARK: Thumbnails of encoded stills

typedef struct {
    const void *bytes;
    size_t length;
    photoledger_scale scale;
    photoledger_picture *picture;
} thumbnail_job;

static int thumbnail(void *context) {
    thumbnail_job *job = context;
    int box_width = 0, box_height = 0;
    if (job->scale.fill && job->scale.size > 0) {
        // The box depends on which side is shorter as shown: read the header (no pixels).
        VipsImage *header = vips_image_new_from_buffer(job->bytes, job->length, "", "access", VIPS_ACCESS_SEQUENTIAL, NULL);
        if (header == NULL) return -1;
        int width = vips_image_get_width(header), height = vips_image_get_page_height(header);
        if (vips_image_get_orientation_swap(header)) {
            int swapped = width;
            width = height;
            height = swapped;
        }
        g_object_unref(header);
        scale_box(job->scale, width, height, &box_width, &box_height);
    } else {
        scale_box(job->scale, 1, 1, &box_width, &box_height);
    }
    VipsImage *image = NULL;
    if (vips_thumbnail_buffer((void *)job->bytes, job->length, &image, box_width, "height", box_height, "size", VIPS_SIZE_DOWN, NULL) != 0) {
        return -1;
    }
    if (to_srgb(&image) != 0) {
        g_object_unref(image);
        return -1;
    }
    return keep(image, &job->picture);
}

int photoledger_picture_thumbnail(const void *bytes, size_t length, photoledger_scale scale, photoledger_picture **picture,
                                  char *message, size_t message_size) {
    thumbnail_job job = {bytes, length, scale, NULL};
    int status = photoledger_vips_run(thumbnail, &job, message, message_size);
    *picture = job.picture;
    return status;
}

// MARK: Pictures from pixels, and smaller pictures

/// `image` scaled into `scale`'s box (a new reference), never enlarged, not turned again.
static int scaled(VipsImage *image, photoledger_scale scale, VipsImage **result) {
    int box_width = 0, box_height = 0;
    scale_box(scale, vips_image_get_width(image), vips_image_get_height(image), &box_width, &box_height);
    return vips_thumbnail_image(image, result, box_width, "height", box_height, "size", VIPS_SIZE_DOWN, "no_rotate", TRUE, NULL);
}

typedef struct {
    const unsigned char *pixels;
    int width, height;
    size_t stride;
    int orientation;
    photoledger_scale scale;
    photoledger_picture *picture;
} pixels_job;

static int from_pixels(void *context) {
    pixels_job *job = context;
    size_t row = (size_t)job->width * 3;
    VipsImage *image = NULL;
    if (job->stride == row) {
        image = vips_image_new_from_memory_copy(job->pixels, row * (size_t)job->height, job->width, job->height, 3, VIPS_FORMAT_UCHAR);
    } else {
        unsigned char *packed = malloc(row * (size_t)job->height);
        if (packed == NULL) {
            vips_error("photoledger", "out of memory");
            return -1;
        }
        for (int y = 0; y < job->height; y++) memcpy(packed + row * (size_t)y, job->pixels + job->stride * (size_t)y, row);
        image = vips_image_new_from_memory_copy(packed, row * (size_t)job->height, job->width, job->height, 3, VIPS_FORMAT_UCHAR);
        free(packed);
    }
    if (image == NULL) return -1;
    image->Type = VIPS_INTERPRETATION_sRGB;
    vips_image_set_int(image, VIPS_META_ORIENTATION, job->orientation >= 1 && job->orientation <= 8 ? job->orientation : 1);
    VipsImage *upright = NULL;
    int status = vips_autorot(image, &upright, NULL);
    g_object_unref(image);
    if (status != 0) return -1;
    VipsImage *small = NULL;
    status = scaled(upright, job->scale, &small);
    g_object_unref(upright);
    if (status != 0) return -1;
    return keep(small, &job->picture);
}

int photoledger_picture_from_rgb(const unsigned char *pixels, int width, int height, size_t stride, int orientation,
                                 photoledger_scale scale, photoledger_picture **picture, char *message, size_t message_size) {
    pixels_job job = {pixels, width, height, stride, orientation, scale, NULL};
    int status = photoledger_vips_run(from_pixels, &job, message, message_size);
    *picture = job.picture;
    return status;
}

typedef struct {
    const photoledger_picture *source;
    photoledger_scale scale;
    photoledger_picture *picture;
} scale_job;

static int scale_picture(void *context) {
    scale_job *job = context;
    VipsImage *small = NULL;
    if (scaled(job->source->image, job->scale, &small) != 0) return -1;
    return keep(small, &job->picture);
}

int photoledger_picture_scaled(const photoledger_picture *picture, photoledger_scale scale, photoledger_picture **result,
                               char *message, size_t message_size) {
    scale_job job = {picture, scale, NULL};
    int status = photoledger_vips_run(scale_picture, &job, message, message_size);
    *result = job.picture;
    return status;
}

// MARK: Encoding

typedef struct {
    const photoledger_picture *picture;
    int quality;
    void *bytes;
    size_t length;
    int is_png;
} encode_job;

/// `image` without its alpha channel when every pixel is opaque (a GIF's decoder always gives
/// one), as a new reference; else a new reference to `image` itself.
static int without_opaque_alpha(VipsImage *image, VipsImage **result) {
    if (!vips_image_hasalpha(image)) {
        g_object_ref(image);
        *result = image;
        return 0;
    }
    VipsImage *alpha = NULL;
    double minimum = 0;
    if (vips_extract_band(image, &alpha, vips_image_get_bands(image) - 1, NULL) != 0) return -1;
    int status = vips_min(alpha, &minimum, NULL);
    g_object_unref(alpha);
    if (status != 0) return -1;
    VipsBandFormat format = vips_image_get_format(image);
    double opaque = format == VIPS_FORMAT_UCHAR ? 255 : format == VIPS_FORMAT_USHORT ? 65535 : 1;
    if (minimum < opaque) {
        g_object_ref(image);
        *result = image;
        return 0;
    }
    return vips_extract_band(image, result, 0, "n", vips_image_get_bands(image) - 1, NULL);
}

static int encode(void *context) {
    encode_job *job = context;
    VipsImage *image = NULL;
    if (without_opaque_alpha(job->picture->image, &image) != 0) return -1;
    job->is_png = vips_image_hasalpha(image) ? 1 : 0;
    int status;
    if (job->is_png) {
        status = vips_pngsave_buffer(image, &job->bytes, &job->length, "strip", TRUE, "bitdepth", 8, NULL);
    } else {
        int quality = job->quality >= 1 && job->quality <= 100 ? job->quality : 85;
        status = vips_jpegsave_buffer(image, &job->bytes, &job->length, "Q", quality, "strip", TRUE, NULL);
    }
    g_object_unref(image);
    return status;
}

int photoledger_picture_encode(const photoledger_picture *picture, int quality, unsigned char **bytes, size_t *length, int *is_png,
                               char *message, size_t message_size) {
    encode_job job = {picture, quality, NULL, 0, 0};
    int status = photoledger_vips_run(encode, &job, message, message_size);
    *bytes = job.bytes;
    *length = job.length;
    *is_png = job.is_png;
    return status;
}

// MARK: Sizes

typedef struct {
    const void *bytes;
    size_t length;
    int width, height;
} size_job;

static int measure(void *context) {
    size_job *job = context;
    VipsImage *header = vips_image_new_from_buffer(job->bytes, job->length, "", "access", VIPS_ACCESS_SEQUENTIAL, NULL);
    if (header == NULL) return -1;
    job->width = vips_image_get_width(header);
    job->height = vips_image_get_page_height(header);
    g_object_unref(header);
    return 0;
}

int photoledger_image_size(const void *bytes, size_t length, int *width, int *height, char *message, size_t message_size) {
    size_job job = {bytes, length, 0, 0};
    int status = photoledger_vips_run(measure, &job, message, message_size);
    *width = job.width;
    *height = job.height;
    return status;
}
