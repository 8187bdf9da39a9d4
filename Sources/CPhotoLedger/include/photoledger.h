/*
 * photoledger.h: the C interface of PhotoLedger (libphotoledger.so.1).
 *
 * PhotoLedger is a photo library with the programming model of Apple's Photos framework
 * (assets and albums, changed in atomic change blocks, identifiers final at once) stored as an
 * event-sourced SQLite log that syncs between devices. This header lets C, C++ and every host
 * language with a C foreign-function interface (Lua, Python, game engines) use it.
 *
 * Build and link:  cc app.c -I<folder of this header> -L<folder of the library> -lphotoledger
 *                  (`swift build -c release` makes .build/release/libPhotoLedgerC.so, whose SONAME
 *                  is libphotoledger.so.1: install it as libphotoledger.so.1 with a
 *                  libphotoledger.so link, or link it by its path)
 *
 * ---------------------------------------------------------------------------------------------
 * Conventions
 *
 * Status.      Every call that can fail returns a photoledger_status: PHOTOLEDGER_OK (0), or one
 *              of the error codes below. They are PhotoLedger's own codes: those of a library
 *              failure are PhotoKit's PHPhotosError values (PhotoLibraryError.Code in Swift),
 *              those of a sync failure stand for the kinds of SyncError, and two belong to this
 *              interface. photoledger_status_name() names each.
 *
 * Messages.    Every such call takes a last argument `char **message`. On failure it receives a
 *              newly allocated UTF-8 sentence that says what happened and what to do; on success
 *              it receives NULL. Pass NULL when you do not want it. Release it with
 *              photoledger_string_free().
 *
 * Out values.  Identifiers and JSON documents come back the same way: newly allocated UTF-8
 *              strings the caller owns and releases with photoledger_string_free(). On failure
 *              the out value is set to NULL. Out pointers may be NULL when the value is not
 *              wanted.
 *
 * Arguments.   Text arguments are NUL-terminated UTF-8; the interface copies what it keeps, so
 *              they need to stay valid only during the call. A NULL where a value is required, or
 *              text that is not UTF-8, gives PHOTOLEDGER_ERROR_INVALID_ARGUMENT. Assets and albums
 *              are named by their local identifiers (`<UUID>/L0/001` for assets, `<UUID>/L0/040`
 *              for albums).
 *
 * Threads.     A photoledger_library may be used from any number of threads at once: reads run
 *              side by side, change blocks one at a time. The only exception is
 *              photoledger_close(), which must be the last call on the handle: no other call on
 *              it may be running or start once it is called (work queued by *_async calls may
 *              be: close waits for it and calls its completions).
 *
 * Callbacks.   The *_async calls queue their work on the library's worker thread, a serial
 *              thread that the library owns (one per open library, named "photoledger", started
 *              by the first asynchronous call) and call their completion there, one at a time, in
 *              the order the calls were made. A call that returns PHOTOLEDGER_OK calls its
 *              completion exactly once; a call that returns an error never calls it. The strings
 *              a completion receives are valid only until it returns (copy them to keep them).
 *              A completion may call any function of this interface, on this library or
 *              another, including blocking ones and photoledger_close() of its own library (the
 *              handle is then released once the queued work is done). A completion must not
 *              unwind (no C++ exception or longjmp across it).
 *
 * Unloading.   dlclose() leaves the library loaded (it is linked with -z nodelete): Swift code
 *              cannot be unloaded, and its threads may still be ending.
 *
 * Versions.    The macros below give the version of the header; photoledger_version() that of
 *              the library loaded. Every symbol carries the ELF symbol version PHOTOLEDGER_1.0;
 *              later additions come in new version nodes (PHOTOLEDGER_1.1, ...), and a program
 *              built against 1.0 runs with every libphotoledger.so.1.
 *
 * Re-entrancy. Every function may be called from a completion, and from several threads at once,
 *              as above. No function calls back into the caller except through a completion.
 */
#ifndef PHOTOLEDGER_H
#define PHOTOLEDGER_H

#include <stddef.h>

#define PHOTOLEDGER_VERSION_MAJOR 1
#define PHOTOLEDGER_VERSION_MINOR 0
#define PHOTOLEDGER_VERSION_PATCH 0
#define PHOTOLEDGER_VERSION_STRING "1.0.0"
/* MAJOR * 10000 + MINOR * 100 + PATCH, for `#if PHOTOLEDGER_VERSION_NUMBER >= 10100`. */
#define PHOTOLEDGER_VERSION_NUMBER 10000

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------------
 * Status codes
 */

