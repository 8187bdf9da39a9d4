import Foundation
import LedgerCore
import LedgerStore

/// What a compaction did.
public struct CompactionReport: Sendable, Hashable, CustomStringConvertible {
    /// Events moved from the live log to the archive by this compaction.
    public let archivedEvents: Int
    /// The local sequence of the last archived event: change tokens older than it have expired.
    public let horizon: Int64
    /// The server sequence the compaction was given.
    public let serverWatermark: Int64

    public var description: String {
        archivedEvents == 0
            ? "nothing to compact below server position \(serverWatermark) (horizon stays at \(horizon))"
            : "archived \(archivedEvents) events; history before position \(horizon) now lives in the archive"
    }
}

extension PhotoLibrary {
    /// The archive file compaction moves events to, beside the library file.
    public var archiveURL: URL { EventArchive.url(for: url) }

    /// Moves the oldest events to the archive file once every registered device has them.
    ///
    /// The log's last event always stays in the live log, so local sequences and the hash chain
    /// continue from it; the highest device sequence of every device is remembered, so this
    /// device's next event never reuses one.
    ///
    /// The events moved are the longest prefix of the log, in local order, whose events the
    /// server has acknowledged at a sequence at or below `watermark`, or refused for good (the
    /// sync engine takes it
    /// from the server: the position every registered device has pulled). Before they leave, the
    /// projections are saved as a snapshot, so ``rebuild()`` still gives identical tables; the
    /// archive's chain is verified to end at the chain value the live log continues from, so
    /// ``verify()`` still checks the whole history. Change tokens older than the new horizon
    /// expire: ``fetchPersistentChanges(since:)`` then throws `.persistentChangeTokenExpired`.
    ///
    /// Safe to interrupt: events are copied before they are deleted, and a repeated compaction
    /// completes an interrupted one.
    ///
    /// - Throws: ``PhotoLibraryError`` `.internalError` when the events to archive do not match
    ///   their hash chain (nothing is moved then; run ``verifyChain()``).
    ///   `.changeNotSupported` while a library started from a snapshot has not fetched its history.
    @discardableResult
    public func compact(upToServerSequence watermark: Int64) throws -> CompactionReport {
        if let status = try snapshotBootstrapStatus(), status.fetchedThrough < status.position {
            throw PhotoLibraryError(
                .changeNotSupported,
                "this library started from a snapshot at server position \(status.position) and has fetched its history through "
                    + "\(status.fetchedThrough) only: sync until the history is fetched, then compact")
        }
        let (state, horizon) = try readDatabase { db in (try AuditState.read(db), try Self.compactionHorizon(db, watermark: watermark)) }
        guard horizon > state.archivedThrough else {
            return CompactionReport(archivedEvents: 0, horizon: state.archivedThrough, serverWatermark: watermark)
        }
        guard let archive = try archiveConnection.open(for: url, libraryID: state.libraryID, create: true) else {
            throw PhotoLibraryError(.internalError, "could not create the event archive \(archiveURL.path)")
        }
        let head = try archive.writeWithoutTransaction { try copyToArchive($0, state: state, through: horizon) }
        let archived = try withDatabase { db -> Int in
            // Another compaction may have finished meanwhile; the horizon only advances.
            let current = try AuditState.read(db)
            guard horizon > current.archivedThrough else { return 0 }
            try CompactionSnapshot.take(db)
            try db.execute(
                """
                UPDATE compaction_state SET archived_through = ?, archived_hash = ?, server_watermark = max(server_watermark, ?),
                    snapshot_through = (SELECT coalesce(max(local_seq), 0) FROM events) WHERE id = 1
                """, [horizon, head, watermark])
            try db.execute(
                """
                INSERT INTO archived_device_sequences (device_id, last_device_seq)
                SELECT device_id, max(device_seq) FROM events WHERE local_seq <= ? GROUP BY device_id
                ON CONFLICT (device_id) DO UPDATE SET last_device_seq = max(last_device_seq, excluded.last_device_seq)
                """, [horizon])
            // Server chain values kept in the rows that leave stay recorded (Migrations/Library/0007).
            try db.execute(
                """
                INSERT INTO server_chain (server_seq, event_id, chain_hash, held)
                SELECT server_seq, event_id, server_chain_hash, 1 FROM events WHERE local_seq <= ? AND server_chain_hash IS NOT NULL
                ON CONFLICT (server_seq) DO UPDATE SET held = 1
                """, [horizon])
            try db.execute("DELETE FROM events WHERE local_seq <= ?", [horizon])
            let moved = db.changes
            try db.execute("DELETE FROM commits WHERE end_seq < ?", [horizon])
            return moved
        }
        return CompactionReport(archivedEvents: archived, horizon: max(horizon, state.archivedThrough), serverWatermark: watermark)
    }

