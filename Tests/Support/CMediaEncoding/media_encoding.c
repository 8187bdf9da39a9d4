#include "CMediaEncoding.h"

#include <CMediaDecoding.h>
#include <stdio.h>
#include <string.h>
#include <vips/vips.h>

static int save(VipsImage *image, const photoledger_encoding *encoding, void **bytes, size_t *length) {
    const char *format = encoding->format;
    int quality = encoding->quality > 0 ? encoding->quality : 85;
    if (strcmp(format, "jpeg") == 0) {
        VipsForeignSubsample mode = encoding->subsample ? VIPS_FOREIGN_SUBSAMPLE_ON : VIPS_FOREIGN_SUBSAMPLE_OFF;
        return vips_jpegsave_buffer(image, bytes, length, "Q", quality, "subsample_mode", mode, NULL);
    }
    if (strcmp(format, "png") == 0) return vips_pngsave_buffer(image, bytes, length, NULL);
    if (strcmp(format, "gif") == 0) return vips_gifsave_buffer(image, bytes, length, NULL);
    if (strcmp(format, "webp") == 0) return vips_webpsave_buffer(image, bytes, length, "Q", quality, NULL);
    if (strcmp(format, "heic") == 0) {
        return vips_heifsave_buffer(image, bytes, length, "Q", quality, "compression", VIPS_FOREIGN_HEIF_COMPRESSION_HEVC, NULL);
    }
    if (strcmp(format, "avif") == 0) {
        return vips_heifsave_buffer(image, bytes, length, "Q", quality, "compression", VIPS_FOREIGN_HEIF_COMPRESSION_AV1, NULL);
    }
    if (strcmp(format, "tiff") == 0) return vips_tiffsave_buffer(image, bytes, length, NULL);
    vips_error("photoledger", "no libvips saver for %s", format);
    return -1;
}

int photoledger_encode(const unsigned char *pixels, int width, int height, int frames, const photoledger_encoding *encoding,
                       unsigned char **bytes, size_t *length, char *error, size_t error_size) {
    *bytes = NULL;
    *length = 0;
    // One start for the process, shared with the decoders: libvips must not be started twice at once.
    if (photoledger_vips_start(error, error_size) != 0) return -1;
    if (frames < 1) frames = 1;
    size_t size = (size_t)width * (size_t)height * (size_t)frames * 3;
    VipsImage *image = vips_image_new_from_memory_copy(pixels, size, width, height * frames, 3, VIPS_FORMAT_UCHAR);
    if (image == NULL) {
        snprintf(error, error_size, "%s", vips_error_buffer());
        vips_error_clear();
        return -1;
    }
    image->Type = VIPS_INTERPRETATION_sRGB;
    if (frames > 1) {
        vips_image_set_int(image, VIPS_META_PAGE_HEIGHT, height);
        vips_image_set_int(image, VIPS_META_N_PAGES, frames);
    }
    if (encoding->exif != NULL && encoding->exif_length > 0) {
        vips_image_set_blob_copy(image, VIPS_META_EXIF_NAME, encoding->exif, encoding->exif_length);
    }
    if (encoding->orientation >= 1 && encoding->orientation <= 8) {
        vips_image_set_int(image, VIPS_META_ORIENTATION, encoding->orientation);
    }
    void *buffer = NULL;
    int status = save(image, encoding, &buffer, length);
    g_object_unref(image);
    if (status != 0) {
        snprintf(error, error_size, "%s", vips_error_buffer());
        vips_error_clear();
        return -1;
    }
    *bytes = buffer;
    return 0;
}

void photoledger_encoded_free(unsigned char *bytes) { g_free(bytes); }

int photoledger_decode(const unsigned char *bytes, size_t length, unsigned char **pixels, int *width, int *height, char *error,
                       size_t error_size) {
    *pixels = NULL;
    if (photoledger_vips_start(error, error_size) != 0) return -1;
    VipsImage *image = vips_image_new_from_buffer(bytes, length, "", NULL);
    VipsImage *rgb = NULL, *flat = NULL, *narrow = NULL;
    int status = image == NULL ? -1 : vips_colourspace(image, &rgb, VIPS_INTERPRETATION_sRGB, NULL);
    if (status == 0) status = vips_image_hasalpha(rgb) ? vips_flatten(rgb, &flat, NULL) : vips_copy(rgb, &flat, NULL);
    if (status == 0) status = vips_cast(flat, &narrow, VIPS_FORMAT_UCHAR, NULL);
    size_t size = 0;
    void *memory = status == 0 ? vips_image_write_to_memory(narrow, &size) : NULL;
    if (memory != NULL) {
        *pixels = memory;
        *width = vips_image_get_width(narrow);
        *height = vips_image_get_height(narrow);
    } else {
        snprintf(error, error_size, "%s", vips_error_buffer());
        vips_error_clear();
    }
    if (narrow != NULL) g_object_unref(narrow);
    if (flat != NULL) g_object_unref(flat);
    if (rgb != NULL) g_object_unref(rgb);
    if (image != NULL) g_object_unref(image);
    return memory != NULL ? 0 : -1;
}
