#include "CMediaDecoding.h"
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jpeglib.h>
#include <jerror.h>

/// Files up to this size are read into memory rather than mapped.
#define SMALL_FILE (256 * 1024)

// The JPEG check of `PHOTOLEDGER_DECODE_STRUCTURE`: libjpeg reads the header and tables and
// decodes the first rows, and a walk of the whole file checks the structure of every scan's
// entropy-coded data without decoding it (Huffman decoding is what a full decode spends most
// of its time on). The walk finds what a full decode with libvips' `fail_on=error` fails on —
// truncation (no end-of-image marker), a second frame header or start of image, unknown
// markers, a second scan where the frame has one, broken tables and scan headers between scans,
// tables selected and never defined — and more that a full decode only warns
// about: restart markers out of order, and fewer restart intervals than the frame's MCUs need
// (image data missing although the end marker is there).

/// Reports a structure failure through libvips' error buffer, as the loaders report theirs.
static int fail(const char *format, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *format, ...) {
    char text[400];
    va_list arguments;
    va_start(arguments, format);
    vsnprintf(text, sizeof text, format, arguments);
    va_end(arguments);
    vips_error("jpegload", "%s", text);
    return -1;
}

/// The frame header's facts the walk needs.
typedef struct {
    int width, height, count, progressive;
    int max_h, max_v;
    int id[4], h[4], v[4];
} frame_info;

static int is_frame_marker(unsigned marker) {
    return marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC;
}

static long long ceil_div(long long a, long long b) { return (a + b - 1) / b; }

/// Reads a frame header (SOFn) body.
static int read_frame(const unsigned char *body, size_t length, unsigned marker, size_t offset, frame_info *frame) {
    if (length < 6) return fail("its frame header (SOF) at byte %zu is %zu bytes long, too short for one", offset, length);
    frame->height = body[1] << 8 | body[2];
    frame->width = body[3] << 8 | body[4];
    frame->count = body[5];
    frame->progressive = marker == 0xC2 || marker == 0xC6 || marker == 0xCA || marker == 0xCE;
    if (frame->width == 0 || frame->height == 0) return fail("its frame header at byte %zu declares no pixels", offset);
    if (frame->count < 1 || frame->count > 4 || length < 6 + 3 * (size_t)frame->count)
        return fail("its frame header at byte %zu declares %d components", offset, frame->count);
    frame->max_h = frame->max_v = 1;
    for (int index = 0; index < frame->count; index++) {
        const unsigned char *component = body + 6 + 3 * index;
        frame->id[index] = component[0];
        frame->h[index] = component[1] >> 4;
        frame->v[index] = component[1] & 15;
        if (frame->h[index] < 1 || frame->h[index] > 4 || frame->v[index] < 1 || frame->v[index] > 4)
            return fail("its frame header at byte %zu declares impossible sampling factors", offset);
        if (frame->h[index] > frame->max_h) frame->max_h = frame->h[index];
        if (frame->v[index] > frame->max_v) frame->max_v = frame->v[index];
    }
    return 0;
}

/// The MCUs of a scan of `count` components (the first of them `first`, an index into the frame).
static long long scan_mcus(const frame_info *frame, int count, int first) {
    if (count > 1)
        return ceil_div(frame->width, 8LL * frame->max_h) * ceil_div(frame->height, 8LL * frame->max_v);
    long long width = ceil_div((long long)frame->width * frame->h[first], frame->max_h);
    long long height = ceil_div((long long)frame->height * frame->v[first], frame->max_v);
    return ceil_div(width, 8) * ceil_div(height, 8);
}

