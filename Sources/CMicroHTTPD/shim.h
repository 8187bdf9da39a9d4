#ifndef PHOTOLEDGER_CMICROHTTPD_SHIM_H
#define PHOTOLEDGER_CMICROHTTPD_SHIM_H
#include <stdint.h>
#include <string.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <microhttpd.h>

/* Typed, non-variadic wrappers: Swift does not import MHD_start_daemon, MHD_get_daemon_info or
   MHD_get_connection_info. */

/// What `plmhd_start_daemon` needs: the address, the limits and the callbacks.
struct plmhd_daemon_options {
    /// The IPv4 address to bind (dotted quad) and the port (0 = ephemeral).
    const char *address;
    uint16_t port;
    /// Threads of the pool; each polls its own connections.
    unsigned int threads;
    /// Seconds without any traffic after which an idle connection is closed.
    unsigned int connection_timeout_seconds;
    /// The memory pool of one connection (request head, buffers).
    size_t connection_memory_limit;
    /// The most connections open at once, suspended ones included.
    unsigned int connection_limit;
    /// The most connections open at once from one IP address (0 = no limit).
    unsigned int per_address_connection_limit;
    /// The length of the queue of connections not yet accepted.
    unsigned int listen_backlog;
    MHD_AccessHandlerCallback handler;
    void *handler_context;
    MHD_RequestCompletedCallback completed;
    void *completed_context;
    MHD_NotifyConnectionCallback connection_notice;
    void *connection_notice_context;
};

/// Starts a daemon with an internal pool of threads, each polling its connections with poll()
/// (level-triggered), with suspend and resume allowed (waiting pulls), the limits and the
/// callbacks of `options`. Returns NULL when the address is invalid or the daemon cannot start.
///
/// Not epoll: libmicrohttpd 0.9.75 drains its epoll queue by calling epoll_wait again, with the
/// same blocking timeout, whenever a call returned a full batch of 128 events, so after a burst
/// of exactly 128 (or 256, ...) ready connections and silence, those connections wait unserved
/// until the next event or the idle timeout (seen as waiting pulls that failed to start waiting
/// again after a wake-up). poll() sees every ready socket each time; it covers only connections
/// that are not suspended, so waiting pulls cost it nothing.
static inline struct MHD_Daemon *plmhd_start_daemon(const struct plmhd_daemon_options *options)
{
    struct sockaddr_in bind_address;
    memset(&bind_address, 0, sizeof(bind_address));
    bind_address.sin_family = AF_INET;
    bind_address.sin_port = htons(options->port);
    if (inet_pton(AF_INET, options->address, &bind_address.sin_addr) != 1) {
        return NULL;
    }
    unsigned int flags = MHD_USE_POLL_INTERNAL_THREAD | MHD_USE_ITC | MHD_ALLOW_SUSPEND_RESUME;
    return MHD_start_daemon(
        flags, options->port, NULL, NULL, options->handler, options->handler_context,
        MHD_OPTION_SOCK_ADDR, (const struct sockaddr *)&bind_address,
        MHD_OPTION_THREAD_POOL_SIZE, options->threads,
        MHD_OPTION_CONNECTION_TIMEOUT, options->connection_timeout_seconds,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, options->connection_memory_limit,
        MHD_OPTION_CONNECTION_LIMIT, options->connection_limit,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, options->per_address_connection_limit,
        MHD_OPTION_LISTEN_BACKLOG_SIZE, options->listen_backlog,
        MHD_OPTION_NOTIFY_COMPLETED, options->completed, options->completed_context,
        MHD_OPTION_NOTIFY_CONNECTION, options->connection_notice, options->connection_notice_context,
        MHD_OPTION_END);
}

/// Starts a daemon that serves each connection on a thread of its own, bound to `address` (an
/// IPv4 dotted quad, or an IPv6 address such as `::1`, without brackets) and `port` (0 =
/// ephemeral), with at most `connection_limit` connections and idle connections closed after
/// `connection_timeout_seconds`. A handler or a response's content reader may block its thread
/// (a long-lived event stream waits for the next event). Returns NULL when the address is invalid
/// or the daemon cannot start.
static inline struct MHD_Daemon *plmhd_start_threaded_daemon(
    const char *address, uint16_t port, unsigned int connection_limit, unsigned int connection_timeout_seconds,
    MHD_AccessHandlerCallback handler, void *handler_context, MHD_RequestCompletedCallback completed, void *completed_context)
{
    struct sockaddr_in bind_address;
    struct sockaddr_in6 bind_address6;
    const struct sockaddr *bound;
    unsigned int flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL;
    memset(&bind_address, 0, sizeof(bind_address));
    memset(&bind_address6, 0, sizeof(bind_address6));
    if (inet_pton(AF_INET, address, &bind_address.sin_addr) == 1) {
        bind_address.sin_family = AF_INET;
        bind_address.sin_port = htons(port);
        bound = (const struct sockaddr *)&bind_address;
    } else if (inet_pton(AF_INET6, address, &bind_address6.sin6_addr) == 1) {
        bind_address6.sin6_family = AF_INET6;
        bind_address6.sin6_port = htons(port);
        bound = (const struct sockaddr *)&bind_address6;
        flags |= MHD_USE_IPv6;
    } else {
        return NULL;
    }
    return MHD_start_daemon(
        flags, port, NULL, NULL, handler, handler_context,
        MHD_OPTION_SOCK_ADDR, bound,
        MHD_OPTION_CONNECTION_LIMIT, connection_limit,
        MHD_OPTION_CONNECTION_TIMEOUT, connection_timeout_seconds,
        MHD_OPTION_NOTIFY_COMPLETED, completed, completed_context,
        MHD_OPTION_END);
}

/// The port the daemon is bound to (useful after binding port 0), or 0 when unknown.
static inline uint16_t plmhd_bound_port(struct MHD_Daemon *daemon)
{
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info == NULL ? 0 : info->port;
}

/// The socket of a connection, or -1 when unknown.
static inline int plmhd_connection_socket(struct MHD_Connection *connection)
{
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info == NULL ? -1 : info->connect_fd;
}

/// The socket context set by the connection notifier, or NULL.
static inline void *plmhd_connection_socket_context(struct MHD_Connection *connection)
{
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info == NULL ? NULL : info->socket_context;
}

/// Writes the client's address as text (IPv4 dotted quad or IPv6) into `buffer`; returns 0, or
/// -1 when it is unknown (the buffer then holds an empty string).
static inline int plmhd_connection_client_address(struct MHD_Connection *connection, char *buffer, size_t size)
{
    buffer[0] = 0;
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (info == NULL || info->client_addr == NULL) {
        return -1;
    }
    const struct sockaddr *address = info->client_addr;
    const void *raw = NULL;
    if (address->sa_family == AF_INET) {
        raw = &((const struct sockaddr_in *)address)->sin_addr;
    } else if (address->sa_family == AF_INET6) {
        raw = &((const struct sockaddr_in6 *)address)->sin6_addr;
    }
    if (raw == NULL || inet_ntop(address->sa_family, raw, buffer, (socklen_t)size) == NULL) {
        buffer[0] = 0;
        return -1;
    }
    return 0;
}

#endif
