import Dispatch
import Foundation
import Synchronization

/// A bounded, thread-safe pool of PostgreSQL connections: at most ``maximumConnections`` open,
/// each lent to one borrower at a time; a borrower waits at most ``acquireTimeout`` for one.
final class PostgresPool: Sendable {
    /// How to open a connection.
    struct Settings: Sendable {
        /// The libpq connection string or URL (may hold a password: never shown).
        var conninfo: String
        /// The database without its password, for messages.
        var database: String
        /// The most connections open at once.
        var maximumConnections: Int
        /// How long a borrower waits for a free connection.
        var acquireTimeout: Duration
        /// How long opening a connection may take.
        var connectTimeoutSeconds: Int
        /// `SET` on every new connection (statement timeout, synchronous commit, …).
        var sessionSettings: [(name: String, value: String)]
    }

    let settings: Settings
    private let idle = Mutex<[PostgresConnection]>([])
    private let permits: DispatchSemaphore

    init(settings: Settings) {
        self.settings = settings
        permits = DispatchSemaphore(value: max(1, settings.maximumConnections))
    }

    /// Opens a new connection (not pooled).
    func open() throws -> PostgresConnection {
        try PostgresConnection(
            conninfo: settings.conninfo, database: settings.database, connectTimeoutSeconds: settings.connectTimeoutSeconds,
            settings: settings.sessionSettings)
    }

    /// Runs `body` with a connection of the pool. A connection that sat idle and turns out to be
    /// broken (PostgreSQL restarted) is replaced once by a new one.
    func withConnection<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        let wait = settings.acquireTimeout.components
        let milliseconds = Int(wait.seconds) * 1000 + Int(wait.attoseconds / 1_000_000_000_000_000)
        guard permits.wait(timeout: .now() + .milliseconds(milliseconds)) == .success else {
            throw PostgresError(
                .poolExhausted,
                "all \(settings.maximumConnections) connections stayed busy for \(milliseconds) ms; the database is slow or overloaded — "
                    + "retry later, or allow more connections",
                database: settings.database)
        }
        defer { permits.signal() }
        if let pooled = idle.withLock({ $0.popLast() }) {
            do {
                return try lend(pooled, body)
            } catch let error as PostgresError where error.code == .unreachable {
                // A connection from before a restart: fall through to a new one.
            }
        }
        return try lend(try open(), body)
    }

    private func lend<T>(_ connection: PostgresConnection, _ body: (PostgresConnection) throws -> T) throws -> T {
        defer {
            if connection.isReusable { idle.withLock { $0.append(connection) } }
        }
        return try body(connection)
    }
}