/// Checks the Huffman tables (DHT) or quantization tables (DQT) of a segment, as libjpeg reads
/// them: the walk meets those between scans, which libjpeg's header read does not reach.
static int check_tables(unsigned marker, const unsigned char *body, size_t length, size_t offset, int defined[2][4]) {
    size_t at = 0;
    while (at < length) {
        unsigned kind = body[at] >> 4, index = body[at] & 15;
        at += 1;
        if (marker == 0xC4) {
            if (kind > 1 || index > 3 || length - at < 16)
                return fail("bogus Huffman table definition in the segment at byte %zu", offset);
            // Canonical codes must fit their lengths (libjpeg's rule when it builds the table).
            size_t codes = 0, code = 0, remaining = 0;
            for (int bits = 0; bits < 16; bits++) remaining += body[at + bits];
            for (int bits = 0; bits < 16 && codes < remaining; bits++) {
                codes += body[at + bits];
                code += body[at + bits];
                if (code >= (size_t)1 << (bits + 1)) return fail("bogus Huffman table definition in the segment at byte %zu", offset);
                code <<= 1;
            }
            at += 16;
            if (codes > 256 || codes > length - at) return fail("bogus Huffman table definition in the segment at byte %zu", offset);
            defined[kind][index] = 1;
            for (size_t symbol = 0; kind == 0 && symbol < codes; symbol++)
                if (body[at + symbol] > 15) return fail("bogus Huffman table definition in the segment at byte %zu", offset);
            at += codes;
        } else {
            size_t values = kind == 0 ? 64 : kind == 1 ? 128 : 0;
            if (values == 0 || index > 3 || values > length - at)
                return fail("bogus quantization table definition in the segment at byte %zu", offset);
            at += values;
        }
    }
    return 0;
}

/// Checks that the Huffman tables a scan selects are defined: libjpeg-turbo supplies the
/// standard tables in slots 0 and 1 (as Motion-JPEG frames leave them out), so only slots 2 and
/// 3 must have been defined by a DHT segment before the scan.
static int check_selectors(const unsigned char *body, size_t length, int count, int progressive, size_t offset, int defined[2][4]) {
    size_t parameters = 1 + 2 * (size_t)count;
    if (length < parameters + 3) return fail("the scan header at byte %zu is too short", offset);
    unsigned start = body[parameters], high = body[parameters + 2] >> 4;
    int uses_dc = !progressive || (start == 0 && high == 0), uses_ac = !progressive || start > 0;
    for (int index = 0; index < count; index++) {
        unsigned dc = body[2 + 2 * index] >> 4, ac = body[2 + 2 * index] & 15;
        if ((uses_dc && (dc > 3 || (dc > 1 && !defined[0][dc]))) || (uses_ac && (ac > 3 || (ac > 1 && !defined[1][ac]))))
            return fail("the scan at byte %zu selects a Huffman table that is not defined", offset);
    }
    return 0;
}

/// Checks a progressive scan's spectral selection and successive approximation, as libjpeg's
/// progressive decoder does when the scan starts.
static int check_progression(const unsigned char *body, size_t length, int count, size_t offset) {
    size_t at = 1 + 2 * (size_t)count;
    if (length < at + 3) return fail("the scan header at byte %zu is too short", offset);
    unsigned start = body[at], end = body[at + 1], high = body[at + 2] >> 4, low = body[at + 2] & 15;
    int valid = start <= end && end <= 63 && high <= 13 && low <= 13 && (start == 0 ? end == 0 : count == 1);
    if (!valid) return fail("invalid progressive parameters Ss=%u Se=%u Ah=%u Al=%u in the scan at byte %zu", start, end, high, low, offset);
    return 0;
}

