#ifndef PHOTOLEDGER_CMICROHTTPD_SHIM_H
#define PHOTOLEDGER_CMICROHTTPD_SHIM_H
#include <stdint.h>
#include <string.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <microhttpd.h>

/* Typed, non-variadic wrappers: Swift does not import MHD_start_daemon or MHD_get_daemon_info. */

/// Starts a daemon bound to the IPv4 address `address` (dotted quad) and `port` (0 = ephemeral),
/// with an internal thread pool of `threads` threads, an access handler and a completion
/// notifier. Returns NULL when the address is invalid or the daemon cannot start.
static inline struct MHD_Daemon *plmhd_start_daemon(
    const char *address, uint16_t port, unsigned int threads, unsigned int connection_timeout_seconds,
    size_t connection_memory_limit, MHD_AccessHandlerCallback handler, void *handler_context,
    MHD_RequestCompletedCallback completed, void *completed_context)
{
    struct sockaddr_in bind_address;
    memset(&bind_address, 0, sizeof(bind_address));
    bind_address.sin_family = AF_INET;
    bind_address.sin_port = htons(port);
    if (inet_pton(AF_INET, address, &bind_address.sin_addr) != 1) {
        return NULL;
    }
    unsigned int flags = MHD_USE_AUTO | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ITC;
    return MHD_start_daemon(
        flags, port, NULL, NULL, handler, handler_context,
        MHD_OPTION_SOCK_ADDR, (const struct sockaddr *)&bind_address,
        MHD_OPTION_THREAD_POOL_SIZE, threads,
        MHD_OPTION_CONNECTION_TIMEOUT, connection_timeout_seconds,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, connection_memory_limit,
        MHD_OPTION_NOTIFY_COMPLETED, completed, completed_context,
        MHD_OPTION_END);
}

/// The port the daemon is bound to (useful after binding port 0), or 0 when unknown.
static inline uint16_t plmhd_bound_port(struct MHD_Daemon *daemon)
{
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info == NULL ? 0 : info->port;
}

#endif
