#include "CMediaDecoding.h"
#include "internal.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vips/vips.h>

// libvips collects error messages in one buffer for the whole process. Decodes run under the
// shared side of this lock; when one fails, it is decoded again under the exclusive side with
// the buffer cleared first, so the message it reports is its own. Failures are rare, so the
// files that decode well never wait for each other.
static pthread_rwlock_t decode_lock;
static pthread_once_t start_once = PTHREAD_ONCE_INIT;
static int start_status = -1;
static char start_message[256];

// Set on the thread that reads a header, so that the warnings libvips' loaders log through
// GLib while reading it (libpng's CRC warnings about ancillary chunks among them) are counted
// for that file. Warnings logged on libvips' worker threads, while pixels are decoded, are
// dropped: the decode itself fails on the ones that matter.
static __thread int capturing;
static __thread int checksum_warnings;

static void log_handler(const gchar *domain, GLogLevelFlags level, const gchar *message, gpointer data) {
    (void)domain;
    (void)level;
    (void)data;
    if (capturing && message != NULL && strstr(message, "CRC error") != NULL) checksum_warnings += 1;
}

static void start(void) {
    if (VIPS_INIT("photoledger") != 0) {
        snprintf(start_message, sizeof start_message, "libvips did not start: %s", vips_error_buffer());
        vips_error_clear();
        return;
    }
    vips_cache_set_max(0);
    vips_concurrency_set(1);
    g_log_set_handler("VIPS", G_LOG_LEVEL_WARNING | G_LOG_LEVEL_MESSAGE | G_LOG_LEVEL_INFO | G_LOG_LEVEL_DEBUG, log_handler, NULL);
    pthread_rwlockattr_t attributes;
    pthread_rwlockattr_init(&attributes);
    pthread_rwlockattr_setkind_np(&attributes, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&decode_lock, &attributes);
    pthread_rwlockattr_destroy(&attributes);
    start_status = 0;
}

int photoledger_vips_start(char *error, size_t error_size) {
    pthread_once(&start_once, start);
    if (start_status != 0 && error != NULL && error_size > 0) snprintf(error, error_size, "%s", start_message);
    return start_status;
}

/// Opens `path` with `loader`, reading the header only; pixels are decoded when asked for.
static VipsImage *load(const char *path, const char *loader, VipsFailOn fail_on, int reduce) {
    VipsImage *image = NULL;
    VipsAccess access = VIPS_ACCESS_SEQUENTIAL;
    int status = -1;
    if (strcmp(loader, "jpegload") == 0) {
        status = vips_jpegload(path, &image, "fail_on", fail_on, "shrink", reduce, "access", access, NULL);
    } else if (strcmp(loader, "webpload") == 0) {
        status = vips_webpload(path, &image, "fail_on", fail_on, "scale", 1.0 / reduce, "n", -1, "access", access, NULL);
    } else if (strcmp(loader, "gifload") == 0) {
        status = vips_gifload(path, &image, "fail_on", fail_on, "n", -1, "access", access, NULL);
    } else if (strcmp(loader, "pngload") == 0) {
        status = vips_pngload(path, &image, "fail_on", fail_on, "access", access, NULL);
    } else if (strcmp(loader, "heifload") == 0) {
        status = vips_heifload(path, &image, "fail_on", fail_on, "access", access, NULL);
    } else if (strcmp(loader, "tiffload") == 0) {
        status = vips_tiffload(path, &image, "fail_on", fail_on, "access", access, NULL);
    } else {
        vips_error("photoledger", "no libvips loader named %s", loader);
    }
    if (status != 0) {
        if (image != NULL) g_object_unref(image);
        return NULL;
    }
    return image;
}

