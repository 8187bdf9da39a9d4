/*
 * photoledger_lua.c: the Lua 5.4 module `photoledger` over libphotoledger (photoledger.h).
 *
 *     local pl = require "photoledger"
 *     local lib = assert(pl.open("/path/library.sqlite", { device = "phone" }))
 *     lib:save_to_album("/tmp/shot.jpg", "Trip", function(ok, id, err) print(ok, id, err) end, { move = true })
 *     lib:wait()
 *
 * Errors follow Lua's style: a failed call returns nil, the message and the status name
 * ("missingResource", as photoledger_status_name gives it); a wrong argument type raises.
 *
 * Threads: a Lua state is single-threaded, so callbacks run only on the thread that runs the
 * state. An asynchronous call queues its work on the library's worker thread, whose completion
 * only records the outcome; the callback runs when the script calls lib:poll() (the outcomes
 * ready now) or lib:wait() (every outcome, blocking until the last queued call ends), or inside
 * the call itself when it is given { blocking = true }. An error raised by a callback propagates
 * out of poll() or wait() (the call's outcome is consumed); the outcomes not delivered yet stay
 * queued for the next poll() or wait().
 */
#include <lauxlib.h>
#include <lua.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "photoledger.h"

#define LIBRARY_METATABLE "photoledger.library"

/* An outcome of an asynchronous call, recorded by its completion on the worker thread. */
struct outcome {
    struct outcome *next;
    photoledger_status status;
    char *result;  /* malloc'd copy, or NULL */
    char *message; /* malloc'd copy, or NULL */
    int callback;  /* registry reference of the Lua callback */
};

/* The userdata of an open library. */
struct library {
    photoledger_library *handle; /* NULL once closed */
    pthread_mutex_t lock;
    pthread_cond_t changed;
    struct outcome *first, *last; /* outcomes not delivered yet, in completion order */
    int outstanding;              /* calls queued whose completion has not run yet */
};

/* What an asynchronous call passes its completion as user data. */
struct request {
    struct library *library;
    int callback;
};

static char *copy(const char *text) {
    if (text == NULL) return NULL;
    size_t length = strlen(text) + 1;
    char *duplicate = malloc(length);
    if (duplicate != NULL) memcpy(duplicate, text, length);
    return duplicate;
}

/* Runs on the library's worker thread: records the outcome, touches no Lua state. */
static void complete(photoledger_status status, const char *result, const char *message, void *user_data) {
    struct request *request = user_data;
    struct library *library = request->library;
    struct outcome *outcome = calloc(1, sizeof *outcome);
    pthread_mutex_lock(&library->lock);
    if (outcome != NULL) {
        outcome->status = status;
        outcome->result = copy(result);
        outcome->message = copy(status == PHOTOLEDGER_OK ? NULL : (message != NULL ? message : "the call failed"));
        if (status != PHOTOLEDGER_OK && outcome->message == NULL) outcome->status = PHOTOLEDGER_ERROR_INTERNAL;
        outcome->callback = request->callback;
        if (library->last != NULL) library->last->next = outcome; else library->first = outcome;
        library->last = outcome;
    }
    library->outstanding -= 1;
    pthread_cond_broadcast(&library->changed);
    pthread_mutex_unlock(&library->lock);
    free(request);
}

static void free_outcome(struct outcome *outcome) {
    free(outcome->result);
    free(outcome->message);
    free(outcome);
}

/* nil, message, status name: the failure of a call. Takes ownership of `message`. */
static int fail(lua_State *L, photoledger_status status, char *message) {
    lua_pushnil(L);
    lua_pushstring(L, message != NULL ? message : "the call failed");
    lua_pushstring(L, photoledger_status_name(status));
    photoledger_string_free(message);
    return 3;
}

/* Pushes a returned string (or true when there is none) and releases it. */
static int succeed(lua_State *L, char *value) {
    if (value != NULL) lua_pushstring(L, value); else lua_pushboolean(L, 1);
    photoledger_string_free(value);
    return 1;
}

static struct library *check_library(lua_State *L) {
    struct library *library = luaL_checkudata(L, 1, LIBRARY_METATABLE);
    if (library->handle == NULL) luaL_error(L, "the library is closed; open it again with photoledger.open");
    return library;
}

