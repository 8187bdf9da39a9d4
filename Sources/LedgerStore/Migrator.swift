import Foundation
import LedgerCore

/// One numbered schema change: plain SQL, never edited once shipped.
public struct Migration: Sendable, Hashable {
    /// The number from the file name (`0003_…` → 3); migrations apply in this order.
    public let id: Int
    /// The name from the file name (`0003_album_cover.sql` → `album_cover`).
    public let name: String
    /// The SQL script.
    public let sql: String

    /// Creates a migration.
    public init(id: Int, name: String, sql: String) {
        self.id = id
        self.name = name
        self.sql = sql
    }

    /// SHA-256 of the SQL text, recorded when the migration is applied.
    public var checksum: [UInt8] { SHA256.hash(Array(sql.utf8)) }
}

/// A schema problem found by the migrator. Nothing is written when one is thrown, except the
/// migrations that were applied (each in its own transaction) before a failing one.
public struct MigrationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong.
    public enum Reason: Sendable, Equatable {
        /// A migration already applied to the database has different SQL in this build.
        case edited(id: Int, name: String)
        /// A migration applied to the database is not in this build (a gap in the numbering).
        case missing(id: Int, name: String)
        /// A migration applied under one name has another name in this build: files were
        /// renamed or reordered.
        case renamedOrReordered(id: Int, appliedName: String, currentName: String)
        /// The database was written by a newer version of the software.
        case newerSchema(databaseVersion: Int, supportedVersion: Int)
        /// A migration file name does not have the `NNNN_name.sql` form, or numbers repeat or skip.
        case invalidFile(name: String, problem: String)
        /// A migration's SQL failed; the database stays at the previous version.
        case failed(id: Int, name: String, cause: String)
    }

    /// The migration set (`Library`, `Server`, `Postgres`, …).
    public let set: String
    /// The database: a file path, or a PostgreSQL URL without its password.
    public let path: String
    /// What went wrong.
    public let reason: Reason

    public var description: String {
        let subject = "database \(path) (\(set) schema)"
        switch reason {
        case .edited(let id, let name):
            return "\(subject): migration \(id) '\(name)' was changed after it was applied; migrations must never be edited — "
                + "restore the original file and add a new migration instead"
        case .missing(let id, let name):
            return "\(subject): migration \(id) '\(name)' was applied but is missing from this build; restore it"
        case .renamedOrReordered(let id, let applied, let current):
            return "\(subject): migration \(id) was applied as '\(applied)' but is '\(current)' in this build; "
                + "migrations were renamed or reordered — restore the original order"
        case .newerSchema(let databaseVersion, let supported):
            return "\(subject) is at schema version \(databaseVersion), newer than this software supports (\(supported)); "
                + "upgrade PhotoLedger to open it — the file was left untouched"
        case .invalidFile(let name, let problem):
            return "\(set) migration file '\(name)': \(problem)"
        case .failed(let id, let name, let cause):
            return "\(subject): migration \(id) '\(name)' failed and was rolled back: \(cause)"
        }
    }
}

/// A migration as a database recorded it in `ledger_migrations`.
public struct RecordedMigration: Sendable, Hashable {
    /// The migration's number.
    public let id: Int
    /// The migration's name.
    public let name: String
    /// The SHA-256 of the SQL that was applied.
    public let checksum: [UInt8]

    /// Creates a record.
    public init(id: Int, name: String, checksum: [UInt8]) {
        self.id = id
        self.name = name
        self.checksum = checksum
    }
}

/// A database connection that a ``Migrator`` can bring to a schema version: SQLite's
/// ``Database``, or a PostgreSQL connection of the server. The migrator keeps the rules (order,
/// names, checksums, newer schemas); a target only reads and writes `ledger_migrations` and runs
/// SQL, each in its own dialect.
public protocol MigrationTarget {
    /// Where the database is, for messages: a file path, or a URL without its password.
    var migrationLocation: String { get }
    /// The migrations recorded in `ledger_migrations`, by id; creates the table when it is
    /// missing, unless the connection is read-only (then none are recorded).
    func recordedMigrations() throws -> [RecordedMigration]
    /// Runs the migration's SQL and records it with its checksum and `milliseconds`, in one
    /// transaction: on failure nothing of it stays, and the error says why.
    func apply(_ migration: Migration, at milliseconds: Int64) throws
    /// Runs `body` while no other migrator works on the same database: several server processes
    /// may start at once on one PostgreSQL database.
    func withMigrationLock<T>(_ body: () throws -> T) throws -> T
}

extension Database: MigrationTarget {
    /// The database file.
    public var migrationLocation: String { path }

    /// The migrations recorded in the file (none in a read-only file without the table).
    public func recordedMigrations() throws -> [RecordedMigration] {
        let exists = try firstRow("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'ledger_migrations'") { _ in true }
        if exists == nil {
            if isReadOnly { return [] }
            try execute(
                """
                CREATE TABLE IF NOT EXISTS ledger_migrations (
                    id         INTEGER PRIMARY KEY,
                    name       TEXT    NOT NULL,
                    checksum   BLOB    NOT NULL,
                    applied_at INTEGER NOT NULL
                ) STRICT
                """)
            return []
        }
        return try rows("SELECT id, name, checksum FROM ledger_migrations ORDER BY id") {
            RecordedMigration(id: Int($0.int64(0)), name: $0.text(1), checksum: $0.blob(2))
        }
    }

