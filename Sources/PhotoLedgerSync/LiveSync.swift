import Foundation
import LedgerCore
import PhotoLedger
import SyncProtocol
import SyncTransport
import Synchronization

/// How a live sync behaves; see ``SyncEngine/live(_:)``.
public struct LiveSyncOptions: Sendable {
    /// How long the server may hold a waiting pull, in seconds (1 to the protocol's maximum).
    /// Keep it below the transport's low-speed time limit (30 seconds for the libcurl
    /// transport), which would otherwise cut a quiet wait short.
    public var pullWaitSeconds = 20
    /// How long to wait after a local commit before pushing, so a burst of quick commits goes
    /// out as one push.
    public var pushDelay: Duration = .milliseconds(5)
    /// The backoff between reconnection attempts after the server could not be reached or
    /// failed: full jitter, doubling from `baseDelay` up to `maximumDelay`.
    public var reconnect = RetryPolicy(maximumAttempts: .max, baseDelay: .milliseconds(250), maximumDelay: .seconds(30))
    /// How often to look for changes committed to this library by another process (another
    /// program or command on the same library file), which this process is not told of; nil to
    /// push only what this process commits.
    public var otherProcessCheckInterval: Duration? = .seconds(1)
    /// The seed of the reconnection jitter; nil for system randomness.
    public var randomSeed: UInt64?

    /// The defaults: 20-second waits, pushes 5 ms after a commit, reconnection within 30 s.
    public init() {}
}

/// What a live sync reports as it goes; see ``SyncEngine/live(_:)``.
public enum LiveSyncEvent: Sendable, Equatable {
    /// The first full sync finished; live waiting begins.
    case started(SyncReport)
    /// Events of other devices arrived and were applied (with the resources they need, when the
    /// engine downloads eagerly).
    case pulled(SyncReport)
    /// This device's changes reached the server.
    case pushed(SyncReport)
    /// A request failed in a way that may pass (the server unreachable or failing); the engine
    /// tries again after `retryingIn`.
    case interrupted(reason: String, retryingIn: Duration)
    /// The server answered again after an interruption.
    case resumed
    /// The library was started from a snapshot and the history before it has now been fetched
    /// in the background and refolded: the snapshot is verified (any difference repaired, the
    /// refold winning, and listed in the status).
    case historyVerified(SnapshotBootstrapStatus)
}

