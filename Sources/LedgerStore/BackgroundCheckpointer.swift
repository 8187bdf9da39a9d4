import CSQLite
import Foundation
import LedgerCore

/// Copies a database's write-ahead log back into the database file on a thread of its own, with
/// a connection of its own, so that the connection that commits never waits for it.
///
/// SQLite's default, automatic checkpoint runs inside the commit that takes the log past 1,000
/// pages: that commit then also copies every page back and waits for the file to reach the
/// disk. Here the commit only asks, once per 1,000 new pages; the checkpoint runs beside the
/// next transaction (in WAL mode a checkpoint and a writer run at once), and the log restarts
/// from its beginning when the next transaction writes after a checkpoint that caught up.
/// Should the log still grow past ``hardLimitFrames`` (commits that follow each other too
/// closely for the log ever to restart), the committing connection checkpoints itself, as
/// SQLite would, and the log restarts after it.
final class BackgroundCheckpointer: @unchecked Sendable {
    // Safe to share: the flags are read and written only while `condition` is locked.
    private let condition = NSCondition()
    private var requested = false
    /// Whether the thread is running a checkpoint it took from a request.
    private var running = false
    private var stopped = false
    private var finished = false
    private var completed = 0
    /// The log's length, in pages, when a checkpoint was last asked for.
    private var requestedAtFrames: Int32 = 0

    /// Log pages after which a commit asks for a checkpoint (SQLite's automatic threshold).
    static let thresholdFrames: Int32 = 1000
    /// Log pages after which the committing connection checkpoints itself.
    static let hardLimitFrames: Int32 = 16 * thresholdFrames

    /// Starts the checkpointing thread for the database file at `path`.
    init(path: String, busyTimeout: Duration) {
        let thread = Thread { [self] in run(path: path, busyTimeout: busyTimeout) }
        thread.name = "photoledger.checkpoint"
        thread.start()
    }

    private func run(path: String, busyTimeout: Duration) {
        // The thread's own connection; without one, commits checkpoint as SQLite would.
        var options = Database.Options()
        options.busyTimeout = busyTimeout
        options.cacheSizeKiB = 256
        let connection = try? Database(path: path, options: options)
        while true {
            condition.lock()
            while !requested && !stopped { condition.wait() }
            if stopped {
                finished = true
                condition.broadcast()
                condition.unlock()
                return
            }
            requested = false
            running = true
            condition.unlock()
            if let connection {
                // PASSIVE: copies what no reader still needs, never waits for the writer. A busy
                // answer (another checkpoint running) leaves the work for the next request.
                _ = sqlite3_wal_checkpoint_v2(connection.handle, "main", SQLITE_CHECKPOINT_PASSIVE, nil, nil)
            }
            condition.withLock {
                completed += 1
                running = false
                condition.broadcast()
            }
        }
    }

    /// Called by the committing connection with the log's length in pages; asks for a
    /// checkpoint (and returns at once) when the log has grown by the threshold since the last
    /// request, or since it restarted. Commits that follow each other closely may find the
    /// log not yet restarted after a checkpoint that ran meanwhile: asking again on each of them
    /// would run a checkpoint, and its sync to disk, after every commit.
    func committed(logFrames frames: Int32) {
        condition.withLock {
            if frames < requestedAtFrames { requestedAtFrames = 0 }
            guard frames >= requestedAtFrames + Self.thresholdFrames else { return }
            requestedAtFrames = frames
            requested = true
            condition.signal()
        }
    }

    /// How many checkpoints the thread has run.
    var completedCount: Int { condition.withLock { completed } }

    /// Waits until no checkpoint is requested or running, or `timeout` passes; returns whether
    /// it became idle.
    func waitUntilIdle(timeout: Duration) -> Bool {
        let deadline = Date().addingTimeInterval(Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18)
        condition.lock()
        defer { condition.unlock() }
        while requested || running {
            if !condition.wait(until: deadline) { return false }
        }
        return true
    }

    /// Stops the thread (after the checkpoint it is running) and waits for it.
    func stop() {
        condition.lock()
        defer { condition.unlock() }
        stopped = true
        condition.broadcast()
        while !finished { condition.wait() }
    }
}

/// The write-ahead log hook of a connection whose checkpoints run in the background:
/// `context` is its ``BackgroundCheckpointer``.
func backgroundCheckpointHook(
    _ context: UnsafeMutableRawPointer?, _ connection: OpaquePointer?, _ name: UnsafePointer<CChar>?, _ frames: Int32
) -> Int32 {
    guard let context else { return SQLITE_OK }
    if frames >= BackgroundCheckpointer.hardLimitFrames {
        _ = sqlite3_wal_checkpoint_v2(connection, name, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
    } else {
        Unmanaged<BackgroundCheckpointer>.fromOpaque(context).takeUnretainedValue().committed(logFrames: frames)
    }
    return SQLITE_OK
}
