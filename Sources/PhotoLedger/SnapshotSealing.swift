import Foundation
import LedgerCore
import LedgerCrypto
import LedgerStore

extension SnapshotContent {
    /// `tables` without the rows of `assets`: their `assets`, `asset_resources` and
    /// `album_members` rows, and the `referenced_resources` of the resources they hold in
    /// `resourcesFrom` (`tables` when nil).
    static func without(_ assets: Set<UUID>, in tables: [Table], resourcesFrom source: [Table]? = nil) -> [Table] {
        guard !assets.isEmpty else { return tables }
        let ids = Set(assets.map(\.bytes))
        var hashes = Set<[UInt8]>()
        for table in source ?? tables where table.name == "assets" || table.name == "asset_resources" {
            guard let id = table.columns.firstIndex(of: "asset_id") else { continue }
            let columns = ["sha256", "content_sha256", "adjustment_sha256"].compactMap { table.columns.firstIndex(of: $0) }
            for row in table.rows {
                guard case .blob(let bytes) = row[id], ids.contains(bytes) else { continue }
                for column in columns { if case .blob(let hash) = row[column] { hashes.insert(hash) } }
            }
        }
        return tables.map { table in
            var table = table
            if let id = table.columns.firstIndex(of: "asset_id") {
                table.rows.removeAll { if case .blob(let bytes) = $0[id] { ids.contains(bytes) } else { false } }
            } else if table.name == "referenced_resources", let hash = table.columns.firstIndex(of: "sha256") {
                table.rows.removeAll { if case .blob(let bytes) = $0[hash] { hashes.contains(bytes) } else { false } }
            }
            return table
        }
    }

    /// The canonical encoding of `tables` (as ``encode(_:prefix:)`` writes them from a
    /// database): decoding and encoding again gives the same bytes.
    static func encode(tables: [Table]) -> [UInt8] {
        var writer = ByteWriter(capacity: 1 << 20)
        writer.write(varint: UInt64(tables.count))
        for table in tables {
            writer.write(string: table.name)
            writer.write(varint: UInt64(table.columns.count))
            for column in table.columns { writer.write(string: column) }
            writer.write(varint: UInt64(table.rows.count))
            for row in table.rows { for value in row { write(value, to: &writer) } }
        }
        return writer.bytes
    }
}

/// A snapshot's content sealed per asset (``LibrarySnapshot/Sealing/assetKeys``), so that
/// crypto-shredding reaches into old snapshots: destroying an asset's key makes its rows in every
/// snapshot unreadable, even to a device holding the library key, and even when the server kept
/// the snapshot's bytes.
///
/// Every row that belongs to an asset — its `assets` row, its `asset_resources`, its
/// `album_members` and `asset_renditions` rows, and the `referenced_resources` rows of the
/// resources it holds — is sealed
/// in the asset's own *part* with a key derived from the asset's key; the rest (albums, folders,
/// quarantine, purged assets, whose rows hold nothing but their tombstone) is the *library part*,
/// sealed with the current library key generation. Only assets whose key the writing device holds
/// get a part of their own (a device without an asset's key folded nothing of its sealed
/// payloads). After the header (the associated data of every part):
///
/// | field | encoding |
/// |---|---|
/// | generation | the library key generation (8 bytes) |
/// | library part | a 24-byte nonce, then the XChaCha20-Poly1305 ciphertext (length-prefixed) |
/// | asset parts | their count (varint), then each: a 24-byte nonce and its ciphertext (length-prefixed) |
///
/// The library part's plaintext lists each table (name, columns, its total row count, then its
/// library rows, each with its index among all rows), then the assets with a part (identifier and
/// asset key identifier) in the order of their parts. An asset part's plaintext lists, per table,
/// its rows with their indexes; its associated data is the header followed by the asset's
/// identifier. The indexes put every row back in its place, so the opened content is the canonical
/// content, byte for byte. Nonces are derived from the plaintext by a keyed hash: equal folds
/// still seal to equal bytes.
enum SnapshotSealing {
    /// The assets' rows by table: the column that names the asset, for tables with one.
    private static let assetColumns = [
        "assets": "asset_id", "asset_resources": "asset_id", "album_members": "asset_id", "asset_renditions": "asset_id",
    ]

