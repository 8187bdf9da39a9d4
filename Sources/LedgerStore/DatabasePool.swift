import Dispatch
import Foundation
import LedgerCore
import Synchronization

/// One writing connection and a pool of read-only connections to one database file in WAL mode.
///
/// Writes are serialized on the writer (``write(_:)``); reads run on a reader of their own
/// (``read(_:)``), each inside one read transaction, so they see one committed state and never
/// wait for a write, nor a write for them. A read from inside a write closure sees the last
/// commit, not the write's own changes (read those with the `Database` the write closure was
/// given).
///
/// Readers are opened on first use, at most ``Options/maximumReaders``; a read that finds all of
/// them busy waits for one.
public final class DatabasePool: Sendable {
    /// Settings of a pool.
    public struct Options: Sendable {
        /// The writer's options.
        public var writer = Database.Options()
        /// The most read-only connections open at once.
        public var maximumReaders = 4
        /// Each reader's page cache, in KiB.
        public var readerCacheSizeKiB = 2 * 1024

        /// The default options.
        public init() {}
    }

    /// The writing connection.
    public let writer: DatabaseQueue
    /// The database file.
    public let path: String
    private let options: Options
    private let idle = Mutex<[Reader]>([])
    private let opened = Mutex(0)
    private let available: DispatchSemaphore

    /// Opens the writer at `path` (creating the file when needed); readers open on first use.
    public init(path: String, options: Options = Options()) throws {
        self.path = path
        self.options = options
        writer = try DatabaseQueue(path: path, options: options.writer)
        available = DispatchSemaphore(value: max(1, options.maximumReaders))
    }

    /// Runs `body` on the writer inside a transaction that commits when it returns and rolls
    /// back when it throws.
    @discardableResult
    public func write<T>(_ body: (Database) throws -> T) throws -> T { try writer.write(body) }

    /// Runs `body` on the writer outside any transaction (pragmas, migrations, work that
    /// manages its own transactions).
    @discardableResult
    public func writeWithoutTransaction<T>(_ body: (Database) throws -> T) throws -> T { try writer.writeWithoutTransaction(body) }

    /// Runs `body` on a reader inside one read transaction.
    @discardableResult
    public func read<T>(_ body: (Database) throws -> T) throws -> T {
        try withReader { reader in try reader.inReadTransaction { try body(reader) } }
    }

    /// Runs `body` on a reader outside any transaction (for `VACUUM INTO`, which makes its own).
    @discardableResult
    public func readWithoutTransaction<T>(_ body: (Database) throws -> T) throws -> T {
        try withReader(body)
    }

    private func withReader<T>(_ body: (Database) throws -> T) throws -> T {
        available.wait()
        defer { available.signal() }
        let reader = try takeReader()
        defer { idle.withLock { $0.append(reader) } }
        return try body(reader.database)
    }

    /// Whether the calling thread is inside one of the writer's closures.
    public var isWritingOnCurrentThread: Bool { writer.isAccessedByCurrentThread }

    /// Waits until the writer's background checkpoints have run (see ``DatabaseQueue``).
    @discardableResult
    public func waitForBackgroundCheckpoints(timeout: Duration = .seconds(10)) -> Bool {
        writer.waitForBackgroundCheckpoints(timeout: timeout)
    }

    /// A read-only connection of the pool.
    private struct Reader: @unchecked Sendable {
        // Safe to share: a reader is used by one thread at a time — taken from the idle list,
        // used inside `read`, and put back.
        let database: Database
    }

    /// An idle reader, or a new one when none is idle (the semaphore bounds how many exist).
    private func takeReader() throws -> Reader {
        if let reader = idle.withLock({ $0.popLast() }) { return reader }
        var readerOptions = Database.Options()
        readerOptions.readOnly = true
        readerOptions.cacheSizeKiB = options.readerCacheSizeKiB
        readerOptions.busyTimeout = options.writer.busyTimeout
        let reader = Reader(database: try Database(path: path, options: readerOptions))
        opened.withLock { $0 += 1 }
        return reader
    }

    /// How many readers are open (for tests and diagnostics).
    public var openReaders: Int { opened.withLock { $0 } }
}

extension Database {
    /// Runs `body` inside a deferred (read) transaction: every statement sees one committed
    /// state of the file.
    public func inReadTransaction<T>(_ body: () throws -> T) throws -> T {
        guard !isInsideTransaction else { return try body() }
        try cachedStatement("BEGIN DEFERRED").execute()
        defer { if isInsideTransaction { try? cachedStatement("COMMIT").execute() } }
        return try body()
    }
}