/* PHOTOLEDGER_OK, or one of the PHOTOLEDGER_ERROR_* codes. Later versions may add codes: treat an
   unknown one as a failure and show its message. */
typedef int photoledger_status;

enum {
    PHOTOLEDGER_OK = 0,

    /* A library failure: PhotoLibraryError.Code, whose raw values are PhotoKit's PHPhotosError. */
    PHOTOLEDGER_ERROR_INTERNAL = -1,                                  /* internalError: storage failed, the file is not a library or is damaged */
    PHOTOLEDGER_ERROR_USER_CANCELLED = 3072,                          /* userCancelled */
    PHOTOLEDGER_ERROR_PERSISTENT_CHANGE_TOKEN_EXPIRED = 3105,         /* persistentChangeTokenExpired */
    PHOTOLEDGER_ERROR_NETWORK_ACCESS_REQUIRED = 3164,                 /* networkAccessRequired: the photo is not on this device and no remote can give it */
    PHOTOLEDGER_ERROR_NETWORK = 3169,                                 /* networkError */
    PHOTOLEDGER_ERROR_IDENTIFIER_NOT_FOUND = 3201,                    /* identifierNotFound: no asset or album has the identifier */
    PHOTOLEDGER_ERROR_PERSISTENT_CHANGE_DETAILS_UNAVAILABLE = 3210,   /* persistentChangeDetailsUnavailable */
    PHOTOLEDGER_ERROR_CHANGE_NOT_SUPPORTED = 3300,                    /* changeNotSupported: the change does not apply (a bad device name, an asset in Recently Deleted, a newer library file) */
    PHOTOLEDGER_ERROR_OPERATION_INTERRUPTED = 3301,                   /* operationInterrupted: an index out of range, a clock too far off */
    PHOTOLEDGER_ERROR_INVALID_RESOURCE = 3302,                        /* invalidResource: the file is no photo or video, or is damaged */
    PHOTOLEDGER_ERROR_MISSING_RESOURCE = 3303,                        /* missingResource: the file does not exist, or a photo is not on this device yet */
    PHOTOLEDGER_ERROR_NOT_ENOUGH_SPACE = 3305,                        /* notEnoughSpace: the disk is full */
    PHOTOLEDGER_ERROR_REQUEST_NOT_SUPPORTED_FOR_ASSET = 3306,         /* requestNotSupportedForAsset */
    PHOTOLEDGER_ERROR_ACCESS_RESTRICTED = 3310,                       /* accessRestricted: by policy or by this device's sync token */
    PHOTOLEDGER_ERROR_ACCESS_USER_DENIED = 3311,                      /* accessUserDenied: access not granted (see photoledger_set_authorization_status) */

    /* A sync failure: the kinds of SyncError. */
    PHOTOLEDGER_ERROR_SYNC_INVALID_REMOTE = 4001,                     /* invalidRemote: the remote URL or token is malformed */
    PHOTOLEDGER_ERROR_SYNC_SERVER_UNREACHABLE = 4002,                 /* serverUnreachable: refused, DNS, timeout, TLS */
    PHOTOLEDGER_ERROR_SYNC_AUTHENTICATION_REFUSED = 4003,             /* authenticationRefused: unknown or revoked token */
    PHOTOLEDGER_ERROR_SYNC_ACCESS_FORBIDDEN = 4004,                   /* accessForbidden: the token is not for this library, or its scope forbids the request */
    PHOTOLEDGER_ERROR_SYNC_CLOCK_SKEW = 4005,                         /* clockSkew: this device's clock is too far ahead of the server's */
    PHOTOLEDGER_ERROR_SYNC_SERVER_ERROR = 4006,                       /* serverError: the server failed */
    PHOTOLEDGER_ERROR_SYNC_INVALID_RESPONSE = 4007,                   /* invalidResponse: the server's answer broke the protocol */
    PHOTOLEDGER_ERROR_SYNC_NO_REMOTE = 4008,                          /* noRemote: no remote is set (photoledger_set_remote) */
    PHOTOLEDGER_ERROR_SYNC_RESOURCE_UNAVAILABLE = 4009,               /* resourceUnavailable: the server lacks a photo an event refers to */

    /* This interface's own. */
    PHOTOLEDGER_ERROR_INVALID_ARGUMENT = 5001                         /* a NULL where a value is required, text that is not UTF-8, an unknown flag or value */
};

/* The name of a status code ("ok", "identifierNotFound", "syncNoRemote", "invalidArgument"), or
   "unknown". The string is static: do not free it. */
const char *photoledger_status_name(photoledger_status status);

/* The version of the library loaded, such as "1.0.0". The string is static: do not free it. */
const char *photoledger_version(void);