/// Walks the markers and entropy-coded data of the JPEG in `data`; 0 when the structure is whole.
static int walk(const unsigned char *data, size_t size) {
    if (size < 4 || data[0] != 0xFF || data[1] != 0xD8) return fail("no start-of-image marker");
    frame_info frame;
    memset(&frame, 0, sizeof frame);
    size_t at = 2, frame_offset = 0;
    int frames = 0, scans = 0, single_scan = 0, arithmetic = 0;
    int defined[2][4] = {{0}};
    unsigned restart_interval = 0;
    for (;;) {
        // The next marker: bytes before it are junk that decoders skip (with a warning), a
        // stuffed zero (FF 00) among them too; repeated FFs are fill.
        while (at < size && data[at] != 0xFF) at++;
        while (at < size && data[at] == 0xFF) at++;
        if (at >= size) return fail("premature end of JPEG file: it ends before its end-of-image marker");
        unsigned marker = data[at++];
        size_t offset = at - 2;
        if (marker == 0x00) continue;
        if (marker == 0xD9) {
            if (scans == 0) return fail("the JPEG holds no image data: its end-of-image marker comes before any scan");
            return 0;
        }
        if (marker == 0xD8) return fail("a second start-of-image marker at byte %zu", offset);
        if ((marker >= 0xD0 && marker <= 0xD7) || marker == 0x01) continue;  // stray restart or TEM: skipped by decoders
        if (marker < 0xC0) return fail("unknown marker 0xFF%02X at byte %zu", marker, offset);
        if (size - at < 2) return fail("premature end of JPEG file: it ends inside the marker at byte %zu", offset);
        size_t length = (size_t)data[at] << 8 | data[at + 1];
        if (length < 2) return fail("the segment 0xFF%02X at byte %zu declares a length of %zu bytes", marker, offset, length);
        if (length > size - at)
            return fail(
                "premature end of JPEG file: the segment 0xFF%02X at byte %zu declares %zu bytes where the file holds %zu more", marker,
                offset, length, size - at);
        const unsigned char *body = data + at + 2;
        size_t body_length = length - 2;
        at += length;
        if (is_frame_marker(marker)) {
            if (frames++ > 0) return fail("two frame headers (SOF markers), at bytes %zu and %zu", frame_offset, offset);
            frame_offset = offset;
            arithmetic = marker >= 0xC9;
            if (read_frame(body, body_length, marker, offset, &frame) != 0) return -1;
            continue;
        }
        if (marker == 0xDD) {
            if (body_length < 2) return fail("its restart interval (DRI) at byte %zu is too short", offset);
            restart_interval = (unsigned)body[0] << 8 | body[1];
            continue;
        }
        if (marker == 0xC4 || marker == 0xDB) {
            if (check_tables(marker, body, body_length, offset, defined) != 0) return -1;
            continue;
        }
        if (marker != 0xDA) continue;  // comments, application data

        // A scan: its header, then entropy-coded data up to the next marker that is not a
        // restart marker.
        if (frames == 0) return fail("a scan (SOS) at byte %zu before any frame header", offset);
        if (single_scan) return fail("a second scan at byte %zu where the frame's first scan held every component", offset);
        int count = body_length > 0 ? body[0] : 0;
        if (count < 1 || count > 4 || body_length < 1 + 2 * (size_t)count)
            return fail("the scan header at byte %zu declares %d components", offset, count);
        int first = -1;
        for (int index = 0; index < frame.count; index++)
            if (frame.id[index] == body[1]) first = index;
        if (first < 0) return fail("the scan at byte %zu refers to component %d, which the frame does not have", offset, body[1]);
        if (frame.progressive && check_progression(body, body_length, count, offset) != 0) return -1;
        if (!arithmetic && check_selectors(body, body_length, count, frame.progressive, offset, defined) != 0) return -1;
        scans += 1;
        if (scans == 1 && !frame.progressive && count == frame.count) single_scan = 1;
        unsigned long long restarts = 0;
        for (;;) {
            const unsigned char *found = at < size ? memchr(data + at, 0xFF, size - at) : NULL;
            if (found == NULL) return fail("premature end of JPEG file: it ends inside the image data of scan %d", scans);
            at = (size_t)(found - data) + 1;
            while (at < size && data[at] == 0xFF) at++;
            if (at >= size) return fail("premature end of JPEG file: it ends inside the image data of scan %d", scans);
            unsigned next = data[at];
            if (next == 0x00) {
                at++;
                continue;
            }
            if (next >= 0xD0 && next <= 0xD7) {
                if (restart_interval == 0)
                    return fail("a restart marker at byte %zu in a scan that has no restart interval", at - 1);
                if (next - 0xD0 != (restarts & 7))
                    return fail(
                        "restart markers out of order at byte %zu (RST%u where RST%u belongs): image data is missing there", at - 1,
                        next - 0xD0, (unsigned)(restarts & 7));
                restarts++;
                at++;
                continue;
            }
            at -= 1;  // back to the FF before the marker that ends the scan
            break;
        }
        if (restart_interval > 0) {
            unsigned long long needed = (unsigned long long)(scan_mcus(&frame, count, first) - 1) / restart_interval;
            if (restarts < needed)
                return fail(
                    "image data is missing: scan %d holds %llu of the %llu restart markers its %lld MCUs need", scans, restarts, needed,
                    scan_mcus(&frame, count, first));
        }
    }
}