/* An identifier or a table of identifiers at `index`, as a malloc'd array of pointers into Lua
   strings kept on the stack (valid while the argument is). */
static const char **identifiers(lua_State *L, int index, size_t *count) {
    if (lua_type(L, index) == LUA_TSTRING) {
        const char **list = lua_newuserdatauv(L, sizeof(char *), 0); /* garbage-collected */
        list[0] = lua_tostring(L, index);
        *count = 1;
        return list;
    }
    luaL_checktype(L, index, LUA_TTABLE);
    size_t n = (size_t)luaL_len(L, index);
    const char **list = lua_newuserdatauv(L, (n > 0 ? n : 1) * sizeof(char *), 0);
    for (size_t i = 0; i < n; i++) {
        lua_geti(L, index, (lua_Integer)(i + 1));
        if (lua_type(L, -1) != LUA_TSTRING) luaL_error(L, "identifier %d of the list is not a string", (int)(i + 1));
        list[i] = lua_tostring(L, -1);
        lua_pop(L, 1); /* the table keeps the string alive */
    }
    *count = n;
    return list;
}

/* Whether the optional table at `index` has `key` set to true. */
static int option(lua_State *L, int index, const char *key) {
    if (lua_type(L, index) != LUA_TTABLE) return 0;
    lua_getfield(L, index, key);
    int value = lua_toboolean(L, -1);
    lua_pop(L, 1);
    return value;
}

/* Delivers one outcome to its callback: removes it from the queue, then calls it. */
static void deliver(lua_State *L, struct outcome *outcome) {
    lua_rawgeti(L, LUA_REGISTRYINDEX, outcome->callback);
    luaL_unref(L, LUA_REGISTRYINDEX, outcome->callback);
    /* The strings are copied onto the stack before the outcome is freed, so a raising callback
       leaks nothing. */
    photoledger_status status = outcome->status;
    lua_pushboolean(L, status == PHOTOLEDGER_OK);
    if (outcome->result != NULL) lua_pushstring(L, outcome->result); else lua_pushnil(L);
    if (outcome->message != NULL) lua_pushstring(L, outcome->message); else lua_pushnil(L);
    lua_pushstring(L, photoledger_status_name(status));
    free_outcome(outcome);
    lua_call(L, 4, 0);
}

static struct outcome *take(struct library *library, int block) {
    pthread_mutex_lock(&library->lock);
    while (block && library->first == NULL && library->outstanding > 0) pthread_cond_wait(&library->changed, &library->lock);
    struct outcome *outcome = library->first;
    if (outcome != NULL) {
        library->first = outcome->next;
        if (library->first == NULL) library->last = NULL;
    }
    pthread_mutex_unlock(&library->lock);
    return outcome;
}

/* lib:poll(): runs the callbacks of the calls that have ended; returns how many ran. */
static int library_poll(lua_State *L) {
    struct library *library = check_library(L);
    lua_Integer delivered = 0;
    struct outcome *outcome;
    while (library->handle != NULL && (outcome = take(library, 0)) != NULL) {
        delivered++;
        deliver(L, outcome);
    }
    lua_pushinteger(L, delivered);
    return 1;
}

/* lib:wait(): runs every queued call's callback, waiting for the calls still running; returns
   how many ran. */
static int library_wait(lua_State *L) {
    struct library *library = check_library(L);
    lua_Integer delivered = 0;
    struct outcome *outcome;
    while (library->handle != NULL && (outcome = take(library, 1)) != NULL) {
        delivered++;
        deliver(L, outcome);
    }
    lua_pushinteger(L, delivered);
    return 1;
}

/* lib:pending(): how many asynchronous calls have not had their callback run yet. */
static int library_pending(lua_State *L) {
    struct library *library = check_library(L);
    pthread_mutex_lock(&library->lock);
    lua_Integer count = library->outstanding;
    for (struct outcome *outcome = library->first; outcome != NULL; outcome = outcome->next) count++;
    pthread_mutex_unlock(&library->lock);
    lua_pushinteger(L, count);
    return 1;
}

/* A request for an asynchronous call whose callback is the function at `callback`: counted as
   outstanding until its completion runs. */
