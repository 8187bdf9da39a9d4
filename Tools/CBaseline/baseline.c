#include "baseline.h"

#include <openssl/evp.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int fail(sqlite3 *db, const char *what) {
    fprintf(stderr, "baseline: %s: %s\n", what, db ? sqlite3_errmsg(db) : "cannot open");
    return -1;
}

static sqlite3 *open_db(const char *path) {
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
        fail(db, "open");
        sqlite3_close(db);
        return NULL;
    }
    sqlite3_busy_timeout(db, 5000);
    sqlite3_exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;", NULL, NULL, NULL);
    return db;
}

/* Canonical bytes, as Event.writeCanonicalBytes writes them. */
static size_t put_varint(uint8_t *out, uint64_t v) {
    size_t n = 0;
    while (v >= 0x80) { out[n++] = (uint8_t)(v | 0x80); v >>= 7; }
    out[n++] = (uint8_t)v;
    return n;
}
static size_t put_fixed(uint8_t *out, uint64_t v) {
    for (int i = 0; i < 8; i++) out[i] = (uint8_t)(v >> (56 - 8 * i));
    return 8;
}

static void make_uuid_v7(uint8_t out[16], uint64_t ms, uint16_t counter, uint64_t *rng) {
    for (int i = 0; i < 6; i++) out[i] = (uint8_t)(ms >> (40 - 8 * i));
    out[6] = (uint8_t)(0x70 | (counter >> 8));
    out[7] = (uint8_t)counter;
    *rng ^= *rng << 13; *rng ^= *rng >> 7; *rng ^= *rng << 17;
    for (int i = 0; i < 8; i++) out[8 + i] = (uint8_t)(*rng >> (56 - 8 * i));
    out[8] = (out[8] & 0x3F) | 0x80;
}

double baseline_append(const char *path, const char *schema_sql, int count, int batch, int payload_size) {
    sqlite3 *db = open_db(path);
    if (!db) return -1;
    if (sqlite3_exec(db, schema_sql, NULL, NULL, NULL) != SQLITE_OK) { fail(db, "schema"); sqlite3_close(db); return -1; }
    sqlite3_stmt *insert = NULL;
    const char *sql = "INSERT INTO events (event_id, device_id, device_seq, hlc, change_block, object_id, type, "
                      "schema_version, payload, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (event_id) DO NOTHING";
    if (sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &insert, NULL) != SQLITE_OK) {
        fail(db, "prepare"); sqlite3_close(db); return -1;
    }
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    EVP_MD *sha256 = EVP_MD_fetch(NULL, "SHA2-256", NULL); /* fetched once, as the Swift side does */
    uint8_t head[32] = {0}, canonical[4096], payload[2048], id[16], block[16], object[16];
    const char *device = "bench-device", *type = "asset.created";
    uint64_t rng = 0x9E3779B97F4A7C15ull, ms = 1764483790000ull;
    for (int i = 0; i < payload_size && i < (int)sizeof payload; i++) payload[i] = (uint8_t)(i * 31 + 7);
    double start = now_seconds();
    for (int i = 0; i < count; i++) {
        if (i % batch == 0) sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
        make_uuid_v7(id, ms + (uint64_t)i / 64, (uint16_t)(i % 64), &rng);
        if (i % batch == 0) make_uuid_v7(block, ms + (uint64_t)i / 64, 0, &rng);
        make_uuid_v7(object, ms, (uint16_t)(i % 4096), &rng);
        uint64_t hlc = ((ms + (uint64_t)i / 64) << 16) | (uint64_t)(i % 64);
        size_t n = 0;
        canonical[n++] = 1;
        memcpy(canonical + n, id, 16); n += 16;
        n += put_varint(canonical + n, strlen(device)); memcpy(canonical + n, device, strlen(device)); n += strlen(device);
        n += put_fixed(canonical + n, (uint64_t)(i + 1));
        n += put_fixed(canonical + n, hlc);
        memcpy(canonical + n, block, 16); n += 16;
        memcpy(canonical + n, object, 16); n += 16;
        n += put_varint(canonical + n, strlen(type)); memcpy(canonical + n, type, strlen(type)); n += strlen(type);
        n += put_varint(canonical + n, 1);
        n += put_varint(canonical + n, (uint64_t)payload_size); memcpy(canonical + n, payload, (size_t)payload_size); n += (size_t)payload_size;
        unsigned int len = 0;
        EVP_DigestInit_ex(ctx, sha256, NULL);
        EVP_DigestUpdate(ctx, head, 32);
        EVP_DigestUpdate(ctx, canonical, n);
        EVP_DigestFinal_ex(ctx, head, &len);
        sqlite3_bind_blob(insert, 1, id, 16, SQLITE_TRANSIENT);
        sqlite3_bind_text(insert, 2, device, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(insert, 3, i + 1);
        sqlite3_bind_int64(insert, 4, (sqlite3_int64)hlc);
        sqlite3_bind_blob(insert, 5, block, 16, SQLITE_TRANSIENT);
        sqlite3_bind_blob(insert, 6, object, 16, SQLITE_TRANSIENT);
        sqlite3_bind_text(insert, 7, type, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(insert, 8, 1);
        sqlite3_bind_blob(insert, 9, payload, payload_size, SQLITE_TRANSIENT);
        sqlite3_bind_blob(insert, 10, head, 32, SQLITE_TRANSIENT);
        if (sqlite3_step(insert) != SQLITE_DONE) { fail(db, "insert"); break; }
        sqlite3_reset(insert);
        if (i % batch == batch - 1 || i == count - 1) {
            if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) { fail(db, "commit"); break; }
        }
    }
    double elapsed = now_seconds() - start;
    EVP_MD_CTX_free(ctx);
    EVP_MD_free(sha256);
    sqlite3_finalize(insert);
    sqlite3_close(db);
    return elapsed;
}

