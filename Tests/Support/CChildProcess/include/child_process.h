#ifndef PHOTOLEDGER_CCHILDPROCESS_H
#define PHOTOLEDGER_CCHILDPROCESS_H

#include <sys/types.h>

/// Starts the program at `path` with `argv` and `envp` (both NULL-terminated; `envp` NULL: this
/// process's environment), in `directory` (NULL: this process's), in a process group of its own,
/// with no signal blocked. Its standard input, output and error are the descriptors given, or
/// `/dev/null` for -2, or this process's own for -1; every other descriptor is closed in the
/// child, so a pipe's end reaches only the child it is meant for. Returns 0 and sets `*pid`, or
/// returns an errno value.
int plt_spawn(pid_t *pid, const char *path, char *const argv[], char *const envp[], const char *directory, int input, int output,
              int error);

#endif