static struct request *new_request(lua_State *L, struct library *library, int callback) {
    struct request *request = malloc(sizeof *request);
    if (request == NULL) luaL_error(L, "out of memory");
    request->library = library;
    lua_pushvalue(L, callback);
    request->callback = luaL_ref(L, LUA_REGISTRYINDEX);
    pthread_mutex_lock(&library->lock);
    library->outstanding += 1;
    pthread_mutex_unlock(&library->lock);
    return request;
}

/* What an asynchronous call returns: true once queued; nil, message, status name when the call
   was refused, whose completion will then never run. */
static int queued(lua_State *L, struct request *request, photoledger_status status, char *message) {
    if (status == PHOTOLEDGER_OK) {
        lua_pushboolean(L, 1);
        return 1;
    }
    struct library *library = request->library;
    pthread_mutex_lock(&library->lock);
    library->outstanding -= 1;
    pthread_mutex_unlock(&library->lock);
    luaL_unref(L, LUA_REGISTRYINDEX, request->callback);
    free(request);
    return fail(L, status, message);
}

/* ------------------------------------------------------------------------------------------- */

/* lib:save_to_album(path, album [, callback] [, { move = true, blocking = true }]) */
static int library_save_to_album(lua_State *L) {
    struct library *library = check_library(L);
    const char *path = luaL_checkstring(L, 2);
    const char *album = luaL_optstring(L, 3, NULL);
    int callback = lua_type(L, 4) == LUA_TFUNCTION ? 4 : 0;
    int options = lua_type(L, 4) == LUA_TTABLE ? 4 : 5;
    if (!callback && !lua_isnoneornil(L, 4) && lua_type(L, 4) != LUA_TTABLE) luaL_typeerror(L, 4, "function, table or nil");
    if (!lua_isnoneornil(L, options)) luaL_checktype(L, options, LUA_TTABLE);
    unsigned flags = option(L, options, "move") ? PHOTOLEDGER_SAVE_MOVE_FILE : 0;
    if (!callback || option(L, options, "blocking")) {
        char *identifier = NULL, *message = NULL;
        photoledger_status status = photoledger_save_to_album(library->handle, path, album, flags, &identifier, &message);
        if (!callback) return status == PHOTOLEDGER_OK ? succeed(L, identifier) : fail(L, status, message);
        lua_pushvalue(L, callback);
        lua_pushboolean(L, status == PHOTOLEDGER_OK);
        if (identifier != NULL) lua_pushstring(L, identifier); else lua_pushnil(L);
        if (message != NULL) lua_pushstring(L, message); else lua_pushnil(L);
        lua_pushstring(L, photoledger_status_name(status));
        photoledger_string_free(identifier);
        photoledger_string_free(message);
        lua_call(L, 4, 0);
        lua_pushboolean(L, status == PHOTOLEDGER_OK);
        return 1;
    }
    struct request *request = new_request(L, library, callback);
    char *message = NULL;
    photoledger_status status = photoledger_save_to_album_async(library->handle, path, album, flags, complete, request, &message);
    return queued(L, request, status, message);
}

/* lib:create_album(title) -> identifier */
static int library_create_album(lua_State *L) {
    struct library *library = check_library(L);
    char *identifier = NULL, *message = NULL;
    photoledger_status status = photoledger_create_album(library->handle, luaL_checkstring(L, 2), &identifier, &message);
    return status == PHOTOLEDGER_OK ? succeed(L, identifier) : fail(L, status, message);
}

/* lib:rename_album(album, title) -> true */
static int library_rename_album(lua_State *L) {
    struct library *library = check_library(L);
    char *message = NULL;
    photoledger_status status = photoledger_rename_album(library->handle, luaL_checkstring(L, 2), luaL_checkstring(L, 3), &message);
    return status == PHOTOLEDGER_OK ? succeed(L, NULL) : fail(L, status, message);
}

/* lib:delete_album(album) -> true */
static int library_delete_album(lua_State *L) {
    struct library *library = check_library(L);
    char *message = NULL;
    photoledger_status status = photoledger_delete_album(library->handle, luaL_checkstring(L, 2), &message);
    return status == PHOTOLEDGER_OK ? succeed(L, NULL) : fail(L, status, message);
}

/* The C functions that change a list of assets, by the arguments they take besides it. */
typedef photoledger_status (*album_assets_change)(
    photoledger_library *library, const char *album, const char *const *assets, size_t count, char **message);
typedef photoledger_status (*assets_flag_change)(
    photoledger_library *library, const char *const *assets, size_t count, int value, char **message);
