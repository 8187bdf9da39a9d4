import Dispatch
import Foundation
import PhotoLedger
import PhotoLedgerJSON
import Synchronization

/// Tells the open pages when the library changed: after every commit of this process (a change
/// made through the web view or the library's API, a sync run in process), through the library's
/// change observers, and after commits of other processes (the command line, `photoledger sync`),
/// found by watching the log's position.
final class LiveChangeFeed: PhotoLibraryChangeObserver, Sendable {
    private struct State {
        var subscriptions: [ObjectIdentifier: LiveSubscription] = [:]
        /// The log position announced last.
        var announced: Int64 = 0
        var stopped = false
    }

    private let library: PhotoLibrary
    private let state = Mutex(State())
    private let watchInterval: Duration
    private let stopWatching = DispatchSemaphore(value: 0)
    private let watcherDone = DispatchSemaphore(value: 0)

    /// Starts watching `library`; `watchInterval` is how often the log's position is read.
    init(library: PhotoLibrary, watchInterval: Duration) {
        self.library = library
        self.watchInterval = watchInterval
        let position = (try? library.currentChangeToken.logPosition) ?? 0
        state.withLock { $0.announced = position }
        library.register(self)
        let thread = Thread { [self] in watch() }
        thread.name = "photoledger-web-live"
        thread.start()
    }

    /// Ends every stream and the watching; waits for the watcher to finish.
    func stop() {
        let subscriptions = state.withLock { state -> [LiveSubscription] in
            state.stopped = true
            return Array(state.subscriptions.values)
        }
        for subscription in subscriptions { subscription.close() }
        library.unregisterChangeObserver(self)
        stopWatching.signal()
        watcherDone.wait()
    }

    /// A new stream for one page; its first event says where the log stands.
    func subscribe() -> LiveSubscription {
        let subscription = LiveSubscription()
        let (position, stopped) = state.withLock { state -> (Int64, Bool) in
            if !state.stopped { state.subscriptions[ObjectIdentifier(subscription)] = subscription }
            return (state.announced, state.stopped)
        }
        if stopped {
            subscription.close()
        } else {
            subscription.send(Self.event(position: position, assets: [], albums: [], kind: "hello"))
        }
        subscription.onClose = { [weak self, weak subscription] in
            guard let self, let subscription else { return }
            _ = self.state.withLock { $0.subscriptions.removeValue(forKey: ObjectIdentifier(subscription)) }
        }
        return subscription
    }

    /// The number of open streams.
    var subscriberCount: Int { state.withLock { $0.subscriptions.count } }

    func photoLibraryDidChange(_ change: PhotoLibraryChange) {
        let position = (try? library.currentChangeToken.logPosition) ?? 0
        announce(
            Self.event(position: position, assets: change.changedAssetIdentifiers, albums: change.changedAlbumIdentifiers, kind: "commit"),
            position: position)
    }

    private func watch() {
        defer { watcherDone.signal() }
        while stopWatching.wait(timeout: .now() + watchInterval.dispatchInterval) == .timedOut {
            guard let position = try? library.currentChangeToken.logPosition else { continue }
            let moved = state.withLock { $0.announced != position }
            // Commits of this process are announced by the observer (with what changed); this
            // catches the others'.
            if moved { announce(Self.event(position: position, assets: [], albums: [], kind: "log"), position: position) }
        }
    }

    private func announce(_ event: String, position: Int64) {
        let subscriptions = state.withLock { state -> [LiveSubscription] in
            state.announced = max(state.announced, position)
            return Array(state.subscriptions.values)
        }
        for subscription in subscriptions { subscription.send(event) }
    }

    private static func event(position: Int64, assets: Set<String>, albums: Set<String>, kind: String) -> String {
        let data = JSON.object([
            ("kind", .string(kind)), ("position", .int(position)), ("assets", .array(assets.sorted().map { .string($0) })),
            ("albums", .array(albums.sorted().map { .string($0) })),
        ])
        return "event: change\ndata: \(data.serialized(escapingHTML: true))\n\n"
    }
}

/// One page's stream of server-sent events: events queue here, and the connection's thread takes
/// them, waiting for the next one (with a comment every `keepAlive` so a closed page is noticed).
final class LiveSubscription: Sendable {
    private struct State {
        var pending: [UInt8] = []
        var closed = false
        var onClose: (@Sendable () -> Void)?
    }

    private let state = Mutex(State())
    private let wake = DispatchSemaphore(value: 0)

    /// Called once when the stream ends.
    var onClose: (@Sendable () -> Void)? {
        get { state.withLock { $0.onClose } }
        set { state.withLock { $0.onClose = newValue } }
    }

    func send(_ text: String) {
        let queued = state.withLock { state -> Bool in
            guard !state.closed else { return false }
            state.pending += Array(text.utf8)
            return true
        }
        if queued { wake.signal() }
    }

    /// Ends the stream: the connection's next read ends it.
    func close() {
        state.withLock { $0.closed = true }
        wake.signal()
    }

    /// Fills `buffer` with the next bytes, waiting up to `keepAlive` for some (then a comment is
    /// sent); nil when the stream has ended.
    func read(into buffer: UnsafeMutableRawBufferPointer, keepAlive: DispatchTimeInterval) -> Int? {
        while true {
            let taken = state.withLock { state -> Int? in
                if state.pending.isEmpty { return state.closed ? nil : 0 }
                let count = min(buffer.count, state.pending.count)
                state.pending.withUnsafeBytes { buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0.prefix(count))) }
                state.pending.removeFirst(count)
                return count
            }
            guard let taken else { return nil }
            if taken > 0 { return taken }
            if wake.wait(timeout: .now() + keepAlive) == .timedOut {
                let comment = Array(": keep-alive\n\n".utf8)
                let count = min(comment.count, buffer.count)
                comment.withUnsafeBytes { buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0.prefix(count))) }
                return count
            }
        }
    }

    /// Called by libmicrohttpd's release of the response.
    func finish() {
        let onClose = state.withLock { state -> (@Sendable () -> Void)? in
            state.closed = true
            defer { state.onClose = nil }
            return state.onClose
        }
        onClose?()
    }
}

extension Duration {
    /// The duration as a dispatch interval, to the millisecond.
    var dispatchInterval: DispatchTimeInterval {
        .milliseconds(Int(components.seconds) * 1000 + Int(components.attoseconds / 1_000_000_000_000_000))
    }
}
