import Foundation
import LedgerCore
import SyncProtocol

/// A push stored in one round trip, when the push alone shows that every event would be stored
/// (``PushRules/appendedEvents(_:scope:)``): one statement, sent with the transaction's
/// `BEGIN`, its locks and its `COMMIT`, checks what the log must agree to (the device's
/// position, no rejection of the identifiers; the unique index of identifiers and the claims of
/// objects that must be new, as it writes), links the events into the chain (SHA-256 in the
/// database, of the canonical bytes computed before the locks) and moves the head.
///
/// The library's lock is then held for the statement alone, not across a round trip to the
/// server process and its work between two: what a push costs other pushes of the library.
enum PostgresAppend {
    /// The most events a push stored this way may hold. The chain's step reads the next canonical
    /// bytes by subscript, which walks the array from its start: time that grows with the square
    /// of the push, under the library's lock (about 3 ms for 1,000 events on a busy 2-core
    /// machine). A larger push runs with the rules, whose two round trips matter less beside it.
    static let maximumEvents = 1000

    /// Stores `events` as the library's next events and returns the answer, or nil when the
    /// push holds more than ``maximumEvents`` or the device's position or a rejection does not
    /// agree (nothing stored): the push then runs with the rules. Throws ``DeferredCheckFailed``
    /// (nothing stored) when an identifier is stored or an object that must be new is held.
    static func append(
        _ events: [PushRules.AppendedEvent], rules: PushRules, on connection: PostgresConnection, library: Int64, device: DeviceID,
        at receivedAt: Int64
    ) throws -> PushResponse? {
        guard let first = events.first, events.count <= maximumEvents else { return nil }
        let required = events.indices.filter { events[$0].requiresNewObject }
        var seen: Set<UUID> = Set(required.map { events[$0].event.object })
        let optional = events.indices.filter { !events[$0].requiresNewObject && seen.insert(events[$0].event.object).inserted }
        func column(_ type: PostgresType, _ value: (PushRules.AppendedEvent) -> PostgresValue) -> PostgresValue {
            .array(element: type, events.map(value))
        }
        func claims(_ indices: [Int]) -> [PostgresValue] {
            [
                .array(element: .bytea, indices.map { .uuid(events[$0].event.object) }),
                .array(element: .int8, indices.map { .int64(Int64($0 + 1)) }),
            ]
        }
        let parameters: [PostgresValue] =
            [
                .int64(library), .int64(receivedAt), .text(device.rawValue), .int64(first.event.deviceSequence - 1),
                .text(PostgresCommitListener.channel),
                column(.bytea) { .bytes($0.event.canonicalBytes) },
                column(.bytea) { .uuid($0.event.id) },
                column(.int8) { .int64($0.event.deviceSequence) },
                column(.int8) { .int64(Int64(bitPattern: $0.event.timestamp.rawValue)) },
                column(.bytea) { .uuid($0.event.changeBlock) },
                column(.bytea) { .uuid($0.event.object) },
                column(.text) { .text($0.event.type) },
                column(.int8) { .int64(Int64($0.event.schemaVersion)) },
                column(.bytea) { .bytes($0.event.payload) },
                column(.bytea) { .optionalBytes($0.contentHash) },
                column(.int8) { .int64(Int64($0.event.format.rawValue)) },
                column(.bool) { .bool($0.event.library != nil) },
                column(.int8) { .int64(Int64($0.event.seal?.keyID ?? 0)) },
                column(.bytea) { .optionalBytes($0.event.seal?.nonce) },
            ] + claims(required) + claims(optional)
        let results: [PostgresResult]
        do {
            results = try connection.pipeline(
                PostgresPushTransaction.opening(library: library, device: device, at: receivedAt) + [
                    .init(sql, parameters), .command("COMMIT"),
                ])
        } catch let error as PostgresError where error.sqlState == PostgresPushTransaction.uniqueViolation {
            // A stored identifier, or a claim on an object the log holds.
            connection.rollBackOpenTransaction()
            throw DeferredCheckFailed()
        } catch {
            connection.rollBackOpenTransaction()
            throw error
        }
        try PostgresServerStore.checkCommitted(results, connection)
        let stored = results[results.count - 2]
        guard stored.count > 0 else { return nil }
        return rules.appendedResponse(events, lastServerSequence: stored.int64(0, 0), chainHash: stored.bytes(0, 1))
    }

