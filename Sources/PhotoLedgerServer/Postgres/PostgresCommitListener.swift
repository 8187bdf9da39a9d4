import Foundation
import Synchronization

/// Tells this server process of the commits other processes make on the same PostgreSQL
/// database: a connection of its own that `LISTEN`s on ``channel``, where every push that
/// stored events publishes `"LIBRARY_ID LAST_SEQUENCE"` as its transaction commits.
///
/// A thread waits on the connection's socket (waking every quarter second to see whether it
/// should stop) and hands each commit to the handler. When the connection is lost it reconnects
/// with a growing pause; notifications sent meanwhile are lost, so after a reconnection the
/// handler is told `nil`: every waiting pull should then look for events again.
final class PostgresCommitListener: CommitWatch, Sendable {
    /// The notification channel of commits.
    static let channel = "photoledger_commits"

    private let stopped = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)

    /// Starts listening; `connect` opens a connection to the store's database. Returns once the
    /// first attempt to listen is over: when it succeeded, every commit from then on is told
    /// (a pull that starts waiting after the server started is woken by any server's commit);
    /// when it failed, the thread goes on trying.
    init(connect: @escaping @Sendable () throws -> PostgresConnection, handler: @escaping @Sendable (StoreCommit?) -> Void) {
        let firstAttempt = DispatchSemaphore(value: 0)
        let thread = Thread { [self] in
            var pause: useconds_t = 100_000
            var connectedBefore = false
            var waiting: DispatchSemaphore? = firstAttempt
            func attempted() {
                waiting?.signal()
                waiting = nil
            }
            while !stopped.load(ordering: .acquiring) {
                do {
                    let connection = try connect()
                    // LISTEN takes effect when its transaction commits, before it returns.
                    _ = try connection.execute("LISTEN \(Self.channel)")
                    if connectedBefore { handler(nil) }
                    connectedBefore = true
                    pause = 100_000
                    attempted()
                    try listen(on: connection, handler: handler)
                } catch {
                    attempted()
                    usleep(pause)
                    pause = min(pause * 2, 5_000_000)
                }
            }
            attempted()
            finished.signal()
        }
        thread.name = "photoledger-commit-listener"
        thread.start()
        firstAttempt.wait()
    }

    private func listen(on connection: PostgresConnection, handler: @Sendable (StoreCommit?) -> Void) throws {
        while !stopped.load(ordering: .acquiring) {
            var descriptor = pollfd(fd: connection.socket, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, 250)
            if ready < 0 && errno != EINTR {
                throw PostgresError(.unreachable, "poll failed on the notification connection", database: connection.database)
            }
            guard ready > 0 else { continue }
            for payload in try connection.receivedNotifications() {
                let parts = payload.split(separator: " ")
                guard parts.count == 2, let library = Int64(parts[0]), let sequence = Int64(parts[1]) else { continue }
                handler(StoreCommit(libraryID: library, through: sequence))
            }
        }
    }

    func stop() {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        finished.wait()
    }
}
