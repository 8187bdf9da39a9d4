// sync_file_range is a GNU extension: _GNU_SOURCE is defined here only, never in the header, so
// that no other module sees the system headers with a different feature set.
#define _GNU_SOURCE
#include <fcntl.h>

#include "CFileSync.h"

int photoledger_start_writeback(int descriptor, long long offset, long long length) {
#if defined(__linux__)
    return sync_file_range(descriptor, (off_t)offset, (off_t)length, SYNC_FILE_RANGE_WRITE);
#else
    (void)descriptor;
    (void)offset;
    (void)length;
    return 0;
#endif
}