/* Releases a string this interface returned (a message, an identifier, a JSON document). NULL is
   ignored. */
void photoledger_string_free(char *string);

/* ---------------------------------------------------------------------------------------------
 * Opening and closing a library
 */

/* An open library: an opaque handle, created by photoledger_open, released by photoledger_close. */
typedef struct photoledger_library photoledger_library;

/* How a library is opened. Initialize with PHOTOLEDGER_OPEN_OPTIONS_INIT, then set fields: later
   versions add fields at the end, and `size` tells the library which ones a caller knows. */
typedef struct photoledger_open_options {
    /* sizeof(photoledger_open_options), as PHOTOLEDGER_OPEN_OPTIONS_INIT sets it. */
    size_t size;
    /* This device's name in the library (letters, digits, '.', '_', '-'; at most 64). NULL: the
       name recorded in the library by an earlier open, else one made from the host name (as the
       photoledger command does). The first open of a library records its name. */
    const char *device;
    /* Nonzero: read and write access is granted at once, for a program that owns its library.
       Zero: the access granted earlier with photoledger_set_authorization_status applies, and
       without it every read and change fails with PHOTOLEDGER_ERROR_ACCESS_USER_DENIED. */
    int preauthorized;
} photoledger_open_options;

#define PHOTOLEDGER_OPEN_OPTIONS_INIT { sizeof(photoledger_open_options), NULL, 0 }

/* Opens the library file at `path`, creating it (not its folder) when it does not exist. On
   success *library receives a handle to release with photoledger_close. `options` may be NULL
   (the recorded device name, no access granted). Errors: PHOTOLEDGER_ERROR_INTERNAL when the file
   cannot be opened or is not a library (a missing folder, a file of something else),
   PHOTOLEDGER_ERROR_CHANGE_NOT_SUPPORTED for an invalid device name or a library made by a newer
   PhotoLedger. */
photoledger_status photoledger_open(
    const char *path, const photoledger_open_options *options, photoledger_library **library, char **message);

/* Closes a library: waits for the work queued by *_async calls (their completions are called),
   stops the worker thread and releases the handle. Called from a completion of this library, it
   returns at once and the handle is released once the queued work is done. NULL is ignored. */
void photoledger_close(photoledger_library *library);

/* ---------------------------------------------------------------------------------------------
 * Authorization (PhotoKit's levels and statuses)
 */

enum {
    PHOTOLEDGER_ACCESS_ADD_ONLY = 1,   /* create assets only: no fetching or reading */
    PHOTOLEDGER_ACCESS_READ_WRITE = 2  /* read and change the library */
};

enum {
    PHOTOLEDGER_AUTHORIZATION_NOT_DETERMINED = 0,
    PHOTOLEDGER_AUTHORIZATION_RESTRICTED = 1,
    PHOTOLEDGER_AUTHORIZATION_DENIED = 2,
    PHOTOLEDGER_AUTHORIZATION_AUTHORIZED = 3,
    PHOTOLEDGER_AUTHORIZATION_LIMITED = 4
};

/* The authorization status (PHOTOLEDGER_AUTHORIZATION_*) for an access level, or -1 for a NULL
   library or an unknown level. */
int photoledger_authorization_status(photoledger_library *library, int access_level);

/* Records the user's answer for an access level, as a host's own permission prompt would. */
photoledger_status photoledger_set_authorization_status(
    photoledger_library *library, int access_level, int authorization_status, char **message);

/* ---------------------------------------------------------------------------------------------
 * Saving photos and videos
 */

/* Flags of photoledger_save_to_album. */
enum {
    /* Move the file into the library: it is removed once the save has committed. Without this
       flag the file is copied and left in place. */
    PHOTOLEDGER_SAVE_MOVE_FILE = 1
};

/* Called when an asynchronous call ends, on the library's worker thread (see Callbacks above).
   `status` is the call's status; `result` its value on success (the new asset's local
   identifier, a JSON report), NULL on failure; `message` NULL on success, the error's message on
   failure; `user_data` what the call was given. */
typedef void (*photoledger_completion)(photoledger_status status, const char *result, const char *message, void *user_data);

