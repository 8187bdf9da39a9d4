/* One handle used from several threads at once: each saves photos into the same album, finding
   or creating it, while another lists the albums. The album is created once and holds every
   photo. Usage: threads LIBRARY PHOTO */
#include <photoledger.h>

#include <pthread.h>
#include <stdio.h>

enum { SAVERS = 4, SAVES = 5 };

static photoledger_library *library;
static const char *photo;
static int failures;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void *save(void *unused) {
    (void)unused;
    for (int i = 0; i < SAVES; i++) {
        char *identifier = NULL, *message = NULL;
        photoledger_status status = photoledger_save_to_album(library, photo, "Trip", 0, &identifier, &message);
        if (status != PHOTOLEDGER_OK) {
            pthread_mutex_lock(&lock);
            failures++;
            fprintf(stderr, "save: %s\n", message);
            pthread_mutex_unlock(&lock);
        }
        photoledger_string_free(identifier);
        photoledger_string_free(message);
    }
    return NULL;
}

static void *list(void *unused) {
    (void)unused;
    for (int i = 0; i < SAVERS * SAVES; i++) {
        char *json = NULL, *message = NULL;
        if (photoledger_fetch_albums_json(library, &json, &message) != PHOTOLEDGER_OK) {
            pthread_mutex_lock(&lock);
            failures++;
            fprintf(stderr, "albums: %s\n", message);
            pthread_mutex_unlock(&lock);
        }
        photoledger_string_free(json);
        photoledger_string_free(message);
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 3) return 2;
    photo = argv[2];
    photoledger_open_options options = PHOTOLEDGER_OPEN_OPTIONS_INIT;
    options.device = "c-threads";
    options.preauthorized = 1;
    char *message = NULL;
    if (photoledger_open(argv[1], &options, &library, &message) != PHOTOLEDGER_OK) {
        fprintf(stderr, "open: %s\n", message);
        return 1;
    }
    pthread_t threads[SAVERS + 1];
    for (int i = 0; i < SAVERS; i++) pthread_create(&threads[i], NULL, save, NULL);
    pthread_create(&threads[SAVERS], NULL, list, NULL);
    for (int i = 0; i <= SAVERS; i++) pthread_join(threads[i], NULL);
    photoledger_close(library);
    printf("failures %d\n", failures);
    return failures == 0 ? 0 : 1;
}