typedef photoledger_status (*assets_change)(photoledger_library *library, const char *const *assets, size_t count, char **message);

/* lib:NAME(album, ids) for `change`. */
static int change_album_assets(lua_State *L, album_assets_change change) {
    struct library *library = check_library(L);
    const char *album = luaL_checkstring(L, 2);
    size_t count;
    const char **assets = identifiers(L, 3, &count);
    char *message = NULL;
    photoledger_status status = change(library->handle, album, assets, count, &message);
    return status == PHOTOLEDGER_OK ? succeed(L, NULL) : fail(L, status, message);
}

/* lib:NAME(ids [, flag]) for `change`: the flag is true when left out. */
static int change_assets_flag(lua_State *L, assets_flag_change change) {
    struct library *library = check_library(L);
    size_t count;
    const char **assets = identifiers(L, 2, &count);
    int value = lua_isnone(L, 3) ? 1 : lua_toboolean(L, 3);
    char *message = NULL;
    photoledger_status status = change(library->handle, assets, count, value, &message);
    return status == PHOTOLEDGER_OK ? succeed(L, NULL) : fail(L, status, message);
}

/* lib:NAME(ids) for `change`. */
static int change_assets(lua_State *L, assets_change change) {
    struct library *library = check_library(L);
    size_t count;
    const char **assets = identifiers(L, 2, &count);
    char *message = NULL;
    photoledger_status status = change(library->handle, assets, count, &message);
    return status == PHOTOLEDGER_OK ? succeed(L, NULL) : fail(L, status, message);
}

/* lib:add_to_album(album, ids), lib:remove_from_album(album, ids), lib:insert_into_album(album,
   ids, position): ids is an identifier or a list of them; position counts from 1 (the cover). */
static int library_add_to_album(lua_State *L) { return change_album_assets(L, photoledger_add_to_album); }

static int library_remove_from_album(lua_State *L) { return change_album_assets(L, photoledger_remove_from_album); }

static int library_insert_into_album(lua_State *L) {
    struct library *library = check_library(L);
    const char *album = luaL_checkstring(L, 2);
    size_t count;
    const char **assets = identifiers(L, 3, &count);
    lua_Integer position = luaL_optinteger(L, 4, 1);
    luaL_argcheck(L, position >= 1, 4, "positions count from 1 (the album's cover)");
    char *message = NULL;
    photoledger_status status = photoledger_insert_into_album(library->handle, album, assets, count, (size_t)(position - 1), &message);
    return status == PHOTOLEDGER_OK ? succeed(L, NULL) : fail(L, status, message);
}

/* lib:set_favorite(ids, flag), lib:set_hidden(ids, flag) */
static int library_set_favorite(lua_State *L) { return change_assets_flag(L, photoledger_set_favorite); }

static int library_set_hidden(lua_State *L) { return change_assets_flag(L, photoledger_set_hidden); }

/* lib:delete_assets(ids), lib:recover_assets(ids) */
static int library_delete_assets(lua_State *L) { return change_assets(L, photoledger_delete_assets); }

static int library_recover_assets(lua_State *L) { return change_assets(L, photoledger_recover_assets); }

/* lib:export(asset, destination [, "current"|"unadjusted"|"original"]) -> true */
static int library_export(lua_State *L) {
    struct library *library = check_library(L);
    static const char *const versions[] = {"current", "unadjusted", "original", NULL};
    const char *asset = luaL_checkstring(L, 2), *destination = luaL_checkstring(L, 3);
    int version = luaL_checkoption(L, 4, "current", versions);
    char *message = NULL;
    photoledger_status status = photoledger_export(library->handle, asset, version, destination, &message);
    return status == PHOTOLEDGER_OK ? succeed(L, NULL) : fail(L, status, message);
}