extension SyncEngine {
    /// Syncs continuously: a full sync first, then a waiting pull always outstanding (the server
    /// answers it as soon as another device's events are committed) and this device's commits
    /// pushed as soon as they are made (coalesced over ``LiveSyncOptions/pushDelay``), resources
    /// uploaded before the events that need them; with a readWrite token, the renditions the
    /// image manager caches at the synced sizes are recorded and uploaded by the push that
    /// follows, as a one-shot sync records them. The stream yields what happened.
    ///
    /// A failure that may pass (the server unreachable, a 5xx, a refused clock) is reported as
    /// ``LiveSyncEvent/interrupted(reason:retryingIn:)`` and retried with backoff and jitter; one
    /// that will not (a refused or revoked token, a token for another library, an answer that
    /// breaks the protocol or the server's chain) ends the stream with that error. Cancelling
    /// the consuming task (or dropping the stream) stops it between requests; what was applied
    /// stays applied.
    ///
    /// A new library started from the server's snapshot (the engine's `bootstrapFromSnapshot`)
    /// goes live as soon as the snapshot is installed and the events after it are pulled: the
    /// first sync does not wait for the history before the snapshot. The pull loop fetches that
    /// history between its pulls, ``SyncEngine/Options/historyPagesPerSync`` pages at a time (at
    /// least one), without holding a waiting pull meanwhile, then verifies the snapshot and
    /// reports ``LiveSyncEvent/historyVerified(_:)``.
    ///
    /// An addOnly token only pushes; a readOnly token only pulls.
    public func live(_ options: LiveSyncOptions = LiveSyncOptions()) -> AsyncThrowingStream<LiveSyncEvent, any Error> {
        let (stream, continuation) = AsyncThrowingStream<LiveSyncEvent, any Error>.makeStream()
        let task = Task {
            do {
                try await runLive(options) { continuation.yield($0) }
                continuation.finish()
            } catch is CancellationError {
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }

    private func runLive(_ options: LiveSyncOptions, emit: @escaping @Sendable (LiveSyncEvent) -> Void) async throws {
        // Subscribed before the first sync, so a commit made during it is pushed after it (and a
        // rendition cached during it recorded after it).
        let local = replica.localCommits()
        let cachedRenditions = replica.renditionsCached()
        let (commits, signal) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let reconnection = Reconnection(policy: options.reconnect, seed: options.randomSeed, emit: emit)
        // Live at once: the history before a snapshot is fetched by the pull loop, after this.
        let first = try await reconnection.attempt { try await self.sync(progress: nil, historyPages: 0) }
        emit(.started(first))
        let scope = first.scope ?? .readWrite
        let wait = min(max(options.pullWaitSeconds, 1), SyncRoutes.maximumPullWaitSeconds)
        try await withThrowingTaskGroup(of: Void.self) { group in
            if scope != .readOnly {
                group.addTask {
                    for await _ in local { signal.yield() }
                    try Task.checkCancellation()
                }
                if let interval = options.otherProcessCheckInterval {
                    group.addTask {
                        while true {
                            try await Task.sleep(for: interval)
                            if try self.replica.hasOutbox() { signal.yield() }
                        }
                    }
                }
                if scope == .readWrite {
                    // Renditions the image manager makes (an import's thumbnails, a request) are
                    // recorded and uploaded as a one-shot sync does, by the push that follows.
                    group.addTask {
                        for await _ in cachedRenditions { signal.yield() }
                        try Task.checkCancellation()
                    }
                }
                group.addTask {
                    try await self.pushWhenCommitted(
                        commits, recordsRenditions: scope == .readWrite, delay: options.pushDelay, reconnection: reconnection, emit: emit)
                }
            }
            if scope != .addOnly {
                group.addTask { try await self.pullWhileWaiting(wait: wait, reconnection: reconnection, emit: emit) }
            }
            defer { group.cancelAll() }
            while try await group.next() != nil {}
        }
    }

    /// Pushes whenever this device commits (or, with `recordsRenditions`, caches renditions of a
    /// synced scale, which it records first as ``sync(progress:)`` does), until cancelled.
    private func pushWhenCommitted(
        _ commits: AsyncStream<Void>, recordsRenditions: Bool, delay: Duration, reconnection: Reconnection,
        emit: @Sendable (LiveSyncEvent) -> Void
    ) async throws {
        for await _ in commits {
            if delay > .zero { try await Task.sleep(for: delay) }
            let report = try await reconnection.attempt {
                var report = SyncReport()
                // Only a readWrite token may push a rendition's record (it changes an existing asset).
                if recordsRenditions { report.recordedRenditions = try self.replica.recordRenditions() }
                let encrypted = self.replica.isEncrypted
                if encrypted { try await self.publishKeys(&report, assetKeys: false) }
                try await self.push(&report, nil)  // each batch's blobs and asset keys go up before it
                if encrypted { try await self.publishKeys(&report) }  // keys whose events went up before
                report.cursor = try self.cursor()
                return report
            }
            if report.pushedEvents > 0 || !report.rejectedEvents.isEmpty || report.recordedRenditions > 0 { emit(.pushed(report)) }
        }
        try Task.checkCancellation()
    }

    /// Keeps a waiting pull outstanding and applies what it brings, until cancelled.
    private func pullWhileWaiting(wait: Int, reconnection: Reconnection, emit: @Sendable (LiveSyncEvent) -> Void) async throws {
        while true {
            try Task.checkCancellation()
            // The history before the snapshot this library started from, a few pages between
            // pulls; the pull after them does not wait, so new events still arrive meanwhile.
            let history = try await reconnection.attempt { () async throws -> SnapshotBootstrapStatus? in
                guard let status = try self.replica.bootstrapStatus(), !status.isVerified else { return nil }
                return try await self.fetchHistory(maximumPages: max(1, min(self.options.historyPagesPerSync, 64)))
            }
            if let history, history.isVerified { emit(.historyVerified(history)) }
            let historyPending = history.map { !$0.isVerified } ?? false
            let report = try await reconnection.attempt {
                var report = SyncReport()
                let cursor = try self.cursor()
                let page = try await self.fetched(
                    since: cursor, after: cursor == 0 ? HashChain.origin : nil, wait: historyPending ? nil : wait)
                guard page.cursor >= cursor else {
                    throw SyncError.invalidResponse("the server's cursor went back from \(cursor) to \(page.cursor); was the server reset?")
                }
                guard page.eventCount > 0 else { return report }
                // An encrypted library: the keys of what arrived (published before its push). A plain
                // library learned at the first sync whether it must join an encrypted one.
                let encrypted = self.replica.isEncrypted
                if encrypted { try await self.exchangeKeys(&report) }
                try self.apply(page, to: &report)
                // More may follow at once: fetch without waiting until a page comes back empty.
                var more = page.hasMore
                var previous = page.lastChainHash
                while more {
                    try Task.checkCancellation()
                    let next = try await self.fetched(since: try self.cursor(), after: previous)
                    try self.apply(next, to: &report)
                    (more, previous) = (next.hasMore && next.eventCount > 0, next.lastChainHash)
                }
                if encrypted { try await self.exchangeKeys(&report) }
                try await self.downloadRenditions(&report, nil)
                if self.options.downloadResourcesEagerly { try await self.downloadResources(&report, nil) }
                try self.replica.finishKeyWrite()
                report.cursor = try self.cursor()
                try self.replica.recordSync()
                return report
            }
            if report.pulledEvents > 0 || !report.quarantinedEvents.isEmpty || report.downloadedResources > 0 {
                emit(.pulled(report))
            }
        }
    }
}

extension SyncEngine {
    /// A page fetched by ``fetchPage(since:after:wait:)``, whose request is abandoned when the
    /// calling task is cancelled (a waiting pull would otherwise hold on until its wait ends).
    fileprivate func fetched(since cursor: Int64, after previous: [UInt8]?, wait: Int? = nil) async throws -> PulledPage {
        let fetching = fetchPage(since: cursor, after: previous, wait: wait)
        return try await withTaskCancellationHandler {
            try await fetching.value
        } onCancel: {
            fetching.cancel()
        }
    }
}

/// Runs one step of a live sync again after failures that may pass, with full-jitter backoff
/// shared by the push and pull loops (one outage, one backoff), and reports interruptions.
final class Reconnection: Sendable {
    private struct State {
        var failures = 0
        var random: any RandomNumberGenerator & Sendable
    }

    private let policy: RetryPolicy
    private let state: Mutex<State>
    private let emit: @Sendable (LiveSyncEvent) -> Void

    init(policy: RetryPolicy, seed: UInt64?, emit: @escaping @Sendable (LiveSyncEvent) -> Void) {
        self.policy = policy
        self.emit = emit
        let random: any RandomNumberGenerator & Sendable =
            if let seed { SeededRandomNumberGenerator(seed: seed) } else { SystemRandomNumberGenerator() }
        state = Mutex(State(random: random))
    }

    /// Runs `step` until it succeeds or fails for good.
    func attempt<T>(_ step: () async throws -> T) async throws -> T {
        while true {
            try Task.checkCancellation()
            do {
                let value = try await step()
                let recovered = state.withLock { state in
                    defer { state.failures = 0 }
                    return state.failures > 0
                }
                if recovered { emit(.resumed) }
                return value
            } catch {
                guard Self.mayPass(error) else { throw error }
                let delay = state.withLock { state in
                    state.failures += 1
                    return policy.delay(beforeRetry: state.failures, fraction: Double.random(in: 0..<1, using: &state.random))
                }
                emit(.interrupted(reason: (error as? SyncError)?.description ?? "\(error)", retryingIn: delay))
                try await Task.sleep(for: delay)
            }
        }
    }

    /// Whether a failure may pass by itself: the server unreachable or failing, or a clock the
    /// server refused (clocks converge). Refused tokens, forbidden libraries and answers that
    /// break the protocol do not.
    static func mayPass(_ error: any Error) -> Bool {
        switch error as? SyncError {
        case .serverUnreachable, .serverError, .clockSkew: true
        default: false
        }
    }
}
