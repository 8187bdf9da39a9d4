import Foundation
import LedgerCore
import LedgerStore
import Synchronization

/// The audit bookkeeping of a library file (Migrations/Library/0003_audit_history.sql): its
/// identity and its compaction horizon.
struct AuditState: Sendable, Equatable {
    /// The random identity of the library file, carried by change tokens and by the archive.
    var libraryID: UUID
    /// The local sequence of the last event moved to the archive (0 when none was).
    var archivedThrough: Int64
    /// The chain value after that event (32 zero bytes when none was archived).
    var archivedHash: [UInt8]
    /// The server sequence the last compaction was given.
    var serverWatermark: Int64
    /// The local sequence the projection snapshot was taken at (0 when there is none).
    var snapshotThrough: Int64

    static func read(_ db: Database) throws -> AuditState {
        guard
            let libraryID = try db.firstRow("SELECT library_id FROM library_identity WHERE id = 1", [], { UUID(bytes: $0.blob(0)) }) ?? nil,
            let state = try db.firstRow(
                "SELECT archived_through, archived_hash, server_watermark, snapshot_through FROM compaction_state WHERE id = 1", [],
                {
                    AuditState(
                        libraryID: libraryID, archivedThrough: $0.int64(0), archivedHash: $0.blob(1), serverWatermark: $0.int64(2),
                        snapshotThrough: $0.int64(3))
                })
        else {
            throw PhotoLibraryError(.internalError, "the library's audit tables are missing or damaged; restore the file from a backup")
        }
        return state
    }
}

/// The archive of a compacted library: a separate SQLite file beside the library that holds the
/// events moved out of the live log, with the same columns, indexes and hash chain values, in a
/// table that is strictly append-only (no update, no delete). Its schema comes from
/// `Migrations/Archive`, through the same migrator as the library's.
///
/// The archive holds a prefix of the log in local order, so the chain runs from the archive's
/// first event into the live log without a gap.
enum EventArchive {
    /// `Photos.sqlite` → `Photos.archive.sqlite`, in the same directory.
    static func url(for library: URL) -> URL {
        library.deletingPathExtension().appendingPathExtension("archive.sqlite")
    }

    /// Opens the archive of the library at `library`: nil when it has none and `create` is false.
    ///
    /// - Throws: ``PhotoLibraryError`` when the file belongs to another library or is damaged.
    static func open(for library: URL, libraryID: UUID, create: Bool) throws -> DatabaseQueue? {
        let url = url(for: library)
        guard create || FileManager.default.fileExists(atPath: url.path) else { return nil }
        do {
            let queue = try DatabaseQueue(path: url.path)
            try queue.writeWithoutTransaction { db in
                try Migrator.archive().migrate(db)
                try db.execute("INSERT INTO archive_identity (id, library_id) VALUES (1, ?) ON CONFLICT DO NOTHING", [libraryID.bytes])
                let owner = try db.firstRow("SELECT library_id FROM archive_identity WHERE id = 1") { UUID(bytes: $0.blob(0)) } ?? nil
                guard owner == libraryID else {
                    throw PhotoLibraryError(
                        .internalError,
                        "the event archive \(url.path) belongs to another library; move it away or restore this library's own archive")
                }
            }
            return queue
        } catch {
            throw PhotoLibrary.translate(error, doing: "open the event archive \(url.path)")
        }
    }
}

/// The archive's connection, opened (and migrated) once per library instance and kept: every
/// pull page of a compacted library reads it. Access is serialized by the queue; the archive is
/// always entered before the library's own connections, so the two never wait for each other in
/// opposite orders.
final class ArchiveConnection: Sendable {
    private let queue = Mutex<DatabaseQueue?>(nil)

    /// The open archive of `library`, opened (or created) on first use; nil when it has none and
    /// `create` is false.
    func open(for library: URL, libraryID: UUID, create: Bool) throws -> DatabaseQueue? {
        if let open = queue.withLock({ $0 }) { return open }
        guard let opened = try EventArchive.open(for: library, libraryID: libraryID, create: create) else { return nil }
        return queue.withLock { current in
            if let current { return current }
            current = opened
            return opened
        }
    }
}

extension PhotoLibrary {
    /// The audit state and, when the library has been compacted, its open archive, used by
    /// `body` alone while it runs. With `writing` (`body` writes the library), the state is read
    /// on the writer's connection, whose pages are current after its own commits, instead of in
    /// a read transaction that would read again the pages the last commit changed.
    func withArchive<T>(writing: Bool = false, _ body: (AuditState, Database?) throws -> T) throws -> T {
        let state =
            writing
            ? try withDatabaseWithoutTransaction { try AuditState.read($0) } : try readDatabase { try AuditState.read($0) }
        guard state.archivedThrough > 0 else { return try body(state, nil) }
        guard let archive = try archiveConnection.open(for: url, libraryID: state.libraryID, create: false) else {
            throw PhotoLibraryError(
                .internalError,
                "the event archive \(EventArchive.url(for: url).path) is missing: events up to \(state.archivedThrough) were moved "
                    + "there by compaction; restore it from a backup")
        }
        do {
            return try archive.writeWithoutTransaction { try body(state, $0) }
        } catch let error as StoreUsageError {
            throw Self.translate(error, doing: "read the event archive")
        }
    }
}
