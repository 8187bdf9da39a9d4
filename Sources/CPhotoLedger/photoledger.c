// The parts of the C interface that need no Swift: the version, the names of the status codes and
// the release of returned strings (which the Swift side allocates with malloc).
#include "photoledger.h"

#include <stdlib.h>

const char *photoledger_version(void) { return PHOTOLEDGER_VERSION_STRING; }

void photoledger_string_free(char *string) { free(string); }

const char *photoledger_status_name(photoledger_status status) {
    switch (status) {
    case PHOTOLEDGER_OK: return "ok";
    case PHOTOLEDGER_ERROR_INTERNAL: return "internalError";
    case PHOTOLEDGER_ERROR_USER_CANCELLED: return "userCancelled";
    case PHOTOLEDGER_ERROR_PERSISTENT_CHANGE_TOKEN_EXPIRED: return "persistentChangeTokenExpired";
    case PHOTOLEDGER_ERROR_NETWORK_ACCESS_REQUIRED: return "networkAccessRequired";
    case PHOTOLEDGER_ERROR_NETWORK: return "networkError";
    case PHOTOLEDGER_ERROR_IDENTIFIER_NOT_FOUND: return "identifierNotFound";
    case PHOTOLEDGER_ERROR_PERSISTENT_CHANGE_DETAILS_UNAVAILABLE: return "persistentChangeDetailsUnavailable";
    case PHOTOLEDGER_ERROR_CHANGE_NOT_SUPPORTED: return "changeNotSupported";
    case PHOTOLEDGER_ERROR_OPERATION_INTERRUPTED: return "operationInterrupted";
    case PHOTOLEDGER_ERROR_INVALID_RESOURCE: return "invalidResource";
    case PHOTOLEDGER_ERROR_MISSING_RESOURCE: return "missingResource";
    case PHOTOLEDGER_ERROR_NOT_ENOUGH_SPACE: return "notEnoughSpace";
    case PHOTOLEDGER_ERROR_REQUEST_NOT_SUPPORTED_FOR_ASSET: return "requestNotSupportedForAsset";
    case PHOTOLEDGER_ERROR_ACCESS_RESTRICTED: return "accessRestricted";
    case PHOTOLEDGER_ERROR_ACCESS_USER_DENIED: return "accessUserDenied";
    case PHOTOLEDGER_ERROR_SYNC_INVALID_REMOTE: return "syncInvalidRemote";
    case PHOTOLEDGER_ERROR_SYNC_SERVER_UNREACHABLE: return "syncServerUnreachable";
    case PHOTOLEDGER_ERROR_SYNC_AUTHENTICATION_REFUSED: return "syncAuthenticationRefused";
    case PHOTOLEDGER_ERROR_SYNC_ACCESS_FORBIDDEN: return "syncAccessForbidden";
    case PHOTOLEDGER_ERROR_SYNC_CLOCK_SKEW: return "syncClockSkew";
    case PHOTOLEDGER_ERROR_SYNC_SERVER_ERROR: return "syncServerError";
    case PHOTOLEDGER_ERROR_SYNC_INVALID_RESPONSE: return "syncInvalidResponse";
    case PHOTOLEDGER_ERROR_SYNC_NO_REMOTE: return "syncNoRemote";
    case PHOTOLEDGER_ERROR_SYNC_RESOURCE_UNAVAILABLE: return "syncResourceUnavailable";
    case PHOTOLEDGER_ERROR_INVALID_ARGUMENT: return "invalidArgument";
    default: return "unknown";
    }
}
