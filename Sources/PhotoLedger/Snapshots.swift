import Foundation
import LedgerCore
import LedgerCrypto
import LedgerStore

/// A snapshot of a shared library's folded state at a server position: the content of every
/// projection table after folding the server's log up to that position, in a canonical encoding,
/// so two devices that folded the same log produce the same bytes.
///
/// The bytes are a header in the clear — magic `PLSNAP01`, the shared library's identifier, the
/// position and the server's chain value there — followed by the content, sealed with the
/// library key in an end-to-end encrypted library (``isSealed``). They are stored by the server
/// as a blob named by their SHA-256 (``hash``), which it can neither read nor check: a snapshot
/// is one device's claim about a fold, verified by the device that installs it once it has
/// refolded the history (``Replica/verifySnapshot()``).
package struct LibrarySnapshot: Sendable, Hashable {
    /// The encoded snapshot.
    package let bytes: [UInt8]
    /// The shared library it belongs to.
    package let library: UUID
    /// The server position it folds the log up to (inclusive).
    package let position: Int64
    /// The server's chain value after the event at ``position``.
    package let chainHash: [UInt8]
    /// How the content is stored: ``Sealing/plain``, or sealed in an end-to-end encrypted
    /// library.
    package let sealing: Sealing

    /// How a snapshot's content is stored (the header's last byte).
    package enum Sealing: UInt8, Sendable, Hashable {
        /// In the clear.
        case plain = 0
        /// Sealed whole with the library key (snapshots of earlier versions): every holder of
        /// the library key reads every asset in it, purged since or not.
        case libraryKey = 1
        /// Each asset's rows sealed with the asset's own key, the rest with the library key:
        /// destroying an asset's key (a purge) makes its part of every older snapshot unreadable.
        case assetKeys = 2
    }

    /// Whether the content is sealed (an end-to-end encrypted library).
    package var isSealed: Bool { sealing != .plain }

    /// The SHA-256 of ``bytes``: the blob's name.
    package var hash: [UInt8] { SHA256.hash(bytes) }

    static let magic = Array("PLSNAP01".utf8)

    /// Reads the header of `bytes`.
    ///
    /// - Throws: ``PhotoLibraryError`` `.internalError` when the bytes are not a snapshot.
    package init(bytes: [UInt8]) throws {
        var reader = ByteReader(bytes)
        do {
            guard try reader.readRaw(count: Self.magic.count) == Self.magic else {
                throw PhotoLibraryError(
                    .internalError, "the downloaded snapshot is not a PhotoLedger snapshot (or one made by a newer version)")
            }
            library = try reader.readUUID()
            position = try reader.readInt()
            chainHash = try reader.readRaw(count: 32)
            let byte = try reader.readByte()
            guard let sealing = Sealing(rawValue: byte) else {
                throw PhotoLibraryError(
                    .changeNotSupported,
                    "the snapshot's content is stored in a way this version does not know (\(byte)): update PhotoLedger")
            }
            self.sealing = sealing
        } catch let error as DecodingError {
            throw PhotoLibraryError(.internalError, "the downloaded snapshot's header is damaged (\(error))")
        }
        self.bytes = bytes
    }

    /// The header's bytes, which a sealed content is bound to.
    static func header(library: UUID, position: Int64, chainHash: [UInt8], sealing: Sealing) -> ByteWriter {
        var writer = ByteWriter(capacity: 1 << 16)
        writer.write(raw: magic)
        writer.write(uuid: library)
        writer.write(int: position)
        writer.write(raw: chainHash)
        writer.write(byte: sealing.rawValue)
        return writer
    }
}

/// A sealed snapshot that this device cannot open yet: it does not hold the library key
/// generation that sealed it (a device awaiting enrolment).
package struct SnapshotNeedsKeys: Error, CustomStringConvertible {
    /// The library key generation that sealed the snapshot.
    package let keyID: UInt32

    package var description: String {
        "the snapshot is sealed with library key \(keyID), which this device does not hold yet: once the device is enrolled, sync again"
    }
}

/// The canonical encoding of the projection tables: for each table of ``Projection/tables`` in
/// order, its name, its columns (in schema order) and its rows in primary-key order, every value
/// tagged with its type. Only the folded state is encoded — nothing of the device that wrote it.
enum SnapshotContent {
    /// One table's rows, decoded.
    struct Table {
        var name: String
        var columns: [String]
        var rows: [[SQLValue]]
    }

    /// The columns of `table` in schema order, and the names of its primary key in key order.
    static func columns(of table: String, in db: Database) throws -> (all: [String], key: [String]) {
        let info = try db.rows("SELECT name, pk FROM pragma_table_info(?) ORDER BY cid", [table]) { ($0.text(0), $0.int64(1)) }
        return (info.map(\.0), info.filter { $0.1 > 0 }.sorted { $0.1 < $1.1 }.map(\.0))
    }