double baseline_scan(const char *path, long *rows) {
    sqlite3 *db = open_db(path);
    if (!db) return -1;
    sqlite3_stmt *select = NULL;
    const char *sql = "SELECT local_seq, event_id, device_id, device_seq, hlc, change_block, object_id, type, "
                      "schema_version, payload, server_seq, hash FROM events ORDER BY local_seq";
    if (sqlite3_prepare_v2(db, sql, -1, &select, NULL) != SQLITE_OK) { fail(db, "prepare"); sqlite3_close(db); return -1; }
    double start = now_seconds();
    long count = 0, checksum = 0;
    while (sqlite3_step(select) == SQLITE_ROW) {
        for (int c = 0; c < 12; c++) {
            int t = sqlite3_column_type(select, c);
            if (t == SQLITE_INTEGER) checksum += (long)sqlite3_column_int64(select, c);
            else if (t == SQLITE_BLOB) { const uint8_t *b = sqlite3_column_blob(select, c); checksum += b[0] + sqlite3_column_bytes(select, c); }
            else if (t == SQLITE_TEXT) checksum += sqlite3_column_bytes(select, c) + sqlite3_column_text(select, c)[0];
        }
        count++;
    }
    double elapsed = now_seconds() - start;
    if (checksum == 42) fprintf(stderr, " ");
    *rows = count;
    sqlite3_finalize(select);
    sqlite3_close(db);
    return elapsed;
}

double baseline_point_lookups(const char *path, int count, double *latencies) {
    sqlite3 *db = open_db(path);
    if (!db) return -1;
    sqlite3_stmt *ids = NULL, *lookup = NULL;
    long total = 0;
    sqlite3_prepare_v2(db, "SELECT count(*) FROM events", -1, &ids, NULL);
    if (sqlite3_step(ids) == SQLITE_ROW) total = (long)sqlite3_column_int64(ids, 0);
    sqlite3_finalize(ids);
    if (total == 0) { sqlite3_close(db); return -1; }
    uint8_t (*keys)[16] = malloc(sizeof(uint8_t[16]) * (size_t)count);
    sqlite3_prepare_v2(db, "SELECT event_id FROM events WHERE local_seq = ?", -1, &ids, NULL);
    for (int i = 0; i < count; i++) {
        sqlite3_bind_int64(ids, 1, 1 + ((long)i * 7919) % total);
        if (sqlite3_step(ids) == SQLITE_ROW) memcpy(keys[i], sqlite3_column_blob(ids, 0), 16);
        sqlite3_reset(ids);
    }
    sqlite3_finalize(ids);
    sqlite3_prepare_v2(db, "SELECT local_seq, event_id, device_id, device_seq, hlc, change_block, object_id, type, "
                           "schema_version, payload, server_seq, hash FROM events WHERE event_id = ?", -1, &lookup, NULL);
    double start = now_seconds();
    long checksum = 0;
    for (int i = 0; i < count; i++) {
        double t0 = now_seconds();
        sqlite3_bind_blob(lookup, 1, keys[i], 16, SQLITE_STATIC);
        if (sqlite3_step(lookup) == SQLITE_ROW) checksum += sqlite3_column_bytes(lookup, 9) + sqlite3_column_int64(lookup, 3);
        sqlite3_reset(lookup);
        latencies[i] = (now_seconds() - t0) * 1e6;
    }
    double elapsed = now_seconds() - start;
    if (checksum == 42) fprintf(stderr, " ");
    free(keys);
    sqlite3_finalize(lookup);
    sqlite3_close(db);
    return elapsed;
}

