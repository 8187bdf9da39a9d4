import Foundation
import LedgerCore
import LedgerStore
import Testing

@Suite("Migrations")
struct MigratorTests {
    let version1 = [(name: "0001_create.sql", sql: "CREATE TABLE albums (id INTEGER PRIMARY KEY, title TEXT);")]
    var version2: [(name: String, sql: String)] {
        version1 + [(name: "0002_cover.sql", sql: "ALTER TABLE albums ADD COLUMN cover BLOB;")]
    }

    @Test("the embedded sets apply in order to a fresh database and re-opening is a no-op")
    func freshApplyAndReopen() throws {
        let directory = try TemporaryDirectory()
        for migrator in [try Migrator.library(), try Migrator.server()] {
            #expect(migrator.latestVersion >= 1)
            let path = directory.path("\(migrator.set).sqlite")
            let first = try Database(path: path)
            #expect(try migrator.migrate(first) == Array(1...migrator.latestVersion))
            #expect(try migrator.currentVersion(first) == migrator.latestVersion)
            let reopened = try Database(path: path)
            #expect(try migrator.migrate(reopened) == [])
            let recorded = try reopened.rows("SELECT id, length(checksum) FROM ledger_migrations ORDER BY id") {
                [$0.int64(0), $0.int64(1)]
            }
            #expect(recorded == (1...migrator.latestVersion).map { [Int64($0), 32] })
        }
    }

    @Test("only the new migrations apply to an older database")
    func upgrade() throws {
        let directory = try TemporaryDirectory()
        let db = try Database(path: directory.path("db.sqlite"))
        try Migrator(set: "Test", files: version1).migrate(db)
        #expect(try Migrator(set: "Test", files: version2).migrate(db) == [2])
        #expect(try db.rows("SELECT name FROM pragma_table_info('albums')") { $0.text(0) } == ["id", "title", "cover"])
    }

    @Test("an applied migration whose SQL was edited is refused")
    func editedMigration() throws {
        let directory = try TemporaryDirectory()
        let db = try Database(path: directory.path("db.sqlite"))
        try Migrator(set: "Test", files: version1).migrate(db)
        let edited = [(name: "0001_create.sql", sql: "CREATE TABLE albums (id INTEGER PRIMARY KEY, name TEXT);")]
        let error = try #require(throws: MigrationError.self) { try Migrator(set: "Test", files: edited).migrate(db) }
        #expect(error.reason == .edited(id: 1, name: "create"))
        #expect(error.description.contains("must never be edited"))
    }

    @Test("an applied migration that was renamed or reordered is refused")
    func reorderedMigration() throws {
        let directory = try TemporaryDirectory()
        let db = try Database(path: directory.path("db.sqlite"))
        try Migrator(set: "Test", files: version2).migrate(db)
        let reordered = [
            (name: "0001_cover.sql", sql: version2[1].sql), (name: "0002_create.sql", sql: version2[0].sql),
        ]
        let error = try #require(throws: MigrationError.self) { try Migrator(set: "Test", files: reordered).migrate(db) }
        #expect(error.reason == .renamedOrReordered(id: 1, appliedName: "create", currentName: "cover"))
    }