    /// Encodes the projection tables of `db` (or the tables named with `prefix`, such as the
    /// compaction snapshot's `snapshot_` copies).
    static func encode(_ db: Database, prefix: String = "") throws -> [UInt8] {
        var writer = ByteWriter(capacity: 1 << 20)
        writer.write(varint: UInt64(Projection.tables.count))
        for table in Projection.tables {
            let (columns, key) = try Self.columns(of: table, in: db)
            let stored = try Self.columns(of: prefix + table, in: db).all
            writer.write(string: table)
            writer.write(varint: UInt64(columns.count))
            for column in columns { writer.write(string: column) }
            var rows = ByteWriter(capacity: 1 << 16)
            var count: UInt64 = 0
            if !stored.isEmpty {
                // A copy made before a column was added lacks it: the column's default stands in.
                let list = columns.map { stored.contains($0) ? "\"\($0)\"" : "NULL" }.joined(separator: ", ")
                let order = key.map { "\"\($0)\"" }.joined(separator: ", ")
                try db.forEachRow("SELECT \(list) FROM \(prefix + table) ORDER BY \(order)") { row in
                    count += 1
                    for index in 0..<Int32(columns.count) { write(row.value(index), to: &rows) }
                }
            }
            writer.write(varint: count)
            writer.write(raw: rows.bytes)
        }
        return writer.bytes
    }

    static func write(_ value: SQLValue, to writer: inout ByteWriter) {
        switch value {
        case .null: writer.write(byte: 0)
        case .integer(let number):
            writer.write(byte: 1)
            writer.write(int: number)
        case .real(let number):
            writer.write(byte: 2)
            writer.write(double: number)
        case .text(let text):
            writer.write(byte: 3)
            writer.write(string: text)
        case .blob(let bytes):
            writer.write(byte: 4)
            writer.write(bytes: bytes)
        }
    }

    static func read(_ reader: inout ByteReader) throws -> SQLValue {
        switch try reader.readByte() {
        case 0: return .null
        case 1: return .integer(try reader.readInt())
        case 2: return .real(try reader.readDouble())
        case 3: return .text(try reader.readString())
        case 4: return .blob(try reader.readBytes())
        case let tag: throw DecodingError("a value of unknown type \(tag)", offset: reader.offset)
        }
    }

    /// Decodes content made by ``encode(_:prefix:)``.
    static func decode(_ bytes: [UInt8]) throws -> [Table] {
        var reader = ByteReader(bytes)
        let count = try reader.readVarint()
        guard count <= 64 else { throw DecodingError("a table count of \(count)", offset: 0) }
        var tables: [Table] = []
        for _ in 0..<count {
            let name = try reader.readString()
            let columnCount = try reader.readVarint()
            guard columnCount <= 256 else { throw DecodingError("a column count of \(columnCount)", offset: reader.offset) }
            let columns = try (0..<columnCount).map { _ in try reader.readString() }
            let rowCount = try reader.readVarint()
            // Every row takes at least one byte per column: a count beyond the bytes left is damage.
            guard rowCount <= UInt64(bytes.count - reader.offset) else {
                throw DecodingError("a row count of \(rowCount)", offset: reader.offset)
            }
            var rows: [[SQLValue]] = []
            rows.reserveCapacity(Int(rowCount))
            for _ in 0..<rowCount {
                rows.append(try columns.indices.map { _ in try read(&reader) })
            }
            tables.append(Table(name: name, columns: columns, rows: rows))
        }
        guard reader.isAtEnd else { throw DecodingError("bytes after the last table", offset: reader.offset) }
        return tables
    }

    /// The rows of each table by their primary key's encoding, for comparing two contents.
    static func keyedRows(_ tables: [Table], in db: Database) throws -> [String: [[UInt8]: [UInt8]]] {
        var result: [String: [[UInt8]: [UInt8]]] = [:]
        for table in tables {
            let key = try columns(of: table.name, in: db).key
            let positions = key.compactMap { table.columns.firstIndex(of: $0) }
            var rows: [[UInt8]: [UInt8]] = [:]
            for row in table.rows {
                var keyWriter = ByteWriter(), rowWriter = ByteWriter()
                for index in positions { write(row[index], to: &keyWriter) }
                for value in row { write(value, to: &rowWriter) }
                rows[keyWriter.bytes] = rowWriter.bytes
            }
            result[table.name] = rows
        }
        return result
    }
}