/* Saves the photo or video (as its bytes say: JPEG, PNG, GIF, HEIC, WebP, AVIF, MP4, QuickTime)
   at `file_path` as a new asset and puts it first in the album titled `album_title`, creating the
   album when no album has that title (the oldest one when several have it). In one change block:
   the asset and the album change commit together, or nothing does. `album_title` may be NULL to
   save into the library only. On success *local_identifier receives the new asset's identifier.

   The source file: with PHOTOLEDGER_SAVE_MOVE_FILE it is removed after the commit; on failure it
   is always kept, unchanged, whatever the flags.

   Errors: PHOTOLEDGER_ERROR_MISSING_RESOURCE (no such file), PHOTOLEDGER_ERROR_INVALID_RESOURCE
   (not a photo or video, a damaged or truncated one, not a regular file),
   PHOTOLEDGER_ERROR_ACCESS_USER_DENIED / _ACCESS_RESTRICTED (no write access),
   PHOTOLEDGER_ERROR_NOT_ENOUGH_SPACE. */
photoledger_status photoledger_save_to_album(
    photoledger_library *library, const char *file_path, const char *album_title, unsigned flags, char **local_identifier,
    char **message);

/* photoledger_save_to_album on the library's worker thread: returns at once, and `completion`
   receives the status, the new asset's identifier and the message. Returns
   PHOTOLEDGER_ERROR_INVALID_ARGUMENT (and never calls `completion`) for a NULL library, file
   path or completion, or text that is not UTF-8. */
photoledger_status photoledger_save_to_album_async(
    photoledger_library *library, const char *file_path, const char *album_title, unsigned flags, photoledger_completion completion,
    void *user_data, char **message);

/* ---------------------------------------------------------------------------------------------
 * Albums
 */

/* Creates an album titled `title` (titles need not be unique); *album_identifier receives its
   identifier. */
photoledger_status photoledger_create_album(
    photoledger_library *library, const char *title, char **album_identifier, char **message);

/* Renames an album. */
photoledger_status photoledger_rename_album(photoledger_library *library, const char *album, const char *title, char **message);

/* Deletes an album; its assets stay in the library. */
photoledger_status photoledger_delete_album(photoledger_library *library, const char *album, char **message);

/* Appends assets at the end of an album; members already in it stay where they are. `assets`
   holds `count` local identifiers. */
photoledger_status photoledger_add_to_album(
    photoledger_library *library, const char *album, const char *const *assets, size_t count, char **message);

/* Inserts assets at `index` of an album (0 is the first place, the cover), in the order given.
   Indexes count the album's assets that are not hidden, as in PhotoKit.
   PHOTOLEDGER_ERROR_OPERATION_INTERRUPTED when `index` is past the end. */
photoledger_status photoledger_insert_into_album(
    photoledger_library *library, const char *album, const char *const *assets, size_t count, size_t index, char **message);

/* Removes assets from an album; they stay in the library. */
photoledger_status photoledger_remove_from_album(
    photoledger_library *library, const char *album, const char *const *assets, size_t count, char **message);

/* ---------------------------------------------------------------------------------------------
 * Assets
 */

/* Marks assets as favorites (`favorite` nonzero) or not. */
photoledger_status photoledger_set_favorite(
    photoledger_library *library, const char *const *assets, size_t count, int favorite, char **message);

/* Hides assets (`hidden` nonzero) or shows them again. */
photoledger_status photoledger_set_hidden(
    photoledger_library *library, const char *const *assets, size_t count, int hidden, char **message);

/* Moves assets to Recently Deleted; their album memberships come back on recovery. */
photoledger_status photoledger_delete_assets(photoledger_library *library, const char *const *assets, size_t count, char **message);

/* Brings assets back from Recently Deleted. */
photoledger_status photoledger_recover_assets(photoledger_library *library, const char *const *assets, size_t count, char **message);

/* Which rendition photoledger_export writes (PhotoKit's version values). */
enum {
    PHOTOLEDGER_IMAGE_CURRENT = 0,     /* the edited rendition when there is one, else the original */
    PHOTOLEDGER_IMAGE_UNADJUSTED = 1,  /* the bytes the asset was created with */
    PHOTOLEDGER_IMAGE_ORIGINAL = 2     /* the same, the highest-fidelity original */
};

/* Writes an asset's photo or video (exactly the stored bytes, checked against their SHA-256) to
   a new file at `destination`. PHOTOLEDGER_ERROR_INVALID_ARGUMENT when the file exists;
   PHOTOLEDGER_ERROR_MISSING_RESOURCE when the photo is not on this device yet (sync first). A
   failure leaves no file. */
photoledger_status photoledger_export(
    photoledger_library *library, const char *asset, int image_version, const char *destination, char **message);

/* How photoledger_thumbnail fits the picture in its size (PhotoKit's content modes). */
enum {
    PHOTOLEDGER_CONTENT_MODE_FIT = 0,  /* the whole picture inside the size: its longer side the box's */
    PHOTOLEDGER_CONTENT_MODE_FILL = 1  /* the picture covering the size: its shorter side the box's */
};

