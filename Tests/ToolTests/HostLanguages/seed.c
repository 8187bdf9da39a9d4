/* The seed flow through photoledger.h from C: save a photo first into an album (blocking, then
   with a completion that moves the file), the errors a host meets, a thumbnail, the listings.
   Usage: seed LIBRARY PHOTO TEMP_PHOTO NOT_AN_IMAGE MISSING BAD_LIBRARY THUMBNAIL
   Prints one line per step; the test checks them and the library with the photoledger tool. */
#define _GNU_SOURCE /* pthread_getname_np */
#include <photoledger.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if PHOTOLEDGER_VERSION_NUMBER < 10000
#error "photoledger.h 1.0 or later is needed"
#endif

struct saved {
    pthread_mutex_t lock;
    pthread_cond_t done;
    int finished;
    photoledger_status status;
    char identifier[128];
    char thread[32];       /* the name of the thread the completion ran on */
    int on_caller_thread;  /* whether that was the thread that made the call */
    pthread_t caller;
    photoledger_library *close_here; /* a library the completion closes, or NULL */
};

static void on_saved(photoledger_status status, const char *result, const char *message, void *user_data) {
    struct saved *saved = user_data;
    pthread_mutex_lock(&saved->lock);
    saved->status = status;
    snprintf(saved->identifier, sizeof saved->identifier, "%s", status == PHOTOLEDGER_OK ? result : message);
    pthread_getname_np(pthread_self(), saved->thread, sizeof saved->thread);
    saved->on_caller_thread = pthread_equal(pthread_self(), saved->caller);
    if (saved->close_here != NULL) photoledger_close(saved->close_here); /* returns at once */
    saved->finished = 1;
    pthread_cond_signal(&saved->done);
    pthread_mutex_unlock(&saved->lock);
}

static void report(const char *step, photoledger_status status, char *message) {
    printf("%s %d %s %s\n", step, status, photoledger_status_name(status), message != NULL ? message : "-");
    photoledger_string_free(message);
}

int main(int argc, char **argv) {
    if (argc != 8) {
        fprintf(stderr, "usage: seed LIBRARY PHOTO TEMP_PHOTO NOT_AN_IMAGE MISSING BAD_LIBRARY THUMBNAIL\n");
        return 2;
    }
    printf("version %s %s\n", PHOTOLEDGER_VERSION_STRING, photoledger_version());

    photoledger_open_options options = PHOTOLEDGER_OPEN_OPTIONS_INIT;
    options.device = "c-host";
    options.preauthorized = 1;
    photoledger_library *library = NULL;
    char *message = NULL;
    photoledger_status status = photoledger_open(argv[1], &options, &library, &message);
    if (status != PHOTOLEDGER_OK) {
        report("open", status, message);
        return 1;
    }

    /* Blocking: a copy, the file stays. */
    char *first = NULL;
    status = photoledger_save_to_album(library, argv[2], "Trip", 0, &first, &message);
    if (status != PHOTOLEDGER_OK) {
        report("save", status, message);
        return 1;
    }
    printf("saved %s\n", first);

    /* With a completion on the worker thread, moving the temporary file. */
    struct saved saved = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, "", "", 0, pthread_self(), NULL};
    status = photoledger_save_to_album_async(library, argv[3], "Trip", PHOTOLEDGER_SAVE_MOVE_FILE, on_saved, &saved, &message);
    if (status != PHOTOLEDGER_OK) {
        report("save_async", status, message);
        return 1;
    }
    pthread_mutex_lock(&saved.lock);
    while (!saved.finished) pthread_cond_wait(&saved.done, &saved.lock);
    pthread_mutex_unlock(&saved.lock);
    printf("completion %d %s\n", saved.status, saved.identifier);
    printf("completion-thread %s %s\n", saved.thread, saved.on_caller_thread ? "caller" : "other");

    /* Failures: the file is kept whatever the flags. */
    char *identifier = NULL;
    status = photoledger_save_to_album(library, argv[4], "Trip", PHOTOLEDGER_SAVE_MOVE_FILE, &identifier, &message);
    report("not-an-image", status, message);
    status = photoledger_save_to_album(library, argv[5], "Trip", 0, &identifier, &message);
    report("missing", status, message);
    status = photoledger_save_to_album(NULL, argv[2], "Trip", 0, &identifier, &message);
    report("null-library", status, message);
    photoledger_library *bad = NULL;
    status = photoledger_open(argv[6], &options, &bad, &message);
    report("bad-library", status, message);

    /* A thumbnail through the image manager, and the listings. */
    char *json = NULL;
    status = photoledger_thumbnail(library, saved.identifier, 256, PHOTOLEDGER_CONTENT_MODE_FIT, argv[7], &json, &message);
    if (status != PHOTOLEDGER_OK) {
        report("thumbnail", status, message);
        return 1;
    }
    printf("thumbnail %s\n", json);
    photoledger_string_free(json);
    status = photoledger_fetch_albums_json(library, &json, &message);
    if (status != PHOTOLEDGER_OK) {
        report("albums", status, message);
        return 1;
    }
    printf("albums %s\n", json);
    photoledger_string_free(json);

    /* A completion that closes its own library: photoledger_close returns at once there, and
       the handle is released once the queued work is done. */
    char second_path[4096];
    snprintf(second_path, sizeof second_path, "%s.second.sqlite", argv[1]);
    photoledger_library *second = NULL;
    status = photoledger_open(second_path, &options, &second, &message);
    if (status != PHOTOLEDGER_OK) {
        report("open-second", status, message);
        return 1;
    }
    struct saved closing = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, "", "", 0, pthread_self(), second};
    status = photoledger_save_to_album_async(second, argv[2], "Trip", 0, on_saved, &closing, &message);
    if (status != PHOTOLEDGER_OK) {
        report("save-second", status, message);
        return 1;
    }
    pthread_mutex_lock(&closing.lock);
    while (!closing.finished) pthread_cond_wait(&closing.done, &closing.lock);
    pthread_mutex_unlock(&closing.lock);
    printf("closed-in-completion %d\n", closing.status);

    photoledger_string_free(first);
    photoledger_close(library);
    printf("closed\n");
    return 0;
}
