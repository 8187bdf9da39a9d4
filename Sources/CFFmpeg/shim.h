#ifndef PHOTOLEDGER_CFFMPEG_SHIM_H
#define PHOTOLEDGER_CFFMPEG_SHIM_H
// FFmpeg's demuxers and decoders (libavformat, libavcodec, libavutil), called from Swift.
#include <libavformat/avformat.h>
#include <libavcodec/avcodec.h>
#include <libavutil/avutil.h>
#include <libavutil/dict.h>
#include <libavutil/display.h>
#include <libavutil/error.h>

/// AVERROR(EAGAIN), which Swift cannot import (a function-like macro).
static inline int photoledger_averror_again(void) { return AVERROR(EAGAIN); }
/// AVERROR_EOF, a macro over MKTAG that Swift cannot import.
static inline int photoledger_averror_eof(void) { return AVERROR_EOF; }
#endif
