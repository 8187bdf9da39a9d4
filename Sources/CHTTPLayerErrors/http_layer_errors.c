#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <microhttpd.h>
#include "http_layer_errors.h"

typedef enum MHD_Result (*queue_response_function)(struct MHD_Connection *, unsigned int, struct MHD_Response *);

static queue_response_function library_queue_response = NULL;
static pthread_once_t library_lookup = PTHREAD_ONCE_INIT;
static _Atomic(plmhd_error_response_factory) error_response_factory = NULL;

static void find_library_queue_response(void)
{
    library_queue_response = (queue_response_function)dlsym(RTLD_NEXT, "MHD_queue_response");
}

enum MHD_Result MHD_queue_response(struct MHD_Connection *connection, unsigned int status_code, struct MHD_Response *response)
{
    pthread_once(&library_lookup, find_library_queue_response);
    if (library_queue_response == NULL) {
        return MHD_NO; /* Not found: plmhd_error_responses_replaceable() reports it at start. */
    }
    plmhd_error_response_factory factory = atomic_load(&error_response_factory);
    if (factory == NULL || status_code < 400 || response == NULL
        || MHD_get_response_header(response, PLMHD_APPLICATION_MARKER_HEADER) != NULL) {
        return library_queue_response(connection, status_code, response);
    }
    struct MHD_Response *replacement = NULL;
    switch (factory(connection, status_code, &replacement)) {
    case PLMHD_ANSWERED_ON_SOCKET:
        return MHD_NO;
    case PLMHD_QUEUE_REPLACEMENT:
        if (replacement != NULL) {
            enum MHD_Result result = library_queue_response(connection, status_code, replacement);
            MHD_destroy_response(replacement);
            return result;
        }
        break;
    case PLMHD_KEEP_LIBRARY_PAGE:
        break;
    }
    return library_queue_response(connection, status_code, response);
}

void plmhd_set_error_response_factory(plmhd_error_response_factory factory)
{
    atomic_store(&error_response_factory, factory);
}

int plmhd_error_responses_replaceable(void)
{
    pthread_once(&library_lookup, find_library_queue_response);
    return library_queue_response != NULL && dlsym(RTLD_DEFAULT, "MHD_queue_response") == (void *)&MHD_queue_response;
}
