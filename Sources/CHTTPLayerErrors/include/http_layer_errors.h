#ifndef PHOTOLEDGER_HTTP_LAYER_ERRORS_H
#define PHOTOLEDGER_HTTP_LAYER_ERRORS_H

/* libmicrohttpd answers requests it cannot parse (400, 413, 414, 431, 505) itself, with HTML
   bodies, and 0.9.75 offers no option to change them. This target defines MHD_queue_response,
   which the dynamic linker binds in place of the library's own (the executable's definition comes
   first in symbol lookup, and the library calls the function through its PLT): every response
   is passed on unchanged, except a response of status 400 or above that lacks the marker header
   of the application's responses, which is the library's own error page and is answered as the
   registered factory decides. */

struct MHD_Connection;
struct MHD_Response;

/// The header every response of the application carries; responses without it are the library's.
#define PLMHD_APPLICATION_MARKER_HEADER "X-Request-Id"

/// What the factory did with the library's error page.
enum plmhd_error_answer {
    /// Keep the library's page.
    PLMHD_KEEP_LIBRARY_PAGE = 0,
    /// Queue the replacement the factory made instead.
    PLMHD_QUEUE_REPLACEMENT = 1,
    /// The factory wrote the whole answer to the connection's socket itself: the library is told
    /// that queueing failed, and closes the connection without sending anything more.
    PLMHD_ANSWERED_ON_SOCKET = 2,
};

/// Decides the answer to the library's own error page of `status` on `connection`, making
/// `*replacement` when it returns PLMHD_QUEUE_REPLACEMENT. Called on the connection's thread.
typedef enum plmhd_error_answer (*plmhd_error_response_factory)(
    struct MHD_Connection *connection, unsigned int status, struct MHD_Response **replacement);

/// Registers the factory for every daemon of the process (the last registration wins).
void plmhd_set_error_response_factory(plmhd_error_response_factory factory);

/// 1 when libmicrohttpd's calls to MHD_queue_response reach this target's definition, so that its
/// error pages are replaced; 0 when the library binds its own (for example when this definition
/// is not exported by the executable).
int plmhd_error_responses_replaceable(void);

#endif