/* Writes an asset's image from the library's image manager to a new file at `destination`, as
   `photoledger thumbnail` does: the rendition for the smallest box of 256, 512, 1024 or 2048
   pixels that holds `size` (larger sizes get the full size), upright, a JPEG (a PNG when the
   picture has transparent pixels); a video's first frame. Renditions are cached beside the
   library, so asking again decodes nothing; bytes not on this device are downloaded from the
   remote when one is set. *json receives {"localIdentifier", "file", "pixelWidth",
   "pixelHeight", "uniformTypeIdentifier", "bytes"}. Errors: PHOTOLEDGER_ERROR_INVALID_ARGUMENT
   (`size` 0, an unknown mode, an existing destination), PHOTOLEDGER_ERROR_IDENTIFIER_NOT_FOUND,
   PHOTOLEDGER_ERROR_MISSING_RESOURCE (the photo is not on this device and cannot be downloaded),
   PHOTOLEDGER_ERROR_INVALID_RESOURCE (bytes the decoders refuse). A failure leaves no file. */
photoledger_status photoledger_thumbnail(
    photoledger_library *library, const char *asset, unsigned size, int content_mode, const char *destination, char **json,
    char **message);

/* photoledger_thumbnail on the library's worker thread; `completion` receives the JSON as its
   result. Returns PHOTOLEDGER_ERROR_INVALID_ARGUMENT (and never calls `completion`) for a NULL
   library, asset, destination or completion, a `size` of 0 or an unknown mode. */
photoledger_status photoledger_thumbnail_async(
    photoledger_library *library, const char *asset, unsigned size, int content_mode, const char *destination,
    photoledger_completion completion, void *user_data, char **message);

/* ---------------------------------------------------------------------------------------------
 * Listings, as JSON in the shapes of the `photoledger` command's --json output (the README
 * documents them; keys always in the same order, one line, UTF-8)
 */

/* Flags of photoledger_fetch_assets_json. */
enum {
    PHOTOLEDGER_ASSETS_FAVORITES = 1,  /* only favorites */
    PHOTOLEDGER_ASSETS_DELETED = 2     /* only assets in Recently Deleted */
};

/* The assets as `photoledger assets --json` lists them: those of `album` in album order when it
   is not NULL, else every asset not in Recently Deleted (hidden ones included), filtered by
   `flags`. An array of {"localIdentifier", "mediaType", "pixelWidth", "pixelHeight",
   "creationDate", "isFavorite", "isHidden", "isDeleted", "sha256"}. */
photoledger_status photoledger_fetch_assets_json(
    photoledger_library *library, const char *album, unsigned flags, char **json, char **message);

/* The albums as `photoledger albums --json` lists them: an array of {"localIdentifier", "title",
   "assetIdentifiers"}, the assets in album order (hidden ones included). */
photoledger_status photoledger_fetch_albums_json(photoledger_library *library, char **json, char **message);

/* The audit trail as `photoledger history --json` lists it: every event with the fields it
   changed, old and new values, and whether each write is in effect. `object` (an asset or album
   identifier) and `device` (a device name) narrow it; either may be NULL. */
photoledger_status photoledger_history_json(
    photoledger_library *library, const char *object, const char *device, char **json, char **message);

/* The library's status as `photoledger status --json` gives it: counts, events not yet synced,
   the remote, the last sync. */
photoledger_status photoledger_status_json(photoledger_library *library, char **json, char **message);

/* ---------------------------------------------------------------------------------------------
 * Sync
 */

/* Sets the server library this library syncs with (`http://HOST:PORT/v1/libraries/NAME`) and
   this device's token, stored in the library (never synced).
   PHOTOLEDGER_ERROR_SYNC_INVALID_REMOTE for a malformed URL or token. */
photoledger_status photoledger_set_remote(
    photoledger_library *library, const char *library_url, const char *token, char **message);

/* Syncs with the remote: uploads photos, pushes events, pulls events, downloads photos.
   *report_json receives the report as `photoledger sync --json` gives it. */
photoledger_status photoledger_sync(photoledger_library *library, char **report_json, char **message);

/* photoledger_sync on the library's worker thread; `completion` receives the report as its
   result. Returns PHOTOLEDGER_ERROR_INVALID_ARGUMENT (and never calls `completion`) for a NULL
   library or completion. */
photoledger_status photoledger_sync_async(
    photoledger_library *library, photoledger_completion completion, void *user_data, char **message);

#ifdef __cplusplus
}
#endif

#endif /* PHOTOLEDGER_H */