    /// Seals `tables` after the header in `writer` (see the type's documentation).
    static func seal(
        _ tables: [SnapshotContent.Table], header writer: inout ByteWriter, generation: (id: UInt32, key: SecretKey),
        assetKeys: [UUID: (id: UInt32, key: SecretKey)]
    ) {
        let header = writer.bytes
        // The assets with a part: not purged, key held; in primary-key order.
        var owners: [UUID] = []
        if let assets = tables.first(where: { $0.name == "assets" }), let id = assets.columns.firstIndex(of: "asset_id"),
            let purged = assets.columns.firstIndex(of: "purged")
        {
            for row in assets.rows where row[purged] != .integer(1) {
                guard case .blob(let bytes) = row[id], let asset = UUID(bytes: bytes), assetKeys[asset] != nil else { continue }
                owners.append(asset)
            }
        }
        let partOf = Dictionary(uniqueKeysWithValues: owners.enumerated().map { ($0.element, $0.offset) })
        // The resources of each asset with a part, for `referenced_resources`.
        var resourceOwner: [[UInt8]: Int] = [:]
        for table in tables where table.name == "asset_resources" || table.name == "assets" {
            guard let id = table.columns.firstIndex(of: "asset_id") else { continue }
            let hashes = ["sha256", "content_sha256", "adjustment_sha256"].compactMap { table.columns.firstIndex(of: $0) }
            for row in table.rows {
                guard case .blob(let bytes) = row[id], let asset = UUID(bytes: bytes), let part = partOf[asset] else { continue }
                for column in hashes { if case .blob(let hash) = row[column], resourceOwner[hash] == nil { resourceOwner[hash] = part } }
            }
        }
        var library = ByteWriter(capacity: 1 << 16)
        var parts = [ByteWriter](repeating: ByteWriter(), count: owners.count)
        library.write(varint: UInt64(tables.count))
        for table in tables {
            // Each row's part (nil: the library's).
            let column = assetColumns[table.name].flatMap { table.columns.firstIndex(of: $0) }
            let hash = table.name == "referenced_resources" ? table.columns.firstIndex(of: "sha256") : nil
            let owner: ([SQLValue]) -> Int? = { row in
                if let column, case .blob(let bytes) = row[column], let asset = UUID(bytes: bytes) { return partOf[asset] }
                if let hash, case .blob(let bytes) = row[hash] { return resourceOwner[bytes] }
                return nil
            }
            var libraryRows = ByteWriter(), libraryCount: UInt64 = 0
            var partRows = [ByteWriter](repeating: ByteWriter(), count: owners.count),
                partCounts = [UInt64](repeating: 0, count: owners.count)
            for (index, row) in table.rows.enumerated() {
                if let part = owner(row) {
                    partRows[part].write(varint: UInt64(index))
                    for value in row { SnapshotContent.write(value, to: &partRows[part]) }
                    partCounts[part] += 1
                } else {
                    libraryRows.write(varint: UInt64(index))
                    for value in row { SnapshotContent.write(value, to: &libraryRows) }
                    libraryCount += 1
                }
            }
            library.write(string: table.name)
            library.write(varint: UInt64(table.columns.count))
            for name in table.columns { library.write(string: name) }
            library.write(varint: UInt64(table.rows.count))
            library.write(varint: libraryCount)
            library.write(raw: libraryRows.bytes)
            for part in owners.indices {
                parts[part].write(varint: partCounts[part])
                parts[part].write(raw: partRows[part].bytes)
            }
        }
        library.write(varint: UInt64(owners.count))
        for asset in owners {
            library.write(uuid: asset)
            library.write(varint: UInt64(assetKeys[asset]!.id))
        }
        writer.write(fixed: UInt64(generation.id))
        seal(library.bytes, key: generation.key.derive("snapshot"), associatedData: header, to: &writer)
        writer.write(varint: UInt64(owners.count))
        for (part, asset) in owners.enumerated() {
            var associated = header
            withUnsafeBytes(of: asset.uuid) { associated.append(contentsOf: $0) }
            seal(parts[part].bytes, key: assetKeys[asset]!.key.derive("snapasst"), associatedData: associated, to: &writer)
        }
    }

    private static func seal(_ plaintext: [UInt8], key: SecretKey, associatedData: [UInt8], to writer: inout ByteWriter) {
        let nonce = Array(KeyedHash.hash(plaintext, key: key.derive("snapnonc")).prefix(AEAD.nonceLength))
        writer.write(raw: nonce)
        writer.write(bytes: AEAD.seal(plaintext, key: key, nonce: nonce, associatedData: associatedData))
    }

