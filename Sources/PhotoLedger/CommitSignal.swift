import Foundation
import Synchronization

/// Tells subscribers that this device committed new events of its own (a change block that
/// changed something), so a live sync engine can push them at once instead of polling the
/// outbox. Each subscriber gets an `AsyncStream` that buffers at most one signal: commits made
/// while the subscriber was busy arrive as one, which is the coalescing a pusher wants (it reads
/// the whole outbox anyway).
final class CommitSignal: Sendable {
    private let subscribers = Mutex<[UUID: AsyncStream<Void>.Continuation]>([:])

    /// A new subscription; it ends when the stream is dropped or its consumer is cancelled.
    func subscribe() -> AsyncStream<Void> {
        let id = UUID()
        let (stream, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        continuation.onTermination = { [weak self] _ in
            _ = self?.subscribers.withLock { $0.removeValue(forKey: id) }
        }
        subscribers.withLock { $0[id] = continuation }
        return stream
    }

    /// Wakes every subscriber.
    func signal() {
        let current = subscribers.withLock { Array($0.values) }
        for continuation in current { continuation.yield() }
    }
}