typedef struct {
    struct jpeg_error_mgr manager;
    jmp_buf jump;
    /// Whether the data ran out (libjpeg then warns and reads an end-of-image marker in its place).
    volatile int ran_out;
} error_state;

static void error_exit(j_common_ptr info) {
    error_state *state = (error_state *)info->err;
    longjmp(state->jump, 1);
}

static void output_message(j_common_ptr info) { (void)info; }

/// Notes the warning that the data ran out; warnings are otherwise silent.
static void emit_message(j_common_ptr info, int level) {
    error_state *state = (error_state *)info->err;
    if (level < 0 && info->err->msg_code == JWRN_JPEG_EOF) state->ran_out = 1;
    if (level < 0) info->err->num_warnings++;
}

/// Keeps a copy of `length` bytes at `data` in `*field` (and its length in `*field_length`),
/// unless the field holds some already: the first segment of a kind counts, as in libvips.
static void keep_first(void **field, size_t *field_length, const unsigned char *data, size_t length) {
    if (*field != NULL || length == 0) return;
    void *copy = malloc(length);
    if (copy == NULL) return;
    memcpy(copy, data, length);
    *field = copy;
    *field_length = length;
}

/// The EXIF and XMP of the APP1 segments libjpeg saved, as libvips' JPEG loader takes them: the
/// first segment that starts with "Exif" is the EXIF payload (its `Exif\0\0` header kept); the
/// first that starts with "http" and has a NUL within its first 80 bytes (a namespace such as
/// `http://ns.adobe.com/xap/1.0/`) holds the XMP packet after that NUL.
static void read_metadata(const struct jpeg_decompress_struct *info, photoledger_still *result) {
    for (jpeg_saved_marker_ptr segment = info->marker_list; segment != NULL; segment = segment->next) {
        const unsigned char *data = segment->data;
        size_t length = segment->data_length;
        if (segment->marker != JPEG_APP0 + 1 || length <= 4) continue;
        if (memcmp(data, "Exif", 4) == 0) keep_first((void **)&result->exif, &result->exif_length, data, length);
        if (memcmp(data, "http", 4) != 0 || result->xmp != NULL) continue;
        size_t limit = length - 2 < 80 ? length - 2 : 80, end = 0;
        while (end < limit && data[end] != 0) end++;
        if (end < limit) keep_first((void **)&result->xmp, &result->xmp_length, data + end + 1, length - end - 1);
    }
}

