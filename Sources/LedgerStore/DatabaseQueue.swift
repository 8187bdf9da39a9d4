import Foundation
import LedgerCore

/// Serialized access to one database connection from any thread.
///
/// All work runs inside `read { }` or `write { }` closures, one at a time. A `write` runs in a
/// transaction that commits when the closure returns and rolls back when it throws. Calling
/// `read` or `write` from inside another access closure on the same queue is a usage error that
/// is thrown at once, never a deadlock.
public final class DatabaseQueue: @unchecked Sendable {
    // Safe to share: `database` is touched only while `lock` is held, and `owner` only under `ownerLock`.
    private let database: Database
    private let lock = NSLock()
    private let ownerLock = NSLock()
    private var owner: pthread_t?

    /// The path of the database file.
    public let path: String

    /// Opens the database at `path`.
    public init(path: String, options: Database.Options = Database.Options()) throws {
        self.database = try Database(path: path, options: options)
        self.path = path
    }

    /// Runs `body` with exclusive access to the connection, inside a transaction.
    @discardableResult
    public func write<T>(_ body: (Database) throws -> T) throws -> T {
        try access { database in try database.inTransaction { try body(database) } }
    }

    /// Runs `body` with exclusive access to the connection, outside any transaction
    /// (for pragmas, VACUUM, or work that manages its own transactions).
    @discardableResult
    public func writeWithoutTransaction<T>(_ body: (Database) throws -> T) throws -> T {
        try access(body)
    }

    /// Runs `body` with exclusive access to the connection for reading.
    @discardableResult
    public func read<T>(_ body: (Database) throws -> T) throws -> T {
        try access(body)
    }

    /// Waits until the connection's background checkpointer (``Database/Options/checkpointsInBackground``)
    /// has no checkpoint requested or running, or `timeout` passes; returns whether it became idle.
    /// Needs no access to the connection, so it never waits for a read or write.
    @discardableResult
    public func waitForBackgroundCheckpoints(timeout: Duration = .seconds(10)) -> Bool {
        database.waitForBackgroundCheckpoints(timeout: timeout)
    }

    /// Whether the calling thread is inside one of this queue's access closures.
    public var isAccessedByCurrentThread: Bool {
        ownerLock.withLock { owner.map { pthread_equal($0, pthread_self()) != 0 } ?? false }
    }

    private func access<T>(_ body: (Database) throws -> T) throws -> T {
        if isAccessedByCurrentThread {
            throw StoreUsageError(
                "database \(path) is already being accessed by this thread: do not nest read/write calls; "
                    + "use the Database passed to the outer closure")
        }
        lock.lock()
        ownerLock.withLock { owner = pthread_self() }
        defer {
            ownerLock.withLock { owner = nil }
            lock.unlock()
        }
        return try body(database)
    }
}