/// How the snapshot a library was started from stands.
public struct SnapshotBootstrapStatus: Sendable, Hashable, CustomStringConvertible {
    /// The server position the snapshot folded the log up to.
    public let position: Int64
    /// The device that made the snapshot.
    public let sourceDevice: String
    /// The SHA-256 of the snapshot's bytes, in hex.
    public let snapshotHash: String
    /// The server position through which the history up to the snapshot has been fetched (the
    /// snapshot is verified once it reaches `position`).
    public let fetchedThrough: Int64
    /// When the history was refolded and compared with the snapshot (Unix milliseconds), or nil
    /// while that has not happened.
    public let verifiedAt: UInt64?
    /// The rows in which the snapshot differed from the refold of the history (repaired: the
    /// refold won).
    public let differences: [SnapshotDifference]

    /// Whether the snapshot has been verified.
    public var isVerified: Bool { verifiedAt != nil }

    public var description: String {
        let source = "started from a snapshot at server position \(position) made by \(sourceDevice)"
        guard isVerified else {
            return "\(source); its history fetched through \(fetchedThrough) of \(position), not verified yet (sync to go on)"
        }
        if differences.isEmpty { return "\(source); verified: the refold of the history equals the snapshot" }
        return "\(source); the refold of the history differs from the snapshot in \(differences.count) row(s), repaired (the refold won):\n"
            + differences.map { "  \($0)" }.joined(separator: "\n")
    }
}

/// A projection row in which a snapshot differed from the refold of the history.
public struct SnapshotDifference: Sendable, Hashable, CustomStringConvertible {
    /// What the snapshot had wrong about the row.
    public enum Kind: Int, Sendable, Hashable {
        /// The snapshot lacked a row the history folds to.
        case missing = 1
        /// The snapshot had a row the history does not fold to.
        case extra = 2
        /// The snapshot's row has other values than the history's.
        case changed = 3
    }

    /// The projection table.
    public let table: String
    /// The row's object, when its primary key starts with one (asset, album, folder, event).
    public let object: UUID?
    /// What differed.
    public let kind: Kind

    public var description: String {
        let what: String =
            switch kind {
            case .missing: "missing from the snapshot"
            case .extra: "in the snapshot but not in the history"
            case .changed: "changed in the snapshot"
            }
        return "\(table) row \(object?.uuidString ?? "(no identifier)"): \(what)"
    }
}

extension Replica {
    // MARK: Taking a snapshot

    /// The snapshot of this device's folded state at its pull cursor.
    ///
    /// The device must be up to date with the server and have nothing else folded: it has pulled
    /// (so the position and its chain value are known), its outbox is empty, and it holds no
    /// event beyond its cursor. Then its projections are the fold of exactly the server's log up
    /// to the cursor. Everything is read in one read transaction.
    ///
    /// - Throws: ``PhotoLibraryError`` `.changeNotSupported` when the device is not bound to a
    ///   shared library, has not pulled, has unsent changes or events beyond its cursor, or (an
    ///   encrypted library) does not hold the library key yet.
    package func makeSnapshot() throws -> LibrarySnapshot {
        let state = library.encryption.snapshot
        let (bound, position, chain, content) = try library.readDatabase { db in
            let replica = try ReplicaState.read(db)
            guard let bound = replica.library else {
                throw PhotoLibraryError(.changeNotSupported, "this library is not synced with a shared library yet: sync it first")
            }
            let position = replica.pullCursor
            guard position >= 1 else {
                throw PhotoLibraryError(
                    .changeNotSupported, "this device holds no event of the shared library yet: sync it first, then take the snapshot")
            }
            let pending =
                try db.firstRow(
                    """
                    SELECT count(*) FROM events WHERE (server_seq IS NULL AND event_id NOT IN (SELECT event_id FROM sync_rejections))
                    OR server_seq > ?
                    """, [position]
                ) { $0.int64(0) } ?? 0
            guard pending == 0 else {
                throw PhotoLibraryError(
                    .changeNotSupported,
                    "this device has \(pending) event(s) not yet at or below its pull position \(position) (unsent changes, or pushed "
                        + "after its last pull): sync it until it is up to date, then take the snapshot")
            }
            guard
                let chain = try db.firstRow("SELECT chain_hash FROM server_chain_entries WHERE server_seq = ?", [position], { $0.blob(0) })
            else {
                throw PhotoLibraryError(
                    .changeNotSupported, "this device has not recorded the server's chain value at position \(position): sync it first")
            }
            return (bound, position, chain, try SnapshotContent.encode(db))
        }
        var writer = LibrarySnapshot.header(
            library: bound, position: position, chainHash: chain, sealing: state.enabled ? .assetKeys : .plain)
        if state.enabled {
            guard let ring = state.ring else {
                throw PhotoLibraryError(
                    .changeNotSupported, "this device does not hold the library key yet (not enrolled): it cannot seal a snapshot")
            }
            let tables: [SnapshotContent.Table]
            do {
                tables = try SnapshotContent.decode(content)
            } catch {
                throw PhotoLibraryError(.internalError, "could not read back the snapshot's content (\(error))")
            }
            SnapshotSealing.seal(tables, header: &writer, generation: ring.current, assetKeys: state.assetKeys.all)
        } else {
            writer.write(bytes: content)
        }
        return try LibrarySnapshot(bytes: writer.bytes)
    }

