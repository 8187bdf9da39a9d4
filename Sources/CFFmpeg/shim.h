#ifndef PHOTOLEDGER_CFFMPEG_SHIM_H
#define PHOTOLEDGER_CFFMPEG_SHIM_H
// FFmpeg's demuxers, decoders and pixel format conversion (libavformat, libavcodec, libavutil,
// libswscale), called from Swift.
#include <libavformat/avformat.h>
#include <libavcodec/avcodec.h>
#include <libavutil/avutil.h>
#include <libavutil/dict.h>
#include <libavutil/display.h>
#include <libavutil/error.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>

/// AVERROR(EAGAIN), which Swift cannot import (a function-like macro).
static inline int photoledger_averror_again(void) { return AVERROR(EAGAIN); }
/// AVERROR_EOF, a macro over MKTAG that Swift cannot import.
static inline int photoledger_averror_eof(void) { return AVERROR_EOF; }
/// AVERROR(ENOMEM), which FFmpeg returns when an allocation is refused.
static inline int photoledger_averror_nomem(void) { return AVERROR(ENOMEM); }

/// Converts a decoded video frame, whatever its pixel format, to packed 8-bit RGB in `pixels`
/// (rows of `stride` bytes, at least `3 × width`), with the frame's colour matrix and range (an
/// unspecified matrix is taken as BT.709 from 720 rows up, BT.601 below). Returns 0, or -1 when
/// libswscale cannot convert the format.
static inline int photoledger_frame_to_rgb(const AVFrame *frame, uint8_t *pixels, int stride) {
    struct SwsContext *context = sws_getContext(frame->width, frame->height, (enum AVPixelFormat)frame->format, frame->width,
                                                frame->height, AV_PIX_FMT_RGB24, SWS_BICUBIC, NULL, NULL, NULL);
    if (context == NULL) return -1;
    int matrix = frame->colorspace;
    if (matrix == AVCOL_SPC_UNSPECIFIED || matrix == AVCOL_SPC_RGB) matrix = frame->height >= 720 ? SWS_CS_ITU709 : SWS_CS_ITU601;
    int full_range = frame->color_range == AVCOL_RANGE_JPEG;
    sws_setColorspaceDetails(context, sws_getCoefficients(matrix), full_range, sws_getCoefficients(SWS_CS_DEFAULT), 1, 0, 1 << 16,
                             1 << 16);
    uint8_t *planes[4] = {pixels, NULL, NULL, NULL};
    int strides[4] = {stride, 0, 0, 0};
    int rows = sws_scale(context, (const uint8_t *const *)frame->data, frame->linesize, 0, frame->height, planes, strides);
    sws_freeContext(context);
    return rows == frame->height ? 0 : -1;
}
#endif
