#ifndef PHOTOLEDGER_CFILESYNC_H
#define PHOTOLEDGER_CFILESYNC_H

/// Starts writing the dirty pages of `length` bytes from `offset` of the open file `descriptor`
/// to the disk and returns without waiting (Linux `sync_file_range` with
/// `SYNC_FILE_RANGE_WRITE`; a length of 0 means to the end of the file). This only schedules
/// the write: it makes no data or metadata durable, `fsync` still does. Returns 0, or -1 with
/// `errno` set; on systems without the call it does nothing and returns 0.
int photoledger_start_writeback(int descriptor, long long offset, long long length);

#endif