    /// Runs the migration and records it in one transaction.
    public func apply(_ migration: Migration, at milliseconds: Int64) throws {
        try inTransaction {
            try execute(migration.sql)
            try execute(
                "INSERT INTO ledger_migrations (id, name, checksum, applied_at) VALUES (?, ?, ?, ?)",
                [migration.id, migration.name, migration.checksum, milliseconds])
        }
    }

    /// Runs `body`: the connection that migrates is the database's only writer already.
    public func withMigrationLock<T>(_ body: () throws -> T) throws -> T { try body() }
}

/// Applies a numbered set of migrations in order, each in its own transaction, and records each
/// with its checksum in `ledger_migrations`.
///
/// Opening a database checks what was applied before: an edited, missing, renamed or reordered
/// migration is an error, and a database from a newer version is refused without writing. The
/// same rules hold for every ``MigrationTarget``: SQLite files and the server's PostgreSQL store.
public struct Migrator: Sendable {
    /// The set's name, for messages.
    public let set: String
    /// The migrations, in order.
    public let migrations: [Migration]

    /// A migrator for the named set embedded at build time from `Migrations/<set>/`.
    public static func embedded(_ set: String) throws -> Migrator {
        try Migrator(set: set, files: EmbeddedMigrations.files[set] ?? [])
    }

    /// The device library's schema (`Migrations/Library`).
    public static func library() throws -> Migrator { try embedded("Library") }
    /// The sync server's schema (`Migrations/Server`).
    public static func server() throws -> Migrator { try embedded("Server") }

    /// The migrations of a library's event archive (`Migrations/Archive`).
    public static func archive() throws -> Migrator { try embedded("Archive") }

    /// The sync server's schema on PostgreSQL (`Migrations/Postgres`).
    public static func postgresServer() throws -> Migrator { try embedded("Postgres") }

    /// A migrator over files named `NNNN_name.sql`, numbered 1, 2, 3, … without gaps.
    public init(set: String, files: [(name: String, sql: String)]) throws {
        var migrations: [Migration] = []
        for file in files.sorted(by: { $0.name < $1.name }) {
            let stem = file.name.hasSuffix(".sql") ? String(file.name.dropLast(4)) : file.name
            let parts = stem.split(separator: "_", maxSplits: 1)
            guard parts.count == 2, let id = Int(parts[0]), id > 0 else {
                throw MigrationError(set: set, path: "-", reason: .invalidFile(name: file.name, problem: "expected NNNN_name.sql"))
            }
            guard id == migrations.count + 1 else {
                throw MigrationError(
                    set: set, path: "-",
                    reason: .invalidFile(
                        name: file.name, problem: "expected number \(migrations.count + 1); numbers must be 1, 2, 3, … without gaps"))
            }
            migrations.append(Migration(id: id, name: String(parts[1]), sql: file.sql))
        }
        self.init(set: set, migrations: migrations)
    }

    /// A migrator over migrations already numbered 1…n.
    public init(set: String, migrations: [Migration]) {
        self.set = set
        self.migrations = migrations
    }

    /// The schema version this build brings a database to.
    public var latestVersion: Int { migrations.count }

    /// Checks the applied migrations and applies the pending ones. Returns the ids applied now.
    @discardableResult
    public func migrate(_ database: some MigrationTarget) throws -> [Int] {
        try database.withMigrationLock {
            let applied = try database.recordedMigrations()
            try validate(applied, path: database.migrationLocation)
            var appliedNow: [Int] = []
            for migration in migrations.dropFirst(applied.count) {
                do {
                    try database.apply(migration, at: Int64(WallClock.milliseconds()))
                } catch {
                    throw MigrationError(
                        set: set, path: database.migrationLocation,
                        reason: .failed(id: migration.id, name: migration.name, cause: "\(error)"))
                }
                appliedNow.append(migration.id)
            }
            return appliedNow
        }
    }

    /// The schema version recorded in `database` (0 for a new database).
    public func currentVersion(_ database: some MigrationTarget) throws -> Int {
        try database.recordedMigrations().last?.id ?? 0
    }

    private func validate(_ applied: [RecordedMigration], path: String) throws {
        func fail(_ reason: MigrationError.Reason) -> MigrationError { MigrationError(set: set, path: path, reason: reason) }
        if let newest = applied.last, newest.id > latestVersion {
            throw fail(.newerSchema(databaseVersion: newest.id, supportedVersion: latestVersion))
        }
        for (position, record) in applied.enumerated() {
            guard record.id == position + 1 else {
                throw fail(.missing(id: position + 1, name: "(unknown)"))
            }
            let known = migrations[position]
            guard known.name == record.name else {
                throw fail(.renamedOrReordered(id: record.id, appliedName: record.name, currentName: known.name))
            }
            guard known.checksum == record.checksum else {
                throw fail(.edited(id: record.id, name: record.name))
            }
        }
    }
}
