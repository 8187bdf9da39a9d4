import Foundation
import LedgerCore
import LedgerStore
import PhotoLedgerServer
import SyncProtocol
import Testing

@Suite("Server store migrations")
struct ServerMigrationTests {
    @Test("migration 8 gives every object of an existing log its first event's claim, and the push rules read them")
    func objectClaims() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("server.sqlite")
        let asset = UUID(uuidString: "0193A5B2-7C00-7000-8000-0000000000A1")!
        let album = UUID(uuidString: "0193A5B2-7C00-7000-8000-0000000000B1")!
        var anna = EventFactory()
        do {
            let db = try Database(path: path)
            let all = try Migrator.server()
            try Migrator(set: "Server", migrations: Array(all.migrations.prefix(7))).migrate(db)
            try db.execute(
                "INSERT INTO libraries (library_id, name, created_at, last_seq, last_hash, library_uuid) VALUES (1, 'family', 1, 3, ?, ?)",
                [[UInt8](repeating: 7, count: 32), UUID().bytes])
            try db.execute("INSERT INTO devices (library_id, device_id, last_device_seq, registered_at) VALUES (1, 'anna-phone', 3, 1)")
            // A change before its object's creation (a peer may send that order), then an album.
            let events = [
                (EventType.assetChanged, asset), (EventType.assetCreated, asset), (EventType.albumCreated, album),
            ].map { type, object in anna.make(type: type.rawValue, object: object) }
            for (index, event) in events.enumerated() {
                try db.execute(
                    """
                    INSERT INTO server_events (library_id, server_seq, event_id, device_id, device_seq, hlc, change_block, object_id,
                                               type, schema_version, payload, chain_hash, received_at)
                    VALUES (1, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?, 1)
                    """,
                    [
                        Int64(index + 1), event.id.bytes, event.device.rawValue, event.deviceSequence,
                        Int64(bitPattern: event.timestamp.rawValue), event.changeBlock.bytes, event.object.bytes, event.type, event.payload,
                        [UInt8](repeating: UInt8(index), count: 32),
                    ])
            }
        }
        let store = try SQLiteServerStore(path: path)
        let claims = try Database(path: path).rows("SELECT object_id, first_seq FROM server_objects ORDER BY first_seq") {
            [$0.blob(0), [UInt8($0.int64(1))]]
        }
        #expect(claims == [[asset.bytes, [1]], [album.bytes, [3]]])

        try store.registerToken(hash: SHA256.hash([0]), library: "family", device: "anna-phone", scope: .readWrite, at: 2)
        let credential = try #require(try store.authenticate(tokenHash: SHA256.hash([0])))
        let rules = PushRules()
        let onAsset = anna.make(type: EventType.albumCreated.rawValue, object: asset)
        let onAlbum = anna.make(type: EventType.assetCreated.rawValue, object: album)
        let fresh = anna.make(type: EventType.assetCreated.rawValue)
        let results = try store.push(
            [onAsset, onAlbum, fresh].map { rules.candidate(for: .valid(WireEvent($0)), credential: credential) }, for: credential,
            receivedAt: 10, rules: rules
        ).results.map(\.status)
        guard case .rejected(let kind) = results[0], case .rejected(let once) = results[1] else {
            Issue.record("creations on the migrated log's objects must be rejected: \(results)")
            return
        }
        #expect(kind.contains("is an asset"))
        #expect(once.contains("created once"))
        #expect(results[2] == .stored(serverSequence: 4))
    }
}
