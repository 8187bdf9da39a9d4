#ifndef PHOTOLEDGER_BASELINE_H
#define PHOTOLEDGER_BASELINE_H

/// C baselines for the benchmark tool: the same rows, the same schema, the same batching as
/// PhotoLedger's Swift code, written with the raw SQLite and libcrypto C APIs.
/// Every function returns elapsed seconds, or a negative value on failure (message on stderr).

/// Appends `count` events to the `events` table of the database at `path` (created with
/// `schema_sql`), `batch` events per transaction, each with a `payload_size`-byte payload and a
/// SHA-256 hash chain, the way EventLog.append does.
double baseline_append(const char *path, const char *schema_sql, int count, int batch, int payload_size);

/// Reads every event back in local order, touching every column; `rows` receives the count.
double baseline_scan(const char *path, long *rows);

/// Looks up `count` events by event id (ids of events number 1…n, spread over the log); writes
/// each lookup's duration in microseconds to `latencies`.
double baseline_point_lookups(const char *path, int count, double *latencies);

/// Scans the log in keyset pages of 1,000 and upserts one row per object into
/// `baseline_objects` (1,000 upserts per transaction): the C shape of a projection rebuild.
double baseline_rebuild(const char *path, long *rows);

/// Looks up `count` assets by asset id in the `assets` projection table (ids taken from the
/// table, spread over it), reading every column; writes each lookup's duration in microseconds.
double baseline_asset_lookups(const char *path, int count, double *latencies);

#endif
