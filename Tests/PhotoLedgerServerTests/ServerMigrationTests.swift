import Foundation
import LedgerCore
import LedgerStore
import SyncProtocol
import Testing

@testable import PhotoLedgerServer

@Suite("Server store migrations")
struct ServerMigrationTests {
    /// A log written before the objects' claims: a change before its object's creation (a peer
    /// may send that order), then an album; the library's head is at 3, anna-phone's sequence too.
    struct LogBeforeClaims {
        let asset = UUID(uuidString: "0193A5B2-7C00-7000-8000-0000000000A1")!
        let album = UUID(uuidString: "0193A5B2-7C00-7000-8000-0000000000B1")!
        var anna = EventFactory()
        let events: [Event]

        init() {
            var anna = EventFactory()
            events = [(EventType.assetChanged, asset), (EventType.assetCreated, asset), (EventType.albumCreated, album)].map {
                anna.make(type: $0.rawValue, object: $1)
            }
            self.anna = anna
        }

        /// The claims migrated from the log: each object's first event, as [object, [server sequence]].
        var expectedClaims: [[[UInt8]]] { [[asset.bytes, [1]], [album.bytes, [3]]] }

        /// Pushes creations on the log's objects and one new asset: the first two must be rejected.
        mutating func expectRulesReadClaims(_ store: any ServerStore) throws {
            try store.registerToken(hash: SHA256.hash([0]), library: "family", device: "anna-phone", scope: .readWrite, at: 2)
            let credential = try #require(try store.authenticate(tokenHash: SHA256.hash([0])))
            let rules = PushRules()
            let pushed = [
                anna.make(type: EventType.albumCreated.rawValue, object: asset),
                anna.make(type: EventType.assetCreated.rawValue, object: album),
                anna.make(type: EventType.assetCreated.rawValue),
            ]
            let results = try store.push(
                pushed.map { rules.candidate(for: .valid(WireEvent($0)), credential: credential) }, for: credential, receivedAt: 10,
                rules: rules
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

    @Test("migration 8 gives every object of an existing log its first event's claim, and the push rules read them")
    func objectClaims() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("server.sqlite")
        var log = LogBeforeClaims()
        do {
            let db = try Database(path: path)
            let all = try Migrator.server()
            try Migrator(set: "Server", migrations: Array(all.migrations.prefix(7))).migrate(db)
            try db.execute(
                "INSERT INTO libraries (library_id, name, created_at, last_seq, last_hash, library_uuid) VALUES (1, 'family', 1, 3, ?, ?)",
                [[UInt8](repeating: 7, count: 32), UUID().bytes])
            try db.execute("INSERT INTO devices (library_id, device_id, last_device_seq, registered_at) VALUES (1, 'anna-phone', 3, 1)")
            for (index, event) in log.events.enumerated() {
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
        #expect(claims == log.expectedClaims)
        try log.expectRulesReadClaims(store)
    }

    @Test(
        "PostgreSQL migration 7 gives every object of an existing log its first event's claim, and the push rules read them",
        .enabled(if: PostgresTestDatabase.adminURL != nil, PostgresTestDatabase.skipReason))
    func postgresObjectClaims() throws {
        let database = try PostgresTestDatabase()
        var log = LogBeforeClaims()
        let connection = try PostgresConnection(conninfo: database.url, database: "test", connectTimeoutSeconds: 5, settings: [])
        let all = try Migrator.postgresServer()
        try Migrator(set: "Postgres", migrations: Array(all.migrations.prefix(6))).migrate(connection)
        _ = try connection.query(
            "INSERT INTO libraries (name, created_at, last_seq, last_hash, library_uuid) VALUES ('family', 1, 3, $1, $2)",
            [.bytes([UInt8](repeating: 7, count: 32)), .uuid(UUID())])
        _ = try connection.query(
            "INSERT INTO devices (library_id, device_id, last_device_seq, registered_at) SELECT library_id, 'anna-phone', 3, 1 FROM libraries",
            [])
        for (index, event) in log.events.enumerated() {
            _ = try connection.query(
                """
                INSERT INTO server_events (library_id, server_seq, event_id, device_id, device_seq, hlc, change_block, object_id,
                                           type, schema_version, payload, chain_hash, received_at, format, bound, key_id)
                SELECT library_id, $1, $2, $3, $4, $5, $6, $7, $8, 1, $9, $10, 1, 1, false, 0 FROM libraries
                """,
                [
                    .int64(Int64(index + 1)), .uuid(event.id), .text(event.device.rawValue), .int64(event.deviceSequence),
                    .int64(Int64(bitPattern: event.timestamp.rawValue)), .uuid(event.changeBlock), .uuid(event.object), .text(event.type),
                    .bytes(event.payload), .bytes([UInt8](repeating: UInt8(index), count: 32)),
                ])
        }
        let store = try PostgresServerStore(url: database.url)
        let rows = try connection.query("SELECT object_id, first_seq FROM server_objects ORDER BY first_seq", [])
        #expect((0..<rows.count).map { [rows.bytes($0, 0), [UInt8(rows.int64($0, 1))]] } == log.expectedClaims)
        #expect(
            try connection.query("SELECT 1 FROM pg_indexes WHERE indexname IN ('server_events_by_object', 'server_events_purges')", [])
                .count == 1)
        try log.expectRulesReadClaims(store)
    }
}