/// Copies the header facts and metadata of `image` into `result`.
static void read_header(VipsImage *image, photoledger_still *result) {
    result->width = vips_image_get_width(image);
    result->frames = vips_image_get_n_pages(image);
    result->height = vips_image_get_page_height(image);
    int orientation = 1;
    if (vips_image_get_typeof(image, VIPS_META_ORIENTATION) != 0 && vips_image_get_int(image, VIPS_META_ORIENTATION, &orientation) == 0
        && orientation >= 1 && orientation <= 8) {
        result->orientation = orientation;
    } else {
        result->orientation = 1;
    }
    const void *exif = NULL;
    size_t length = 0;
    if (vips_image_get_typeof(image, VIPS_META_EXIF_NAME) != 0 && vips_image_get_blob(image, VIPS_META_EXIF_NAME, &exif, &length) == 0
        && length > 0) {
        result->exif = malloc(length);
        if (result->exif != NULL) {
            memcpy(result->exif, exif, length);
            result->exif_length = length;
        }
    }
    const void *xmp = NULL;
    size_t xmp_length = 0;
    if (vips_image_get_typeof(image, VIPS_META_XMP_NAME) != 0 && vips_image_get_blob(image, VIPS_META_XMP_NAME, &xmp, &xmp_length) == 0
        && xmp_length > 0) {
        result->xmp = malloc(xmp_length);
        if (result->xmp != NULL) {
            memcpy(result->xmp, xmp, xmp_length);
            result->xmp_length = xmp_length;
        }
    }
    gchar **fields = vips_image_get_fields(image);
    for (int index = 0; fields != NULL && fields[index] != NULL && result->exif_text_profile == NULL; index++) {
        const char *name = fields[index];
        const char *suffix = "Raw profile type exif";
        size_t name_length = strlen(name), suffix_length = strlen(suffix);
        if (strncmp(name, "png-comment-", 12) != 0 || name_length < suffix_length) continue;
        if (strcmp(name + name_length - suffix_length, suffix) != 0) continue;
        const char *text = NULL;
        if (vips_image_get_string(image, name, &text) == 0 && text != NULL) result->exif_text_profile = strdup(text);
    }
    g_strfreev(fields);
}

/// The per-thread state of ``decode_pixels``' sink: none (a non-NULL token, as NULL means failure).
static void *no_sequence(VipsImage *image, void *a, void *b) {
    (void)a;
    (void)b;
    return image;
}

static int end_no_sequence(void *sequence, void *a, void *b) {
    (void)sequence;
    (void)a;
    (void)b;
    return 0;
}

/// Takes a decoded region and does nothing with it: ``decode_pixels`` only needs the loader to
/// produce every pixel.
static int ignore_region(VipsRegion *region, void *sequence, void *a, void *b, gboolean *stop) {
    (void)region;
    (void)sequence;
    (void)a;
    (void)b;
    (void)stop;
    return 0;
}

/// Decodes every pixel of `image`: libvips asks the loader for every region of the image, which
/// makes it decompress all of its data (and fail where the data is damaged), and nothing more
/// is computed from the pixels.
static int decode_pixels(VipsImage *image) { return vips_sink(image, no_sequence, ignore_region, end_no_sequence, NULL, NULL); }

/// The largest reduction of `reduce` (halved until 1) whose picture keeps at least `preview`
/// pixels on its shorter side (enough for a rendition of that size in either mode), for a
/// decode that also gives the preview.
static int preview_reduction(int width, int height, int reduce, int preview) {
    int shorter = width < height ? width : height;
    while (reduce > 1 && shorter / reduce < preview) reduce /= 2;
    return reduce;
}

/// Decodes every pixel of `image` into memory and keeps it, upright, as `result->preview`.
/// Every frame of an animation is decoded (and so validated); the preview is the first one.
static int decode_preview(VipsImage *image, photoledger_still *result) {
    VipsImage *memory = vips_image_copy_memory(image);
    if (memory == NULL) return -1;
    int page_height = vips_image_get_page_height(memory);
    if (page_height < vips_image_get_height(memory)) {
        VipsImage *first = NULL;
        int cropped = vips_crop(memory, &first, 0, 0, vips_image_get_width(memory), page_height, NULL);
        g_object_unref(memory);
        if (cropped != 0) return -1;
        memory = first;
    }
    VipsImage *upright = NULL;
    int status = vips_autorot(memory, &upright, NULL);
    g_object_unref(memory);
    if (status != 0) return -1;
    result->preview = photoledger_picture_wrap(upright);
    return result->preview == NULL ? -1 : 0;
}