    @Test("a database from a newer version is refused and left byte-for-byte untouched")
    func newerSchemaRefused() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("db.sqlite")
        do {
            let db = try Database(path: path)
            try Migrator(set: "Test", files: version2).migrate(db)
            try db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        }
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        let db = try Database(path: path)
        let error = try #require(throws: MigrationError.self) { try Migrator(set: "Test", files: version1).migrate(db) }
        #expect(error.reason == .newerSchema(databaseVersion: 2, supportedVersion: 1))
        #expect(error.description.contains("upgrade PhotoLedger"))
        try db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
    }

    @Test("a failing migration rolls back and leaves the database at the previous version")
    func failingMigrationRollsBack() throws {
        let directory = try TemporaryDirectory()
        let db = try Database(path: directory.path("db.sqlite"))
        let broken = version1 + [(name: "0002_broken.sql", sql: "CREATE TABLE covers (id INTEGER); INSERT INTO nowhere VALUES (1);")]
        let error = try #require(throws: MigrationError.self) { try Migrator(set: "Test", files: broken).migrate(db) }
        guard case .failed(let id, let name, let cause) = error.reason else {
            Issue.record("expected a failed migration, got \(error.reason)")
            return
        }
        #expect(id == 2 && name == "broken" && cause.contains("no such table: nowhere"))
        #expect(try Migrator(set: "Test", files: version1).currentVersion(db) == 1)
        #expect(try db.firstRow("SELECT 1 FROM sqlite_schema WHERE name = 'covers'") { _ in true } == nil)
    }

    @Test("migration files must be numbered 1, 2, 3 without gaps")
    func invalidFileNames() throws {
        #expect(throws: MigrationError.self) { try Migrator(set: "Test", files: [(name: "create.sql", sql: "")]) }
        let gap = version1 + [(name: "0003_later.sql", sql: "")]
        let error = try #require(throws: MigrationError.self) { try Migrator(set: "Test", files: gap) }
        #expect(error.description.contains("expected number 2"))
    }
}

