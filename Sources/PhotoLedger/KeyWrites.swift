import Foundation
import LedgerStore
import Synchronization

/// The rows of asset keys a sync took from the server's key store, written on a thread of their
/// own while the sync fetches and folds its first pull page: a large library's keys arrive by the
/// ten thousand, and writing their rows was the longest step before that page could fold.
///
/// The order stays the one of a write made in place: the thread holds the library's writer
/// before ``PhotoLibrary/absorbKeyStore(_:through:writingKeysInBackground:)`` returns, so every
/// later write (a pulled page's apply, a change block's purge) comes after the keys' rows, and
/// the key store's read position moves in the same transaction as the rows. The keys are in the
/// device's table from the start, so the first page folds with them. A write that fails puts
/// the table back to what the database holds (a page folded with the lost keys is folded again
/// by its apply: its fold no longer matches) and its error is thrown by the next apply, the next
/// move of the read position, or ``PhotoLibrary/finishKeyWrite()``.
final class BackgroundKeyWrite: Sendable {
    /// The key store position the write records.
    let cursor: Int64?
    private let finished = DispatchSemaphore(value: 0)
    private let failure = Mutex<PhotoLibraryError?>(nil)

    private init(cursor: Int64?) { self.cursor = cursor }

    /// Starts `body` in a transaction of `library`'s writer on a thread of its own, and returns
    /// once the thread holds the writer and ran `holding` (which makes the keys count);
    /// `recover` runs after a failure, before the write counts as finished.
    static func start(
        in library: PhotoLibrary, cursor: Int64?, holding: @escaping @Sendable () -> Void,
        _ body: @escaping @Sendable (Database) throws -> Void, recover: @escaping @Sendable () -> Void
    ) -> BackgroundKeyWrite {
        let write = BackgroundKeyWrite(cursor: cursor)
        let holdsWriter = DispatchSemaphore(value: 0)
        let thread = Thread {
            var signalled = false
            do {
                try library.withDatabase { db in
                    holding()
                    holdsWriter.signal()
                    signalled = true
                    try body(db)
                }
            } catch {
                let cause = error as? PhotoLibraryError
                write.failure.withLock {
                    $0 = PhotoLibraryError(
                        cause?.code ?? .internalError,
                        "could not store the asset keys that arrived from the server's key store (\(cause?.message ?? "\(error)")); "
                            + "nothing was folded with them, and the next sync reads them again")
                }
                recover()
            }
            if !signalled { holdsWriter.signal() }
            write.finished.signal()
        }
        thread.name = "photoledger.key-rows"
        thread.start()
        holdsWriter.wait()
        return write
    }

    /// Waits until the write finished, and throws its failure.
    func wait() throws {
        finished.wait()
        finished.signal()  // later waits return at once
        if let failure = failure.withLock({ $0 }) { throw failure }
    }
}

extension PhotoLibrary {
    /// Waits for the write of arriving asset keys still running on a thread of its own (see
    /// ``BackgroundKeyWrite``), and throws its failure (once).
    ///
    /// - Throws: ``PhotoLibraryError`` of the write: the keys were not stored, nor the key
    ///   store's read position moved (the next sync reads them again).
    func finishKeyWrite() throws {
        guard let write = pendingKeyWrite.withLock({ $0 }) else { return }
        defer { pendingKeyWrite.withLock { if $0 === write { $0 = nil } } }
        try write.wait()
    }
}