/// One attempt: header (and metadata), then the pixels when asked for.
static int attempt(const char *path, const char *loader, int level, int reduce, int preview, photoledger_still *result) {
    int previews = preview > 0 && (strcmp(loader, "jpegload") == 0 || strcmp(loader, "webpload") == 0);
    if (level == PHOTOLEDGER_DECODE_STRUCTURE && !previews && strcmp(loader, "jpegload") == 0) {
        // libjpeg reads the header and metadata itself, as libvips' loader would, without
        // libvips' header load (a third of an import's time for a small photo).
        photoledger_still_free(result);
        return photoledger_jpeg_check_structure(path, result);
    }
    capturing = 1;
    checksum_warnings = 0;
    VipsImage *header = load(path, loader, VIPS_FAIL_ON_ERROR, 1);
    capturing = 0;
    if (header == NULL) return -1;
    photoledger_still_free(result);
    read_header(header, result);
    result->checksum_mismatch = checksum_warnings > 0;
    if ((long long)result->width * result->height > PHOTOLEDGER_MAX_PIXELS || result->width > PHOTOLEDGER_MAX_SIDE
        || result->height > PHOTOLEDGER_MAX_SIDE) {
        result->too_large = 1;
        g_object_unref(header);
        return 0;
    }
    int status = 0;
    if (previews) reduce = preview_reduction(result->width, result->height, reduce, preview);
    // A reduced decode of a small image could leave no pixel: keep at least 8 on each side.
    while (reduce > 1 && (result->width / reduce < 8 || result->height / reduce < 8)) reduce /= 2;
    if (level != PHOTOLEDGER_DECODE_HEADER) {
        VipsImage *image = header;
        if (reduce > 1) image = load(path, loader, VIPS_FAIL_ON_ERROR, reduce);
        if (image == NULL) {
            status = -1;
        } else {
            status = previews ? decode_preview(image, result) : decode_pixels(image);
            if (image != header) g_object_unref(image);
        }
    }
    g_object_unref(header);
    return status;
}

int photoledger_still_check(const char *path, const char *loader, int level, int reduce, int preview, photoledger_still *result) {
    memset(result, 0, sizeof *result);
    if (photoledger_vips_start(result->message, sizeof result->message) != 0) return -1;
    if (reduce != 1 && reduce != 2 && reduce != 4 && reduce != 8) reduce = 1;
    pthread_rwlock_rdlock(&decode_lock);
    int status = attempt(path, loader, level, reduce, preview, result);
    pthread_rwlock_unlock(&decode_lock);
    if (status == 0) return 0;

    pthread_rwlock_wrlock(&decode_lock);
    vips_error_clear();
    status = attempt(path, loader, level, reduce, preview, result);
    if (status != 0) {
        const char *message = vips_error_buffer();
        snprintf(result->message, sizeof result->message, "%s", message != NULL && message[0] != 0 ? message : "the decoder stopped");
        size_t length = strlen(result->message);
        while (length > 0 && (result->message[length - 1] == '\n' || result->message[length - 1] == ' ')) result->message[--length] = 0;
    }
    vips_error_clear();
    pthread_rwlock_unlock(&decode_lock);
    return status;
}

int photoledger_vips_run(int (*operation)(void *context), void *context, char *message, size_t message_size) {
    if (photoledger_vips_start(message, message_size) != 0) return -1;
    pthread_rwlock_rdlock(&decode_lock);
    int status = operation(context);
    pthread_rwlock_unlock(&decode_lock);
    if (status == 0) return 0;

    pthread_rwlock_wrlock(&decode_lock);
    vips_error_clear();
    status = operation(context);
    if (status != 0 && message != NULL && message_size > 0) {
        const char *text = vips_error_buffer();
        snprintf(message, message_size, "%s", text != NULL && text[0] != 0 ? text : "libvips stopped");
        size_t length = strlen(message);
        while (length > 0 && (message[length - 1] == '\n' || message[length - 1] == ' ')) message[--length] = 0;
    }
    vips_error_clear();
    pthread_rwlock_unlock(&decode_lock);
    return status;
}

void photoledger_still_free(photoledger_still *result) {
    free(result->exif);
    result->exif = NULL;
    result->exif_length = 0;
    free(result->exif_text_profile);
    result->exif_text_profile = NULL;
    free(result->xmp);
    result->xmp = NULL;
    result->xmp_length = 0;
    photoledger_picture_free(result->preview);
    result->preview = NULL;
}