/* lib:thumbnail(asset, size, destination [, "fit"|"fill"] [, callback]) -> JSON text */
static int library_thumbnail(lua_State *L) {
    struct library *library = check_library(L);
    static const char *const modes[] = {"fit", "fill", NULL};
    const char *asset = luaL_checkstring(L, 2);
    lua_Integer size = luaL_checkinteger(L, 3);
    luaL_argcheck(L, size >= 1 && size <= 1000000, 3, "the size is a number of pixels, 1 or more");
    const char *destination = luaL_checkstring(L, 4);
    int callback = lua_type(L, 5) == LUA_TFUNCTION ? 5 : (lua_type(L, 6) == LUA_TFUNCTION ? 6 : 0);
    int mode = lua_type(L, 5) == LUA_TSTRING ? luaL_checkoption(L, 5, NULL, modes) : PHOTOLEDGER_CONTENT_MODE_FIT;
    if (!callback) {
        char *json = NULL, *message = NULL;
        photoledger_status status = photoledger_thumbnail(library->handle, asset, (unsigned)size, mode, destination, &json, &message);
        return status == PHOTOLEDGER_OK ? succeed(L, json) : fail(L, status, message);
    }
    struct request *request = new_request(L, library, callback);
    char *message = NULL;
    photoledger_status status = photoledger_thumbnail_async(library->handle, asset, (unsigned)size, mode, destination, complete, request, &message);
    return queued(L, request, status, message);
}

/* lib:assets_json([album] [, { favorites = true, deleted = true }]) */
static int library_assets_json(lua_State *L) {
    struct library *library = check_library(L);
    const char *album = lua_type(L, 2) == LUA_TSTRING ? lua_tostring(L, 2) : NULL;
    int options = lua_type(L, 2) == LUA_TTABLE ? 2 : 3;
    if (!album && !lua_isnoneornil(L, 2) && options != 2) luaL_typeerror(L, 2, "string, table or nil");
    unsigned flags = (option(L, options, "favorites") ? PHOTOLEDGER_ASSETS_FAVORITES : 0) |
                     (option(L, options, "deleted") ? PHOTOLEDGER_ASSETS_DELETED : 0);
    char *json = NULL, *message = NULL;
    photoledger_status status = photoledger_fetch_assets_json(library->handle, album, flags, &json, &message);
    return status == PHOTOLEDGER_OK ? succeed(L, json) : fail(L, status, message);
}

static int library_albums_json(lua_State *L) {
    struct library *library = check_library(L);
    char *json = NULL, *message = NULL;
    photoledger_status status = photoledger_fetch_albums_json(library->handle, &json, &message);
    return status == PHOTOLEDGER_OK ? succeed(L, json) : fail(L, status, message);
}

/* lib:history_json([object] [, device]) */
static int library_history_json(lua_State *L) {
    struct library *library = check_library(L);
    char *json = NULL, *message = NULL;
    photoledger_status status =
        photoledger_history_json(library->handle, luaL_optstring(L, 2, NULL), luaL_optstring(L, 3, NULL), &json, &message);
    return status == PHOTOLEDGER_OK ? succeed(L, json) : fail(L, status, message);
}

static int library_status_json(lua_State *L) {
    struct library *library = check_library(L);
    char *json = NULL, *message = NULL;
    photoledger_status status = photoledger_status_json(library->handle, &json, &message);
    return status == PHOTOLEDGER_OK ? succeed(L, json) : fail(L, status, message);
}

/* lib:set_remote(url, token) */
static int library_set_remote(lua_State *L) {
    struct library *library = check_library(L);
    char *message = NULL;
    photoledger_status status = photoledger_set_remote(library->handle, luaL_checkstring(L, 2), luaL_checkstring(L, 3), &message);
    return status == PHOTOLEDGER_OK ? succeed(L, NULL) : fail(L, status, message);
}

/* lib:sync([callback]) -> the report's JSON text */
static int library_sync(lua_State *L) {
    struct library *library = check_library(L);
    if (lua_isnoneornil(L, 2)) {
        char *json = NULL, *message = NULL;
        photoledger_status status = photoledger_sync(library->handle, &json, &message);
        return status == PHOTOLEDGER_OK ? succeed(L, json) : fail(L, status, message);
    }
    luaL_checktype(L, 2, LUA_TFUNCTION);
    struct request *request = new_request(L, library, 2);
    char *message = NULL;
    photoledger_status status = photoledger_sync_async(library->handle, complete, request, &message);
    return queued(L, request, status, message);
}

/* Closes the handle (waiting for the queued calls) and drops the outcomes never delivered. */
static void close_library(lua_State *L, struct library *library) {
    if (library->handle == NULL) return;
    photoledger_close(library->handle);
    library->handle = NULL;
    struct outcome *outcome;
    while ((outcome = take(library, 0)) != NULL) {
        luaL_unref(L, LUA_REGISTRYINDEX, outcome->callback);
        free_outcome(outcome);
    }
}