    /// The content of `snapshot`, opened with the library key (and, in a snapshot sealed per
    /// asset, each asset's key) in an encrypted library.
    ///
    /// - Throws: ``SnapshotNeedsKeys`` when this device does not hold the library key generation
    ///   that sealed it; ``PhotoLibraryError`` `.changeNotSupported` when it holds an asset whose
    ///   key has been destroyed since (purged), `.internalError` when it is forged or damaged.
    func content(of snapshot: LibrarySnapshot) throws -> [UInt8] {
        guard snapshot.sealing == .assetKeys else { return try wholeContent(of: snapshot) }
        let opened = try readableParts(of: snapshot)
        if let purged = opened.unreadable.first {
            throw PhotoLibraryError(
                .changeNotSupported,
                "the snapshot at position \(snapshot.position) holds asset \(purged.uuidString), whose key has been destroyed since (the "
                    + "asset was purged): the snapshot is unusable; replay the history instead")
        }
        return SnapshotContent.encode(tables: opened.tables)
    }

    /// Everything of `snapshot` (sealed per asset) that the keys this device holds open: the
    /// library's part, and the rows of every asset whose key it holds; the assets whose part it
    /// cannot open (their keys destroyed by purges) are listed in `unreadable`, their rows absent.
    func readableParts(of snapshot: LibrarySnapshot) throws -> (tables: [SnapshotContent.Table], unreadable: [UUID]) {
        let keys = library.encryption.snapshot
        do {
            return try SnapshotSealing.open(
                snapshot.bytes, headerLength: try Self.headerLength(of: snapshot), generations: { keys.ring?.key($0) },
                assetKeys: keys.assetKeys.all)
        } catch let error as DecodingError {
            throw PhotoLibraryError(.internalError, "the snapshot is damaged (\(error))")
        }
    }

    /// What the keys this device holds read of `snapshot`: the canonical content of the rows it
    /// opens (``readableParts(of:)``), and the assets whose part it cannot open. For tests and
    /// audits: after a purge, nothing of the purged asset is in it.
    package func readableContent(of snapshot: LibrarySnapshot) throws -> (content: [UInt8], unreadable: [UUID]) {
        guard snapshot.sealing == .assetKeys else { return (try wholeContent(of: snapshot), []) }
        let opened = try readableParts(of: snapshot)
        return (SnapshotContent.encode(tables: opened.tables), opened.unreadable)
    }

    private static func headerLength(of snapshot: LibrarySnapshot) throws -> Int {
        var reader = ByteReader(snapshot.bytes)
        _ = try reader.readRaw(count: LibrarySnapshot.magic.count + 16)
        _ = try reader.readInt()
        _ = try reader.readRaw(count: 32)
        _ = try reader.readByte()
        return reader.offset
    }

    /// The content of a plain snapshot, or of one sealed whole with the library key.
    private func wholeContent(of snapshot: LibrarySnapshot) throws -> [UInt8] {
        do {
            let headerEnd = try Self.headerLength(of: snapshot)
            var reader = ByteReader(Array(snapshot.bytes[headerEnd...]))
            guard snapshot.isSealed else { return try reader.readBytes() }
            let keyID = UInt32(truncatingIfNeeded: try reader.readFixed())
            let nonce = try reader.readRaw(count: AEAD.nonceLength)
            let sealed = try reader.readBytes()
            guard let generation = library.encryption.snapshot.ring?.key(keyID) else { throw SnapshotNeedsKeys(keyID: keyID) }
            do {
                return try AEAD.open(
                    sealed, key: generation.derive("snapshot"), nonce: nonce, associatedData: Array(snapshot.bytes[..<headerEnd]))
            } catch {
                throw PhotoLibraryError(.internalError, "the snapshot does not open with the library key: it is forged or damaged")
            }
        } catch let error as DecodingError {
            throw PhotoLibraryError(.internalError, "the snapshot is damaged (\(error))")
        }
    }

    // MARK: Starting from a snapshot