    /// The last local sequence of the longest prefix of acknowledged events at or below `watermark`.
    static func compactionHorizon(_ db: Database, watermark: Int64) throws -> Int64 {
        // Events the server refused for good will never be acknowledged; they do not hold the horizon back.
        let pending =
            try db.firstRow(
                "SELECT min(local_seq) FROM events WHERE server_seq IS NULL AND event_id NOT IN (SELECT event_id FROM sync_rejections)"
            ) { $0.optionalInt64(0) } ?? nil
        let later = try db.firstRow("SELECT min(local_seq) FROM events WHERE server_seq > ?", [watermark]) { $0.optionalInt64(0) } ?? nil
        // The last event always stays: the live log's next local sequence and chain value continue from it.
        let last = try EventLog(db).lastLocalSequence()
        return min(pending ?? last, later ?? last, last) - 1
    }

    /// The highest device sequence `device` has used, counting its archived events (the next
    /// event of the device takes the one after it).
    static func lastDeviceSequence(for device: DeviceID, in db: Database) throws -> Int64 {
        let archived =
            try db.firstRow("SELECT last_device_seq FROM archived_device_sequences WHERE device_id = ?", [device.rawValue]) {
                $0.int64(0)
            } ?? 0
        return max(archived, try EventLog(db).lastDeviceSequence(for: device))
    }

    /// Copies the live events after the archive's horizon through `horizon` into the archive,
    /// checking their chain on the way; returns the chain value after the last one.
    private func copyToArchive(_ archive: Database, state: AuditState, through horizon: Int64) throws -> [UInt8] {
        var chain = HashChain(head: state.archivedHash)
        var cursor = state.archivedThrough
        do {
            try archive.inTransaction {
                let insert = try archive.cachedStatement(
                    """
                    INSERT INTO events (local_seq, event_id, device_id, device_seq, hlc, change_block, object_id, type, schema_version,
                        payload, server_seq, hash, format, library, key_id, nonce)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING
                    """)
                while cursor < horizon {
                    let page = try readDatabase { try EventLog($0).events(after: cursor, limit: min(1000, Int(horizon - cursor))) }
                    guard !page.isEmpty else { break }
                    for stored in page {
                        guard chain.link(stored.event) == stored.hash else {
                            throw PhotoLibraryError(
                                .internalError,
                                "could not compact: event \(stored.event.id.uuidString) at position \(stored.localSequence) does not match "
                                    + "its hash chain; nothing was archived — run verify and restore the library from a synced copy")
                        }
                        let event = stored.event
                        try insert.execute([
                            stored.localSequence, event.id.bytes, event.device.rawValue, event.deviceSequence,
                            Int64(bitPattern: event.timestamp.rawValue), event.changeBlock.bytes, event.object.bytes, event.type,
                            event.schemaVersion, event.payload, stored.serverSequence, stored.hash, Int64(event.format.rawValue),
                            event.library?.bytes, Int64(event.seal?.keyID ?? 0), event.seal?.nonce,
                        ])
                        cursor = stored.localSequence
                    }
                }
            }
        } catch {
            throw Self.translate(error, doing: "copy events to the archive \(archiveURL.path)")
        }
        let archived = try Self.verifyArchive(
            archive,
            state: AuditState(
                libraryID: state.libraryID, archivedThrough: horizon, archivedHash: chain.head, serverWatermark: 0, snapshotThrough: 0))
        if let failure = archived.failure {
            throw PhotoLibraryError(
                .internalError, "could not compact: the archive does not verify (\(failure)); nothing was removed from the log")
        }
        return chain.head
    }
}