@Suite("Library migrations")
struct LibraryMigrationTests {
    @Test("the key store's outbox keeps its entries when it becomes a table without rowids (migration 20)")
    func keyOutboxWithoutRowid() throws {
        let directory = try TemporaryDirectory()
        let db = try Database(path: directory.path("library.sqlite"))
        let library = try Migrator.library()
        let index = try #require(library.migrations.firstIndex { $0.name == "key_outbox_without_rowid" })
        try Migrator(set: "Library", migrations: Array(library.migrations[..<index])).migrate(db)
        // In name order.
        let entries: [[SQLValue]] = [
            [.text("asset/0190a3c2-0000-7000-8000-000000000001"), .blob([1, 2, 3]), .integer(0)],
            [.text("asset/0190a3c2-0000-7000-8000-000000000002"), .null, .integer(0)],
            [.text("library/public"), .blob(Array(repeating: 7, count: 32)), .integer(1)],
        ]
        for entry in entries { try db.execute("INSERT INTO e2e_outbox (name, value, create_only) VALUES (?, ?, ?)", entry) }
        #expect(try library.migrate(db) == Array(index + 1...library.migrations.count))
        let kept = try db.rows("SELECT name, value, create_only FROM e2e_outbox ORDER BY name") { row in (0..<3).map { row.value($0) } }
        #expect(kept == entries)
        #expect(
            try db.firstRow("SELECT sql FROM sqlite_schema WHERE name = 'e2e_outbox'") { $0.text(0) }?.contains("WITHOUT ROWID") == true)
    }

    @Test("asset keys and outbox entries made before key packs keep their bytes and name no pack and no carrier (migration 21)")
    func assetKeyPacks() throws {
        let directory = try TemporaryDirectory()
        let db = try Database(path: directory.path("library.sqlite"))
        let library = try Migrator.library()
        let index = try #require(library.migrations.firstIndex { $0.name == "asset_key_packs" })
        try Migrator(set: "Library", migrations: Array(library.migrations[..<index])).migrate(db)
        let asset: [UInt8] = Array(repeating: 1, count: 16), key: [UInt8] = Array(repeating: 2, count: 32)
        try db.execute("INSERT INTO e2e_asset_keys (asset, key_id, key, blobs, own) VALUES (?, 6, ?, x'', 1)", [asset, key])
        try db.execute("INSERT INTO e2e_outbox (name, value, create_only) VALUES ('asset/x', x'0102', 0)")
        #expect(try library.migrate(db) == Array(index + 1...library.migrations.count))
        #expect(
            try db.firstRow("SELECT key_id, key, own, pack IS NULL FROM e2e_asset_keys WHERE asset = ?", [asset]) {
                [$0.value(0), $0.value(1), $0.value(2), $0.value(3)]
            } == [.integer(6), .blob(key), .integer(1), .integer(1)])
        #expect(
            try db.firstRow("SELECT value, carrier IS NULL FROM e2e_outbox WHERE name = 'asset/x'") { [$0.value(0), $0.value(1)] } == [
                .blob([1, 2]), .integer(1),
            ])
        // A carrier is an asset's 16 bytes.
        #expect(throws: (any Error).self) { try db.execute("UPDATE e2e_outbox SET carrier = x'01' WHERE name = 'asset/x'") }
    }

    @Test("packs recorded before member lists keep their keys' rows and have no list; the index by pack is gone (migration 22)")
    func packMemberLists() throws {
        let directory = try TemporaryDirectory()
        let db = try Database(path: directory.path("library.sqlite"))
        let library = try Migrator.library()
        let index = try #require(library.migrations.firstIndex { $0.name == "pack_member_lists" })
        try Migrator(set: "Library", migrations: Array(library.migrations[..<index])).migrate(db)
        let asset: [UInt8] = Array(repeating: 1, count: 16), key: [UInt8] = Array(repeating: 2, count: 32)
        try db.execute("INSERT INTO e2e_packs (id, name) VALUES (3, 'pack/x.0')")
        try db.execute("INSERT INTO e2e_asset_keys (asset, key_id, key, blobs, own, pack) VALUES (?, 6, ?, x'', 0, 3)", [asset, key])
        #expect(try library.migrate(db) == Array(index + 1...library.migrations.count))
        #expect(try db.firstRow("SELECT pack, key FROM e2e_asset_keys") { [$0.value(0), $0.value(1)] } == [.integer(3), .blob(key)])
        #expect(try db.firstRow("SELECT members IS NULL FROM e2e_packs WHERE id = 3") { $0.int64(0) } == 1)
        #expect(try db.firstRow("SELECT count(*) FROM sqlite_schema WHERE name = 'e2e_asset_keys_by_pack'") { $0.int64(0) } == 0)
        // A list is whole UUIDs.
        #expect(throws: (any Error).self) { try db.execute("UPDATE e2e_packs SET members = x'01' WHERE id = 3") }
    }

    @Test("asset keys keep every column and value when their table loses its CHECK constraints (migration 23)")
    func assetKeysWithoutChecks() throws {
        let directory = try TemporaryDirectory()
        let db = try Database(path: directory.path("library.sqlite"))
        let library = try Migrator.library()
        let index = try #require(library.migrations.firstIndex { $0.name == "asset_keys_without_checks" })
        try Migrator(set: "Library", migrations: Array(library.migrations[..<index])).migrate(db)
        let rows: [[SQLValue]] = [
            [
                .blob(Array(repeating: 1, count: 16)), .integer(6), .blob(Array(repeating: 2, count: 32)), .blob([9, 9]), .integer(1),
                .null,
            ],
            [.blob(Array(repeating: 3, count: 16)), .integer(7), .null, .blob([]), .integer(0), .integer(4)],
        ]
        for row in rows {
            try db.execute("INSERT INTO e2e_asset_keys (asset, key_id, key, blobs, own, pack) VALUES (?, ?, ?, ?, ?, ?)", row)
        }
        #expect(throws: (any Error).self, "checked before") {
            try db.execute("INSERT INTO e2e_asset_keys (asset, key_id) VALUES (x'01', 1)")
        }
        #expect(try library.migrate(db) == Array(index + 1...library.migrations.count))
        let kept = try db.rows("SELECT asset, key_id, key, blobs, own, pack FROM e2e_asset_keys ORDER BY asset") { row in
            (0..<6).map { row.value($0) }
        }
        #expect(kept == rows)
        let schema = try db.firstRow("SELECT sql FROM sqlite_schema WHERE name = 'e2e_asset_keys'") { $0.text(0) }
        #expect(schema?.contains("CHECK") == false && schema?.contains("WITHOUT ROWID") == true && schema?.contains("STRICT") == true)
        // STRICT still refuses another type.
        #expect(throws: (any Error).self) { try db.execute("INSERT INTO e2e_asset_keys (asset, key_id) VALUES (x'0505', 'six')") }
    }
}