    /// Installs `snapshot` into this library, which must hold no event yet, so that it is
    /// usable at once: its rows become the projections (and the compaction snapshot the
    /// projections are rebuilt from), the server's event at the snapshot's position becomes the
    /// first event of the live log, and the pull cursor moves to the position. Pulls then bring
    /// only the events after it; ``appendHistory(_:)`` fetches the history before it and
    /// ``verifySnapshot()`` checks the snapshot against it.
    ///
    /// The snapshot is checked against the server's chain first: its position and chain value
    /// must be those of `event` (the server's event at the position, with its chain value),
    /// which must link after `previousChainHash` (the server's value one position before).
    ///
    /// - Parameters:
    ///   - expectedHash: The blob name the server recorded for the snapshot.
    ///   - sourceDevice: The device that made it, as the server recorded.
    /// - Throws: ``PhotoLibraryError`` `.changeNotSupported` when the library already holds
    ///   events or the snapshot is of another library; `.internalError` when the snapshot does
    ///   not match the server's chain, its hash, or is damaged. Nothing is written then.
    package func installSnapshot(
        _ snapshot: LibrarySnapshot, expectedHash: [UInt8], sourceDevice: String, event: SequencedEvent, previousChainHash: [UInt8]
    ) throws {
        let position = snapshot.position
        guard snapshot.hash == expectedHash else {
            throw PhotoLibraryError(.internalError, "the downloaded snapshot does not hash to its name: it was damaged on the way")
        }
        guard let bound = try state().library, bound == snapshot.library else {
            throw PhotoLibraryError(
                .changeNotSupported, "the snapshot belongs to shared library \(snapshot.library.uuidString), not to this device's")
        }
        var chain = HashChain(head: previousChainHash)
        guard event.serverSequence == position, constantTimeEquals(event.serverChainHash, snapshot.chainHash),
            constantTimeEquals(chain.link(event.event), snapshot.chainHash)
        else {
            throw PhotoLibraryError(
                .internalError,
                "the snapshot at position \(position) does not match the server's chain there: it folds another log; it was not installed")
        }
        let content = try content(of: snapshot)
        let tables: [SnapshotContent.Table]
        do {
            tables = try SnapshotContent.decode(content)
        } catch {
            throw PhotoLibraryError(.internalError, "the snapshot's content is damaged (\(error)); it was not installed")
        }
        if snapshot.sealing == .libraryKey { try checkKeys(of: tables, position: position) }
        let now = Int64(library.options.clock())
        var latest: Int64 = Int64(bitPattern: event.event.timestamp.rawValue)
        try library.withDatabase { db in
            let held = try db.firstRow("SELECT count(*) FROM events") { $0.int64(0) } ?? 0
            let installed = try db.firstRow("SELECT 1 FROM snapshot_bootstrap") { _ in true } ?? false
            guard held == 0, !installed, try AuditState.read(db).archivedThrough == 0 else {
                throw PhotoLibraryError(
                    .changeNotSupported, "this library already holds events: a snapshot can only start a new, empty library")
            }
            for table in tables {
                guard Projection.tables.contains(table.name) else {
                    throw PhotoLibraryError(
                        .changeNotSupported,
                        "the snapshot holds table '\(table.name)', which this version does not know: update PhotoLedger")
                }
                let known = try SnapshotContent.columns(of: table.name, in: db).all
                if let unknown = table.columns.first(where: { !known.contains($0) }) {
                    throw PhotoLibraryError(
                        .changeNotSupported,
                        "the snapshot's table '\(table.name)' has column '\(unknown)', which this version does not know: update PhotoLedger"
                    )
                }
                guard !table.rows.isEmpty else { continue }
                let insert = try db.cachedStatement(
                    "INSERT INTO \(table.name) (\(table.columns.map { "\"\($0)\"" }.joined(separator: ", "))) VALUES ("
                        + Array(repeating: "?", count: table.columns.count).joined(separator: ", ") + ")")
                let stamps = table.columns.indices.filter { table.columns[$0].hasSuffix("_hlc") }
                for row in table.rows {
                    insert.reset()
                    for (index, value) in row.enumerated() { try insert.bind(value, at: Int32(index + 1)) }
                    _ = try insert.step()
                    for index in stamps { if case .integer(let stamp) = row[index] { latest = max(latest, stamp) } }
                }
            }
            try db.execute(ProjectionBatch.allMemberAssetsSQL)
            try CompactionSnapshot.take(db)
            let stored = event.event
            try db.execute(
                """
                INSERT INTO events (local_seq, event_id, device_id, device_seq, hlc, change_block, object_id, type, schema_version, payload,
                    hash, server_seq, server_chain_hash, format, library, key_id, nonce)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
                [
                    position, stored.id.bytes, stored.device.rawValue, stored.deviceSequence, Int64(bitPattern: stored.timestamp.rawValue),
                    stored.changeBlock.bytes, stored.object.bytes, stored.type, stored.schemaVersion, stored.payload, snapshot.chainHash,
                    position, snapshot.chainHash, Int64(stored.format.rawValue), stored.library?.bytes, Int64(stored.seal?.keyID ?? 0),
                    stored.seal?.nonce,
                ])
            // As after a compaction interrupted between copying and deleting: the archive is to
            // hold the history through the snapshot's event, which the live log keeps too.
            try db.execute(
                """
                UPDATE compaction_state SET archived_through = ?, archived_hash = ?, server_watermark = ?, snapshot_through = ? WHERE id = 1
                """, [position, snapshot.chainHash, position, position])
            try db.execute("UPDATE replica_state SET pull_cursor = ? WHERE id = 1", [position])
            try db.execute(
                """
                INSERT INTO snapshot_bootstrap (id, position, chain_hash, sha256, content_sha256, source_device, installed_at)
                VALUES (1, ?, ?, ?, ?, ?, ?)
                """, [position, snapshot.chainHash, snapshot.hash, SHA256.hash(content), sourceDevice, now])
            // This device's changes must win over every change the snapshot folded.
            try EventLog(db).record(timestamp: HLCTimestamp(rawValue: UInt64(bitPattern: latest)))
        }
        try? library.clock.receive(HLCTimestamp(rawValue: UInt64(bitPattern: latest)))
        let audit = try library.readDatabase { try AuditState.read($0) }
        _ = try library.archiveConnection.open(for: library.url, libraryID: audit.libraryID, create: true)
    }

    /// Whether the library holds no event at all (a new library, which a snapshot may start).
    package func isEmpty() throws -> Bool {
        try library.readDatabase { db in
            try db.firstRow("SELECT NOT EXISTS (SELECT 1 FROM events) AND NOT EXISTS (SELECT 1 FROM snapshot_bootstrap)") { $0.int64(0) }
                == 1
        }
    }

    /// In an encrypted library, a snapshot must not bring back what crypto-shredding destroyed:
    /// every live asset it holds must have a key this device holds (every enrolled device holds
    /// the key of every asset not purged). An asset whose key is gone was purged after the
    /// snapshot was taken, so the snapshot is unusable.
    private func checkKeys(of tables: [SnapshotContent.Table], position: Int64) throws {
        guard let assets = tables.first(where: { $0.name == "assets" }),
            let id = assets.columns.firstIndex(of: "asset_id"), let created = assets.columns.firstIndex(of: "created"),
            let purged = assets.columns.firstIndex(of: "purged")
        else { return }
        let held = library.encryption.snapshot.assetKeys
        for row in assets.rows where row[created] == .integer(1) && row[purged] == .integer(0) {
            guard case .blob(let bytes) = row[id], let asset = UUID(bytes: bytes), held[asset] == nil else { continue }
            throw PhotoLibraryError(
                .changeNotSupported,
                "the snapshot at position \(position) holds asset \(asset.uuidString), whose key has been destroyed since (the asset "
                    + "was purged): the snapshot is unusable; replay the history instead")
        }
    }

    /// How the snapshot this library was started from stands, or nil when it was not.
    package func bootstrapStatus() throws -> SnapshotBootstrapStatus? {
        try library.snapshotBootstrapStatus()
    }

    /// Appends the next events of the history up to the snapshot's position (in server order,
    /// following what was fetched before) to the archive, checking each against the server's
    /// chain: the chain from the first event must reach, at the snapshot's position, the value
    /// the snapshot names. Returns the position fetched through.
    ///
    /// - Throws: ``PhotoLibraryError`` `.internalError` when an event does not follow the
    ///   server's chain (nothing of the batch is kept then).
    @discardableResult
    package func appendHistory(_ events: [SequencedEvent]) throws -> Int64 {
        guard let status = try bootstrapStatus() else {
            throw PhotoLibraryError(.changeNotSupported, "this library was not started from a snapshot: it has no history to fetch")
        }
        let target = status.position
        var fetched = status.fetchedThrough
        guard fetched < target, !events.isEmpty else { return fetched }
        let audit = try library.readDatabase { try AuditState.read($0) }
        guard let archive = try library.archiveConnection.open(for: library.url, libraryID: audit.libraryID, create: true) else {
            throw PhotoLibraryError(.internalError, "could not open the event archive \(library.archiveURL.path)")
        }
        var entries: [(Int64, [UInt8], [UInt8])] = []
        try archive.write { db in
            var chain = HashChain(
                head: fetched == 0
                    ? HashChain.origin : try db.firstRow("SELECT hash FROM events WHERE local_seq = ?", [fetched]) { $0.blob(0) } ?? [])
            let insert = try db.cachedStatement(
                """
                INSERT INTO events (local_seq, event_id, device_id, device_seq, hlc, change_block, object_id, type, schema_version,
                    payload, server_seq, hash, format, library, key_id, nonce)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """)
            for sequenced in events where sequenced.serverSequence > fetched {
                let event = sequenced.event
                guard sequenced.serverSequence == fetched + 1, sequenced.serverSequence <= target,
                    constantTimeEquals(chain.link(event), sequenced.serverChainHash)
                else {
                    throw PhotoLibraryError(
                        .internalError,
                        "the server's event at position \(sequenced.serverSequence) does not follow its chain up to the snapshot; "
                            + "the history was not fetched further: check the server (photoledger-server verify)")
                }
                try insert.execute([
                    sequenced.serverSequence, event.id.bytes, event.device.rawValue, event.deviceSequence,
                    Int64(bitPattern: event.timestamp.rawValue), event.changeBlock.bytes, event.object.bytes, event.type,
                    event.schemaVersion,
                    event.payload, sequenced.serverSequence, sequenced.serverChainHash, Int64(event.format.rawValue), event.library?.bytes,
                    Int64(event.seal?.keyID ?? 0), event.seal?.nonce,
                ])
                fetched = sequenced.serverSequence
                entries.append((fetched, event.id.bytes, sequenced.serverChainHash))
            }
            if fetched == target, !constantTimeEquals(chain.head, audit.archivedHash) {
                throw PhotoLibraryError(
                    .internalError,
                    "the server's history up to the snapshot does not end at the chain value the snapshot names at position "
                        + "\(status.position); the history was not fetched further: check the server (photoledger-server verify)")
            }
        }
        try library.withDatabase { db in
            try db.execute("UPDATE snapshot_bootstrap SET fetched_through = ? WHERE id = 1", [fetched])
            // The server's chain values of the archived history stay recorded, as compaction keeps them.
            let record = try db.cachedStatement(
                "INSERT INTO server_chain (server_seq, event_id, chain_hash, held) VALUES (?, ?, ?, 1) ON CONFLICT (server_seq) DO NOTHING")
            for entry in entries { try record.execute([entry.0, entry.1, entry.2]) }
        }
        return fetched
    }

    /// Refolds the whole history (fetched with ``appendHistory(_:)``) up to the snapshot's
    /// position, as a device that replayed it would, and compares the result with the
    /// snapshot. A difference is recorded (``SnapshotBootstrapStatus/differences``) and repaired:
    /// the refold replaces the snapshot and the projections are rebuilt from it and the live
    /// log. Returns the status after the verification; a verified snapshot is not checked again.
    ///
    /// - Throws: ``PhotoLibraryError`` `.changeNotSupported` while the history is not fetched
    ///   completely.
    @discardableResult
    package func verifySnapshot() throws -> SnapshotBootstrapStatus {
        guard let status = try bootstrapStatus() else {
            throw PhotoLibraryError(.changeNotSupported, "this library was not started from a snapshot: there is nothing to verify")
        }
        if status.isVerified { return status }
        guard status.fetchedThrough >= status.position else {
            throw PhotoLibraryError(
                .changeNotSupported,
                "the history up to the snapshot is fetched through \(status.fetchedThrough) of \(status.position): sync to fetch the rest")
        }
        try library.verifySnapshotByRefolding(status)
        return try bootstrapStatus()!
    }
}

extension PhotoLibrary {
    /// How the snapshot this library was started from stands, or nil when it was not started
    /// from one.
    public func snapshotBootstrapStatus() throws -> SnapshotBootstrapStatus? {
        try readDatabase { db in
            guard
                let row = try db.firstRow(
                    "SELECT position, source_device, sha256, fetched_through, verified_at FROM snapshot_bootstrap WHERE id = 1",
                    [], { ($0.int64(0), $0.text(1), $0.blob(2), $0.int64(3), $0.optionalInt64(4)) })
            else { return nil }
            let differences = try db.rows("SELECT table_name, row_key, kind FROM snapshot_differences ORDER BY table_name, row_key") {
                row in
                var reader = ByteReader(row.blob(1))
                let object: UUID? =
                    if case .blob(let bytes)? = try? SnapshotContent.read(&reader), bytes.count == 16 { UUID(bytes: bytes) } else { nil }
                return SnapshotDifference(
                    table: row.text(0), object: object, kind: SnapshotDifference.Kind(rawValue: Int(row.int64(2))) ?? .changed)
            }
            return SnapshotBootstrapStatus(
                position: row.0, sourceDevice: row.1, snapshotHash: Hex.encode(row.2), fetchedThrough: row.3,
                verifiedAt: row.4.map { UInt64(clamping: $0) }, differences: differences)
        }
    }

    /// Folds the history up to the snapshot's position into a scratch library file beside this
    /// one, exactly as a device replaying it would, compares its projections with the snapshot,
    /// and repairs any difference.
    func verifySnapshotByRefolding(_ status: SnapshotBootstrapStatus) throws {
        let scratchURL = url.deletingLastPathComponent().appendingPathComponent(
            ".\(url.deletingPathExtension().lastPathComponent).snapshot-refold-\(UUID().uuidString).sqlite")
        defer {
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: scratchURL.path + suffix) }
        }
        let context = foldContext
        let refolded: (content: [UInt8], tables: [SnapshotContent.Table])
        var laterPurged = Set<UUID>()
        do {
            let scratch = try Database(path: scratchURL.path)
            try Migrator.library().migrate(scratch)
            try withArchive { _, archive in
                guard let archive else {
                    throw PhotoLibraryError(.internalError, "the event archive holding the history up to the snapshot is missing")
                }
                var cursor: Int64 = 0
                while true {
                    let page = try EventLog(archive).events(after: cursor, limit: 5000)
                    guard let last = page.last else { break }
                    try scratch.inTransaction {
                        _ = try EventLog(scratch).append(page.map(\.event), serverSequences: page.map { $0.serverSequence ?? 0 })
                    }
                    cursor = last.localSequence
                }
            }
            // The rebuild reads the log through a connection of its own: every event is committed before.
            // As ``rebuild()`` does: purged assets are folded again without what their destroyed keys sealed.
            try scratch.inTransaction {
                try Projection(scratch).rebuild(context: context)
                _ = try shred(Set(purgedAssets(scratch)), in: scratch, archive: nil)
                // Assets purged after the snapshot's position: their events up to it are sealed
                // with keys destroyed since, so the refold cannot read them and waits for nothing.
                if encryption.snapshot.enabled {
                    laterPurged = try Set(readDatabase { try purgedAssets($0) }).subtracting(try purgedAssets(scratch))
                    try forgetShreddedEvents(of: Array(laterPurged), in: scratch, archive: nil)
                }
            }
            let content = try SnapshotContent.encode(scratch)
            refolded = (content, try SnapshotContent.decode(content))
        } catch {
            throw Self.translate(error, doing: "refold the history to verify the snapshot")
        }
        let claimedHash = try readDatabase { db in
            try db.firstRow("SELECT content_sha256 FROM snapshot_bootstrap WHERE id = 1") { $0.blob(0) }
        }
        try withDatabase { db in
            let current = try SnapshotContent.encode(db, prefix: CompactionSnapshot.table(""))
            // What was installed (the snapshot, and any refold of its objects since) against the
            // history. After an interrupted repair the installed state is already the history's:
            // the differences recorded then stay.
            guard current != refolded.content else { return }
            // The rows of assets purged since the snapshot's position are not compared: the
            // history cannot say what they were (their keys are destroyed), and the purge in the
            // live log folds them to the same tombstone either way.
            let installed = try SnapshotContent.decode(current)
            let held = try SnapshotContent.keyedRows(SnapshotContent.without(laterPurged, in: installed), in: db)
            let truth = try SnapshotContent.keyedRows(
                SnapshotContent.without(laterPurged, in: refolded.tables, resourcesFrom: installed), in: db)
            try db.execute("DELETE FROM snapshot_differences")
            let record = try db.cachedStatement(
                "INSERT INTO snapshot_differences (table_name, row_key, kind) VALUES (?, ?, ?) ON CONFLICT DO NOTHING")
            for table in Projection.tables {
                let claimed = held[table] ?? [:], folded = truth[table] ?? [:]
                for (key, row) in folded where claimed[key] != row {
                    try record.execute([table, key, Int64(claimed[key] == nil ? 1 : 3)])
                }
                for key in claimed.keys where folded[key] == nil { try record.execute([table, key, Int64(2)]) }
            }
            // The refold replaces the snapshot the projections are rebuilt from.
            for table in refolded.tables {
                try db.execute("DELETE FROM \(CompactionSnapshot.table(table.name))")
                guard !table.rows.isEmpty else { continue }
                let insert = try db.cachedStatement(
                    "INSERT INTO \(CompactionSnapshot.table(table.name)) (\(table.columns.map { "\"\($0)\"" }.joined(separator: ", "))) "
                        + "VALUES (" + Array(repeating: "?", count: table.columns.count).joined(separator: ", ") + ")")
                for row in table.rows {
                    insert.reset()
                    for (index, value) in row.enumerated() { try insert.bind(value, at: Int32(index + 1)) }
                    _ = try insert.step()
                }
            }
        }
        // The projections are rebuilt from the verified snapshot and the live log whenever the
        // claim was not the history's fold; the verification is recorded once they are.
        let differed = try snapshotBootstrapStatus()?.differences.isEmpty == false
        if SHA256.hash(refolded.content) != claimedHash || differed { try rebuild() }
        try withDatabase { db in
            try db.execute("UPDATE snapshot_bootstrap SET verified_at = ? WHERE id = 1", [Int64(options.clock())])
        }
    }
}