    /// Opens what the keys given open of `bytes` (a snapshot sealed per asset whose header takes
    /// `headerLength` bytes): the tables with the rows of the library part and of every asset
    /// part whose key is held, in their places, and the assets whose part is not readable (their
    /// key is not held: destroyed by a purge).
    ///
    /// - Throws: ``SnapshotNeedsKeys`` when the library key generation is not held;
    ///   ``PhotoLibraryError`` `.internalError` when a part does not open with its key (forged or
    ///   damaged); `DecodingError` when the bytes are damaged.
    static func open(
        _ bytes: [UInt8], headerLength: Int, generations: (UInt32) -> SecretKey?, assetKeys: [UUID: (id: UInt32, key: SecretKey)]
    ) throws -> (tables: [SnapshotContent.Table], unreadable: [UUID]) {
        let header = Array(bytes[..<headerLength])
        var reader = ByteReader(Array(bytes[headerLength...]))
        let keyID = UInt32(truncatingIfNeeded: try reader.readFixed())
        guard let generation = generations(keyID) else { throw SnapshotNeedsKeys(keyID: keyID) }
        func open(_ key: SecretKey, _ associatedData: [UInt8], what: String) throws -> [UInt8] {
            let nonce = try reader.readRaw(count: AEAD.nonceLength)
            let sealed = try reader.readBytes()
            do {
                return try AEAD.open(sealed, key: key, nonce: nonce, associatedData: associatedData)
            } catch {
                throw PhotoLibraryError(
                    .internalError, "the snapshot's \(what) does not open with its key: the snapshot is forged or damaged")
            }
        }
        var library = ByteReader(try open(generation.derive("snapshot"), header, what: "library part"))
        var tables: [SnapshotContent.Table] = []
        var slots: [[[SQLValue]?]] = []
        let tableCount = try library.readVarint()
        guard tableCount <= 64 else { throw DecodingError("a table count of \(tableCount)", offset: library.offset) }
        for _ in 0..<tableCount {
            let name = try library.readString()
            let columnCount = try library.readVarint()
            guard columnCount <= 256 else { throw DecodingError("a column count of \(columnCount)", offset: library.offset) }
            let columns = try (0..<columnCount).map { _ in try library.readString() }
            let total = try library.readVarint()
            guard total <= UInt64(bytes.count) else { throw DecodingError("a row count of \(total)", offset: library.offset) }
            var rows = [[SQLValue]?](repeating: nil, count: Int(total))
            try readRows(&library, into: &rows, columns: columns.count)
            tables.append(SnapshotContent.Table(name: name, columns: columns, rows: []))
            slots.append(rows)
        }
        let assetCount = try library.readVarint()
        guard assetCount <= UInt64(bytes.count) else { throw DecodingError("an asset count of \(assetCount)", offset: library.offset) }
        let owners = try (0..<assetCount).map { _ in (try library.readUUID(), UInt32(truncatingIfNeeded: try library.readVarint())) }
        guard library.isAtEnd else { throw DecodingError("bytes after the library part", offset: library.offset) }
        guard try reader.readVarint() == assetCount else {
            throw DecodingError("a count of asset parts unlike the list", offset: reader.offset)
        }
        var unreadable: [UUID] = []
        for (asset, keyID) in owners {
            guard let key = assetKeys[asset], key.id == keyID else {
                // Skipped: its key is gone.
                _ = try reader.readRaw(count: AEAD.nonceLength)
                _ = try reader.readBytes()
                unreadable.append(asset)
                continue
            }
            var associated = header
            withUnsafeBytes(of: asset.uuid) { associated.append(contentsOf: $0) }
            var part = ByteReader(try open(key.key.derive("snapasst"), associated, what: "part of asset \(asset.uuidString)"))
            for index in tables.indices { try readRows(&part, into: &slots[index], columns: tables[index].columns.count) }
            guard part.isAtEnd else { throw DecodingError("bytes after the part of asset \(asset.uuidString)", offset: part.offset) }
        }
        guard reader.isAtEnd else { throw DecodingError("bytes after the last asset part", offset: reader.offset) }
        for index in tables.indices {
            // Rows of unreadable parts stay out; with every part read, every slot is filled.
            tables[index].rows = slots[index].compactMap { $0 }
            if unreadable.isEmpty, tables[index].rows.count != slots[index].count {
                throw DecodingError("rows missing from table \(tables[index].name)", offset: 0)
            }
        }
        return (tables, unreadable)
    }

    /// Reads a count, then that many rows with their indexes, into their slots.
    private static func readRows(_ reader: inout ByteReader, into slots: inout [[SQLValue]?], columns: Int) throws {
        let count = try reader.readVarint()
        guard count <= UInt64(slots.count) else { throw DecodingError("a row count of \(count)", offset: reader.offset) }
        for _ in 0..<count {
            let index = try reader.readVarint()
            guard index < UInt64(slots.count), slots[Int(index)] == nil else {
                throw DecodingError("a row index of \(index) out of place", offset: reader.offset)
            }
            slots[Int(index)] = try (0..<columns).map { _ in try SnapshotContent.read(&reader) }
        }
    }
}
