import Foundation
import LedgerCore
import LedgerStore
import PhotoMedia

/// What the sync engine needs from a library: its outbox, acknowledgements, settings, and the
/// resources events refer to. Package-level: apps use `PhotoLedgerSync.SyncEngine`.
extension PhotoLibrary {
    /// This device's events the server has not acknowledged or rejected yet (the outbox), in
    /// device order, after `deviceSequence`.
    package func pendingEvents(afterDeviceSequence deviceSequence: Int64 = 0, limit: Int) throws -> [Event] {
        try readDatabase { db in
            try db.rows(
                """
                SELECT \(EventLog.columns) FROM events WHERE server_seq IS NULL AND device_id = ? AND device_seq > ?
                AND event_id NOT IN (SELECT event_id FROM sync_rejections) ORDER BY device_seq LIMIT ?
                """, [device.rawValue, deviceSequence, Int64(limit)], EventLog.decode
            ).map(\.event)
        }
    }

    /// The number of events in the outbox.
    package func pendingEventCount() throws -> Int {
        try readDatabase { db in
            Int(try db.firstRow(
                """
                SELECT count(*) FROM events WHERE server_seq IS NULL AND device_id = ?
                AND event_id NOT IN (SELECT event_id FROM sync_rejections)
                """, [device.rawValue]) { $0.int64(0) } ?? 0)
        }
    }

    /// This device's events from `deviceSequence` on, acknowledged or not (to answer a gap).
    package func ownEvents(fromDeviceSequence deviceSequence: Int64, limit: Int) throws -> [Event] {
        try readDatabase { db in try EventLog(db).events(fromDevice: device, afterDeviceSequence: deviceSequence - 1, limit: limit).map(\.event) }
    }

    /// Records the server's answers to a push in one transaction.
    package func acknowledge(stored: [(UUID, Int64)], rejected: [(UUID, String)]) throws {
        try withDatabase { db in
            for (id, sequence) in stored {
                try db.execute("UPDATE events SET server_seq = ? WHERE event_id = ? AND server_seq IS NULL", [sequence, id.bytes])
            }
            for (id, reason) in rejected {
                try db.execute(
                    "INSERT INTO sync_rejections (event_id, reason, rejected_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                    [id.bytes, reason, Int64(options.clock())])
            }
        }
    }

    /// A device-local setting (sync cursor, remote), or nil.
    package func setting(_ key: String) throws -> [UInt8]? {
        try readDatabase { try Self.setting(key, in: $0) }
    }

    static func setting(_ key: String, in db: Database) throws -> [UInt8]? {
        try db.firstRow("SELECT value FROM device_settings WHERE key = ?", [key]) { $0.blob(0) }
    }

    /// Stores a device-local setting (nil removes it).
    package func setSetting(_ key: String, _ value: [UInt8]?) throws {
        try withDatabase { try Self.setSetting(key, value, in: $0) }
    }

    package static func setSetting(_ key: String, _ value: [UInt8]?, in db: Database) throws {
        if let value {
            try db.execute(
                "INSERT INTO device_settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value", [key, value])
        } else {
            try db.execute("DELETE FROM device_settings WHERE key = ?", [key])
        }
    }

    /// The resources (hex SHA-256) that `events` refer to.
    package func resourceHashes(referencedBy events: [Event]) throws -> Set<String> {
        var hashes = Set<String>()
        for event in events {
            switch try ChangeEvent.decode(type: event.type, schemaVersion: event.schemaVersion, payload: event.payload) {
            case .assetCreated(let creation): hashes.formUnion(creation.resources.map { Hex.encode($0.sha256) })
            case .assetContentEdited(let edit): hashes.formUnion([edit.rendered, edit.adjustment].compactMap { $0.map { Hex.encode($0.sha256) } })
            default: break
            }
        }
        return hashes
    }

    /// Referenced resources that are not on this device yet, with their sizes.
    package func missingResources() throws -> [(hash: String, size: Int64)] {
        try readDatabase { db in
            try db.rows("SELECT sha256, size FROM referenced_resources ORDER BY sha256") { (Hex.encode($0.blob(0)), $0.int64(1)) }
        }.filter { !resources.contains($0.hash) }
    }

    /// The file holding a stored resource, or nil when it is not on this device.
    package func resourceFile(_ hash: String) -> URL? {
        resources.contains(hash) ? resources.url(for: hash) : nil
    }

    /// The resource store's directory for temporary downloads.
    package var downloadDirectory: URL { resources.directory.appendingPathComponent("tmp") }

    /// Takes a downloaded file into the resource store after checking it hashes to `hash`.
    package func adoptDownloadedResource(at file: URL, hash: String) throws {
        defer { try? FileManager.default.removeItem(at: file) }
        do {
            let stored = try resources.ingest(fileAt: file, transfer: .copy)
            guard stored.hash == hash else {
                throw PhotoLibraryError(.networkError, "the downloaded resource \(hash) arrived with other bytes (\(stored.hash)); sync again")
            }
        } catch let error as MediaError {
            throw Self.translate(error)
        }
    }
}

extension PhotoLibrary {
    /// The library's physical clock reading, in Unix milliseconds.
    package var currentTimeMilliseconds: UInt64 { options.clock() }
}