/* lib:close(): waits for the queued calls; their callbacks are not run (call wait() first).
   Closing twice does nothing; any other call on a closed library raises an error. */
static int library_close(lua_State *L) {
    close_library(L, luaL_checkudata(L, 1, LIBRARY_METATABLE));
    return 0;
}

static int library_gc(lua_State *L) {
    struct library *library = luaL_checkudata(L, 1, LIBRARY_METATABLE);
    close_library(L, library);
    pthread_cond_destroy(&library->changed);
    pthread_mutex_destroy(&library->lock);
    return 0;
}

static int library_tostring(lua_State *L) {
    struct library *library = luaL_checkudata(L, 1, LIBRARY_METATABLE);
    lua_pushfstring(L, "photoledger.library (%s)", library->handle != NULL ? "open" : "closed");
    return 1;
}

/* photoledger.open(path [, { device = "name", preauthorized = true }]) -> library */
static int module_open(lua_State *L) {
    const char *path = luaL_checkstring(L, 1);
    photoledger_open_options options = PHOTOLEDGER_OPEN_OPTIONS_INIT;
    options.preauthorized = 1; /* a script owns its library, as the photoledger command does */
    if (!lua_isnoneornil(L, 2)) {
        luaL_checktype(L, 2, LUA_TTABLE);
        lua_getfield(L, 2, "device");
        options.device = lua_isnil(L, -1) ? NULL : luaL_checkstring(L, -1);
        lua_getfield(L, 2, "preauthorized");
        if (!lua_isnil(L, -1)) options.preauthorized = lua_toboolean(L, -1);
        lua_pop(L, 1); /* keeps the device string on the stack while it is used */
    }
    struct library *library = lua_newuserdatauv(L, sizeof *library, 0);
    memset(library, 0, sizeof *library);
    char *message = NULL;
    photoledger_library *handle = NULL;
    photoledger_status status = photoledger_open(path, &options, &handle, &message);
    if (status != PHOTOLEDGER_OK) return fail(L, status, message);
    pthread_mutex_init(&library->lock, NULL);
    pthread_cond_init(&library->changed, NULL);
    library->handle = handle;
    luaL_setmetatable(L, LIBRARY_METATABLE);
    return 1;
}

/* photoledger.status_name(code) */
static int module_status_name(lua_State *L) {
    lua_pushstring(L, photoledger_status_name((photoledger_status)luaL_checkinteger(L, 1)));
    return 1;
}

static const luaL_Reg library_methods[] = {
    {"save_to_album", library_save_to_album},
    {"create_album", library_create_album},
    {"rename_album", library_rename_album},
    {"delete_album", library_delete_album},
    {"add_to_album", library_add_to_album},
    {"insert_into_album", library_insert_into_album},
    {"remove_from_album", library_remove_from_album},
    {"set_favorite", library_set_favorite},
    {"set_hidden", library_set_hidden},
    {"delete_assets", library_delete_assets},
    {"recover_assets", library_recover_assets},
    {"export", library_export},
    {"thumbnail", library_thumbnail},
    {"assets_json", library_assets_json},
    {"albums_json", library_albums_json},
    {"history_json", library_history_json},
    {"status_json", library_status_json},
    {"set_remote", library_set_remote},
    {"sync", library_sync},
    {"poll", library_poll},
    {"wait", library_wait},
    {"pending", library_pending},
    {"close", library_close},
    {NULL, NULL},
};

static const luaL_Reg module_functions[] = {
    {"open", module_open},
    {"status_name", module_status_name},
    {NULL, NULL},
};

int luaopen_photoledger(lua_State *L);

int luaopen_photoledger(lua_State *L) {
    luaL_newmetatable(L, LIBRARY_METATABLE);
    luaL_newlib(L, library_methods);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, library_gc);
    lua_setfield(L, -2, "__gc");
    lua_pushcfunction(L, library_close);
    lua_setfield(L, -2, "__close");
    lua_pushcfunction(L, library_tostring);
    lua_setfield(L, -2, "__tostring");
    lua_pop(L, 1);
    luaL_newlib(L, module_functions);
    lua_pushstring(L, photoledger_version());
    lua_setfield(L, -2, "version");
    return 1;
}