double baseline_rebuild(const char *path, long *rows) {
    sqlite3 *db = open_db(path);
    if (!db) return -1;
    sqlite3_exec(db, "DROP TABLE IF EXISTS baseline_objects; CREATE TABLE baseline_objects (object_id BLOB PRIMARY KEY, "
                     "last_event BLOB NOT NULL, event_count INTEGER NOT NULL, last_type TEXT NOT NULL, last_hlc INTEGER NOT NULL) "
                     "WITHOUT ROWID", NULL, NULL, NULL);
    sqlite3_stmt *page = NULL, *upsert = NULL;
    sqlite3_prepare_v2(db, "SELECT local_seq, event_id, object_id, type, hlc, payload FROM events WHERE local_seq > ? "
                           "ORDER BY local_seq LIMIT 1000", -1, &page, NULL);
    sqlite3_prepare_v2(db, "INSERT INTO baseline_objects VALUES (?, ?, 1, ?, ?) ON CONFLICT (object_id) DO UPDATE SET "
                           "last_event = excluded.last_event, event_count = event_count + 1, last_type = excluded.last_type, "
                           "last_hlc = max(last_hlc, excluded.last_hlc)", -1, &upsert, NULL);
    struct row { uint8_t id[16], object[16]; char type[64]; sqlite3_int64 hlc; } *buffer = malloc(sizeof(struct row) * 1000);
    double start = now_seconds();
    sqlite3_int64 cursor = 0;
    long count = 0;
    for (;;) {
        int n = 0;
        sqlite3_bind_int64(page, 1, cursor);
        while (sqlite3_step(page) == SQLITE_ROW) {
            cursor = sqlite3_column_int64(page, 0);
            memcpy(buffer[n].id, sqlite3_column_blob(page, 1), 16);
            memcpy(buffer[n].object, sqlite3_column_blob(page, 2), 16);
            snprintf(buffer[n].type, sizeof buffer[n].type, "%s", (const char *)sqlite3_column_text(page, 3));
            buffer[n].hlc = sqlite3_column_int64(page, 4);
            n++;
        }
        sqlite3_reset(page);
        if (n == 0) break;
        sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
        for (int i = 0; i < n; i++) {
            sqlite3_bind_blob(upsert, 1, buffer[i].object, 16, SQLITE_STATIC);
            sqlite3_bind_blob(upsert, 2, buffer[i].id, 16, SQLITE_STATIC);
            sqlite3_bind_text(upsert, 3, buffer[i].type, -1, SQLITE_STATIC);
            sqlite3_bind_int64(upsert, 4, buffer[i].hlc);
            if (sqlite3_step(upsert) != SQLITE_DONE) { fail(db, "upsert"); }
            sqlite3_reset(upsert);
        }
        sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
        count += n;
        if (n < 1000) break;
    }
    double elapsed = now_seconds() - start;
    *rows = count;
    free(buffer);
    sqlite3_finalize(page);
    sqlite3_finalize(upsert);
    sqlite3_close(db);
    return elapsed;
}

double baseline_asset_lookups(const char *path, int count, double *latencies) {
    sqlite3 *db = open_db(path);
    if (!db) return -1;
    sqlite3_stmt *ids = NULL, *lookup = NULL;
    sqlite3_prepare_v2(db, "SELECT asset_id FROM assets ORDER BY asset_id", -1, &ids, NULL);
    long total = 0, capacity = 1024;
    uint8_t (*all)[16] = malloc(sizeof(uint8_t[16]) * (size_t)capacity);
    while (sqlite3_step(ids) == SQLITE_ROW) {
        if (total == capacity) { capacity *= 2; all = realloc(all, sizeof(uint8_t[16]) * (size_t)capacity); }
        memcpy(all[total++], sqlite3_column_blob(ids, 0), 16);
    }
    sqlite3_finalize(ids);
    if (total == 0) { free(all); sqlite3_close(db); return -1; }
    sqlite3_prepare_v2(db, "SELECT * FROM assets WHERE asset_id = ?", -1, &lookup, NULL);
    double start = now_seconds();
    long checksum = 0;
    for (int i = 0; i < count; i++) {
        double t0 = now_seconds();
        sqlite3_bind_blob(lookup, 1, all[((long)i * 7919) % total], 16, SQLITE_STATIC);
        if (sqlite3_step(lookup) == SQLITE_ROW) {
            int columns = sqlite3_column_count(lookup);
            for (int c = 0; c < columns; c++) checksum += sqlite3_column_bytes(lookup, c) + sqlite3_column_int64(lookup, c);
        }
        sqlite3_reset(lookup);
        latencies[i] = (now_seconds() - t0) * 1e6;
    }
    double elapsed = now_seconds() - start;
    if (checksum == 42) fprintf(stderr, " ");
    free(all);
    sqlite3_finalize(lookup);
    sqlite3_close(db);
    return elapsed;
}