/// The projections saved at compaction: the fold of every event up to `snapshot_through`, the base
/// ``Projection/rebuild()`` folds the live log onto.
///
/// The fold is a join: commutative and idempotent, with every last-writer-wins stamp, causal
/// length and merge winner kept in the rows. So the snapshot (the fold of all events up to the
/// moment it was taken) joined with the fold of the live log equals the fold of the whole
/// history, even though the live events between the horizon and the snapshot are folded twice.
enum CompactionSnapshot {
    static func table(_ projection: String) -> String { "snapshot_\(projection)" }

    /// Replaces the snapshot with the current projections.
    static func take(_ db: Database) throws {
        for projection in Projection.tables {
            try db.execute("DROP TABLE IF EXISTS \(table(projection))")
            try db.execute("CREATE TABLE \(table(projection)) AS SELECT * FROM \(projection)")
        }
    }

    /// Replaces the snapshot's rows of `objects` (refolded after a verdict changed) with their
    /// current rows, and the snapshot's verdicts on conflicts with the current ones. The rows
    /// also hold live events folded after the snapshot was taken: a rebuild folds those again,
    /// which the fold's idempotence allows (a creation counted twice is resolved as a conflict
    /// and refolded).
    static func replace(_ objects: Set<UUID>, from db: Database) throws {
        let snapshot = try db.firstRow("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", [table("assets")]) { _ in true }
        guard snapshot != nil else { return }
        for object in objects {
            let key = object.bytes
            for (projection, condition) in [
                ("assets", "asset_id = ?1"), ("asset_resources", "asset_id = ?1"), ("albums", "album_id = ?1"),
                ("album_members", "asset_id = ?1 OR album_id = ?1"), ("collection_lists", "list_id = ?1"),
                ("asset_renditions", "asset_id = ?1"),
            ] {
                let list = try columns(of: table(projection), in: db)
                if list.isEmpty && Projection.addedAfterSnapshots.contains(projection) { continue }
                try db.execute("DELETE FROM \(table(projection)) WHERE \(condition)", [key])
                try db.execute("INSERT INTO \(table(projection)) (\(list)) SELECT \(list) FROM \(projection) WHERE \(condition)", [key])
            }
        }
        let list = try columns(of: table("quarantine"), in: db)
        try db.execute("DELETE FROM \(table("quarantine")) WHERE rule = 1")
        try db.execute("INSERT INTO \(table("quarantine")) (\(list)) SELECT \(list) FROM quarantine WHERE rule = 1")
    }

    /// Removes a resource no asset shows any more (a purged asset's) from the snapshot's
    /// referenced resources.
    static func forgetResource(_ sha256: [UInt8], in db: Database) throws {
        let table = table("referenced_resources")
        guard try db.firstRow("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", [table], { _ in true }) != nil else {
            return
        }
        try db.execute("DELETE FROM \(table) WHERE sha256 = ?", [sha256])
    }

    /// The columns of a snapshot table, as a list for SQL (a snapshot taken by an older version
    /// may lack columns added since: they take their defaults).
    private static func columns(of table: String, in db: Database) throws -> String {
        try db.rows("SELECT name FROM pragma_table_info(?)", [table]) { "\"\($0.text(0))\"" }.joined(separator: ", ")
    }

    /// Copies the snapshot, if one was taken, into the (emptied) projection tables: the log is
    /// then folded after ``position(in:)``.
    static func restore(into db: Database) throws {
        guard try position(in: db) > 0 else { return }
        for projection in Projection.tables {
            let columns = try db.rows("SELECT name FROM pragma_table_info(?)", [table(projection)]) { "\"\($0.text(0))\"" }
            // A snapshot taken before the table existed holds none of its rows.
            if columns.isEmpty && Projection.addedAfterSnapshots.contains(projection) { continue }
            guard !columns.isEmpty else {
                throw PhotoLibraryError(
                    .internalError,
                    "the projection snapshot \(table(projection)) is missing, so the projections cannot be rebuilt without the "
                        + "archived events; restore the library from a backup")
            }
            let list = columns.joined(separator: ", ")
            try db.execute("INSERT INTO \(projection) (\(list)) SELECT \(list) FROM \(table(projection))")
        }
    }

    /// The local position of the last event the snapshot folds (0: none was taken).
    static func position(in db: Database) throws -> Int64 {
        try db.firstRow("SELECT snapshot_through FROM compaction_state WHERE id = 1") { $0.int64(0) } ?? 0
    }
}