    /// $1 library, $2 received at, $3 device, $4 the device's last sequence the push follows,
    /// $5 the commit channel, $6 the canonical bytes, $7 … $19 the envelope columns, $20 and $21
    /// the claims that must be made (objects, positions in the push), $22 and $23 the others.
    /// Every write reads `ready`, which is empty when the log does not agree: nothing is written
    /// and no row returned.
    static let sql = """
        WITH RECURSIVE ready AS (
            SELECT l.last_seq, l.last_hash FROM libraries l
            WHERE l.library_id = $1
              AND (SELECT d.last_device_seq FROM devices d WHERE d.library_id = $1 AND d.device_id = $3) = $4
              AND NOT EXISTS (
                  SELECT 1 FROM unnest($7::bytea[]) AS i (id)
                  CROSS JOIN LATERAL (SELECT 1 FROM rejected_events r WHERE r.library_id = $1 AND r.event_id = i.id LIMIT 1) x)
            FOR NO KEY UPDATE OF l
        ), chain (n, hash) AS (
            SELECT 0, last_hash FROM ready
            UNION ALL
            SELECT n + 1, sha256(hash || ($6::bytea[])[n + 1]) FROM chain WHERE n < cardinality($6::bytea[])
        ), required AS (
            INSERT INTO server_objects (library_id, object_id, first_seq)
            SELECT $1, c.object_id, r.last_seq + c.n FROM ready r, unnest($20::bytea[], $21::int8[]) AS c (object_id, n)
        ), optional AS (
            INSERT INTO server_objects (library_id, object_id, first_seq)
            SELECT $1, c.object_id, r.last_seq + c.n FROM ready r, unnest($22::bytea[], $23::int8[]) AS c (object_id, n)
            ON CONFLICT DO NOTHING
        ), stored AS (
            INSERT INTO server_events (library_id, received_at, server_seq, event_id, device_id, device_seq, hlc, change_block, object_id,
                                       type, schema_version, payload, chain_hash, content_hash, format, bound, key_id, nonce)
            SELECT $1, $2, r.last_seq + e.n, e.event_id, $3, e.device_seq, e.hlc, e.change_block, e.object_id, e.type, e.schema_version,
                   e.payload, c.hash, e.content_hash, e.format, e.bound, e.key_id, e.nonce
            FROM ready r
            CROSS JOIN unnest($7::bytea[], $8::int8[], $9::int8[], $10::bytea[], $11::bytea[], $12::text[], $13::int8[], $14::bytea[],
                              $15::bytea[], $16::int8[], $17::bool[], $18::int8[], $19::bytea[]) WITH ORDINALITY
                AS e (event_id, device_seq, hlc, change_block, object_id, type, schema_version, payload, content_hash, format, bound,
                      key_id, nonce, n)
            JOIN chain c ON c.n = e.n
        ), moved AS (
            UPDATE libraries l SET last_seq = r.last_seq + c.n, last_hash = c.hash FROM ready r, chain c
            WHERE l.library_id = $1 AND c.n = cardinality($6::bytea[])
            RETURNING l.last_seq, l.last_hash
        ), position AS (
            UPDATE devices d SET last_device_seq = $4 + cardinality($6::bytea[]), last_seen_at = $2 FROM ready
            WHERE d.library_id = $1 AND d.device_id = $3
        )
        SELECT last_seq, last_hash, pg_notify($5, $1::text || ' ' || last_seq::text) FROM moved
        """
}