/// libjpeg reads the header, tables and APP1 segments (the size and metadata go to `result`;
/// a frame larger than `PHOTOLEDGER_MAX_PIXELS` is marked `too_large` and read no further) and,
/// for a sequential JPEG of one scan, starts the
/// decompression at an eighth of the size and decodes its first rows (which builds the scan's
/// Huffman and quantization tables). Warnings (junk between segments, a bad code in the first
/// rows) are not failures here, as with libvips' `fail_on=error`.
static int read_tables(const unsigned char *data, size_t size, photoledger_still *result) {
    struct jpeg_decompress_struct info;
    error_state errors;
    info.err = jpeg_std_error(&errors.manager);
    errors.manager.error_exit = error_exit;
    errors.manager.output_message = output_message;
    errors.manager.emit_message = emit_message;
    errors.ran_out = 0;
    if (setjmp(errors.jump) != 0) {
        char message[JMSG_LENGTH_MAX];
        (*info.err->format_message)((j_common_ptr)&info, message);
        int ran_out = errors.ran_out;
        jpeg_destroy_decompress(&info);
        // A file cut before its image data: libjpeg read its own end marker there and failed on it.
        if (ran_out) return fail("premature end of JPEG file: it ends inside its header (%s)", message);
        return fail("%s", message);
    }
    jpeg_create_decompress(&info);
    jpeg_mem_src(&info, data, (unsigned long)size);
    jpeg_save_markers(&info, JPEG_APP0 + 1, 0xFFFF);
    jpeg_read_header(&info, TRUE);
    result->width = (int)info.image_width;
    result->height = (int)info.image_height;
    result->frames = 1;
    result->orientation = 1;
    read_metadata(&info, result);
    if ((long long)result->width * result->height > PHOTOLEDGER_MAX_PIXELS || result->width > PHOTOLEDGER_MAX_SIDE
        || result->height > PHOTOLEDGER_MAX_SIDE) {
        result->too_large = 1;
    } else if (!info.progressive_mode && info.comps_in_scan == info.num_components) {
        info.scale_num = 1;
        info.scale_denom = 8;
        info.dct_method = JDCT_IFAST;
        info.do_fancy_upsampling = FALSE;
        jpeg_start_decompress(&info);
        JSAMPARRAY rows = (*info.mem->alloc_sarray)((j_common_ptr)&info, JPOOL_IMAGE, info.output_width * info.output_components, 1);
        while (info.output_scanline < info.output_height && info.output_scanline < 8) jpeg_read_scanlines(&info, rows, 1);
    }
    jpeg_destroy_decompress(&info);
    return 0;
}

/// The whole check of a file's bytes: libjpeg's reading of the header and first rows, then the
/// walk of every segment (unless the frame is too large to decode).
static int check_bytes(const unsigned char *bytes, size_t size, photoledger_still *result) {
    int checked = read_tables(bytes, size, result);
    if (checked == 0 && !result->too_large) checked = walk(bytes, size);
    return checked;
}

int photoledger_jpeg_check_structure(const char *path, photoledger_still *result) {
    int descriptor = open(path, O_RDONLY | O_CLOEXEC);
    if (descriptor < 0) return fail("cannot open the file: %s", strerror(errno));
    struct stat status;
    if (fstat(descriptor, &status) != 0 || status.st_size <= 0) {
        close(descriptor);
        return fail("premature end of JPEG file: it is empty");
    }
    size_t size = (size_t)status.st_size;
    if (size <= SMALL_FILE) {
        // A small file is read: a mapping costs two system calls and a page fault per page.
        unsigned char *bytes = malloc(size);
        if (bytes == NULL) {
            close(descriptor);
            return fail("out of memory reading %zu bytes", size);
        }
        size_t done = 0;
        ssize_t count = 1;
        while (done < size && count != 0) {
            count = pread(descriptor, bytes + done, size - done, (off_t)done);
            if (count < 0 && errno != EINTR) break;
            if (count > 0) done += (size_t)count;
        }
        int read_error = errno;
        close(descriptor);
        int checked;
        if (count < 0) {
            checked = fail("cannot read the file: %s", strerror(read_error));
        } else if (done < size) {
            checked = fail("the file shrank from %zu to %zu bytes while it was read", size, done);
        } else {
            checked = check_bytes(bytes, size, result);
        }
        free(bytes);
        return checked;
    }
    void *mapped = mmap(NULL, size, PROT_READ, MAP_PRIVATE, descriptor, 0);
    close(descriptor);
    if (mapped == MAP_FAILED) return fail("cannot map the file: %s", strerror(errno));
    madvise(mapped, size, MADV_SEQUENTIAL);
    int checked = check_bytes(mapped, size, result);
    munmap(mapped, size);
    return checked;
}
