import Dispatch
import Foundation
import LedgerCore
import LedgerStore
import PhotoMedia
import Synchronization

/// Runs jobs on up to `maximumThreads` threads of its own, started when jobs come and ended
/// when none is left (an idle library keeps no thread). Background pools lower their threads'
/// priority (`nice`), so that they take only the processor time nothing else wants.
final class WorkerPool: Sendable {
    typealias Job = @Sendable () -> Void

    private struct State {
        var jobs: [Job] = []
        var next = 0
        var running = 0
    }

    private let state = Mutex(State())
    private let maximumThreads: Int
    private let niceness: Int32

    /// A pool of at most `maximumThreads` threads at `niceness` (0 normal, 19 the lowest).
    init(maximumThreads: Int, niceness: Int32) {
        self.maximumThreads = max(1, maximumThreads)
        self.niceness = niceness
    }

    /// Queues `job`; it runs after the jobs queued before it.
    func submit(_ job: @escaping Job) {
        let starts = state.withLock { state -> Bool in
            state.jobs.append(job)
            guard state.running < maximumThreads else { return false }
            state.running += 1
            return true
        }
        guard starts else { return }
        let thread = Thread { [self] in drain() }
        thread.name = niceness > 0 ? "photoledger.renditions.background" : "photoledger.renditions"
        thread.start()
    }

    private func drain() {
        // On Linux a thread's nice value is its own (setpriority on the calling task).
        if niceness > 0 { _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, niceness) }
        while let job = nextJob() { job() }
    }

    private func nextJob() -> Job? {
        state.withLock { state in
            guard state.next < state.jobs.count else {
                state.jobs.removeAll(keepingCapacity: false)
                state.next = 0
                state.running -= 1
                return nil
            }
            defer { state.next += 1 }
            return state.jobs[state.next]
        }
    }
}

/// A rendition some thread is making, which other requests for it wait for.
final class PendingRendition: Sendable {
    private let result = Mutex<Result<CachedRendition, PhotoLibraryError>?>(nil)
    private let done = DispatchSemaphore(value: 0)

    func fulfil(_ value: Result<CachedRendition, PhotoLibraryError>) {
        result.withLock { $0 = value }
        done.signal()
    }

    func wait() -> Result<CachedRendition, PhotoLibraryError> {
        done.wait()
        done.signal()  // for the next waiter
        return result.withLock { $0! }
    }
}

/// The image manager's state, one per library: the rendition cache, the threads that make
/// renditions, the renditions being made, the requests not yet answered, and the caching jobs.
final class Renditions: Sendable {
    /// An asset's rendition source to cache, and the scales asked for it.
    struct CachingTarget: Hashable, Sendable {
        var asset: String
        var version: ImageVersion
    }

    struct CachingJob: Sendable {
        var scales: Set<RenditionScale>
        var allowsNetwork: Bool
    }

    /// A request not yet answered: its handler, and the queue its results are delivered on in order.
    struct OpenRequest: Sendable {
        let handler: @Sendable (Result<ImageResult, PhotoLibraryError>) -> Void
        let delivery: DispatchQueue
    }

    struct State {
        var making: [RenditionKey: PendingRendition] = [:]
        var requests: [Int32: OpenRequest] = [:]
        var nextRequest: Int32 = 1
        var caching: [CachingTarget: CachingJob] = [:]
        var progress = ImageCachingProgress()
        var failures: [ImageCachingFailure] = []
    }

    let cache: RenditionCache
    /// Requests, at normal priority.
    let requestPool: WorkerPool
    /// Caching jobs, at low priority.
    let cachingPool: WorkerPool
    let state = Mutex(State())
    /// How many times a source was decoded to make renditions (cache hits decode nothing).
    let decodes = Atomic<Int>(0)
    /// Called before each decode (tests hold a decode back with it).
    let beforeDecode = Hook<@Sendable () -> Void>()
    /// Wakes live sync engines when a rendition of a synced scale was made and cached, so that
    /// they record it for the other devices (`Replica.renditionsCached()`).
    let syncedRenditionCached = CommitSignal()
    /// Called when a request's work is over, after its last delivery or none (tests wait for it).
    let afterRequest = Hook<@Sendable (ImageRequestID) -> Void>()

    init(libraryURL: URL, cacheLimit: Int64) {
        cache = RenditionCache(directory: RenditionCache.directory(for: libraryURL), limit: cacheLimit)
        let cores = ProcessInfo.processInfo.activeProcessorCount
        requestPool = WorkerPool(maximumThreads: cores, niceness: 0)
        cachingPool = WorkerPool(maximumThreads: cores, niceness: 10)
    }

    // MARK: Requests

    /// Records a request and returns its identifier.
    func open(_ handler: @escaping @Sendable (Result<ImageResult, PhotoLibraryError>) -> Void) -> ImageRequestID {
        state.withLock { state in
            let id = state.nextRequest
            state.nextRequest = state.nextRequest == .max ? 1 : state.nextRequest + 1
            state.requests[id] = OpenRequest(handler: handler, delivery: DispatchQueue(label: "photoledger.image-request.\(id)"))
            return ImageRequestID(rawValue: id)
        }
    }

    /// Whether the request is still waiting for its final result.
    func isOpen(_ id: ImageRequestID) -> Bool { state.withLock { $0.requests[id.rawValue] != nil } }

    /// Delivers a result on the request's queue, after those delivered before; a final one
    /// closes the request. Nothing is delivered to a closed (answered or cancelled) request.
    func deliver(_ result: Result<ImageResult, PhotoLibraryError>, to id: ImageRequestID, final: Bool) {
        state.withLock { state in
            guard let request = final ? state.requests.removeValue(forKey: id.rawValue) : state.requests[id.rawValue] else { return }
            request.delivery.async { request.handler(result) }
        }
    }

    // MARK: Making renditions

    /// The renditions of `scales` of `source`, from the cache or made now: a rendition another
    /// thread is making is waited for, not made twice; the others are made from one decode.
    func renditions(
        of source: RenditionSource, scales: [RenditionScale], make: ([RenditionScale]) throws -> [Rendition]
    ) -> [RenditionScale: Result<CachedRendition, PhotoLibraryError>] {
        var results: [RenditionScale: Result<CachedRendition, PhotoLibraryError>] = [:]
        var claimed: [(RenditionScale, PendingRendition)] = []
        var awaited: [(RenditionScale, PendingRendition)] = []
        for scale in Set(scales) {
            let key = RenditionKey(source: source.hash, scale: scale)
            if let cached = cache.lookup(key) {
                results[scale] = .success(cached)
                continue
            }
            state.withLock { state in
                if let pending = state.making[key] {
                    awaited.append((scale, pending))
                } else {
                    let pending = PendingRendition()
                    state.making[key] = pending
                    claimed.append((scale, pending))
                }
            }
        }
        // A rendition finished by another thread between the lookup and the claim is in the
        // cache by now (it is stored before its claim is released).
        claimed = claimed.filter { scale, pending in
            guard let cached = cache.lookup(RenditionKey(source: source.hash, scale: scale)) else { return true }
            results[scale] = .success(cached)
            pending.fulfil(.success(cached))
            _ = state.withLock { $0.making.removeValue(forKey: RenditionKey(source: source.hash, scale: scale)) }
            return false
        }
        if !claimed.isEmpty {
            let made: Result<[Rendition], PhotoLibraryError>
            do {
                if let hook = beforeDecode.value { hook() }
                decodes.add(1, ordering: .relaxed)
                made = .success(try make(claimed.map(\.0)))
            } catch {
                made = .failure(ImageManager.libraryError(error))
            }
            var cachedSyncedScale = false
            for ((scale, pending), index) in zip(claimed, claimed.indices) {
                let result = made.flatMap { renditions in
                    Result { () throws(MediaError) in try cache.store(renditions[index], source: source.hash) }
                        .mapError { PhotoLibrary.translate($0) }
                }
                results[scale] = result
                pending.fulfil(result)
                _ = state.withLock { $0.making.removeValue(forKey: RenditionKey(source: source.hash, scale: scale)) }
                if case .success = result, ImageManager.syncedScales.contains(scale) { cachedSyncedScale = true }
            }
            if cachedSyncedScale { syncedRenditionCached.signal() }
        }
        for (scale, pending) in awaited { results[scale] = pending.wait() }
        return results
    }

    // MARK: Caching

    /// Adds `scale` to the caching job of each target, queuing a job for targets without one.
    func startCaching(
        _ targets: [CachingTarget], scale: RenditionScale, allowsNetwork: Bool, run: @escaping @Sendable (CachingTarget) -> Void
    ) {
        var queued: [CachingTarget] = []
        state.withLock { state in
            for target in targets {
                if var job = state.caching[target] {
                    guard job.scales.insert(scale).inserted else { continue }
                    job.allowsNetwork = job.allowsNetwork || allowsNetwork
                    state.caching[target] = job
                } else {
                    state.caching[target] = CachingJob(scales: [scale], allowsNetwork: allowsNetwork)
                    queued.append(target)
                }
                state.progress.total += 1
            }
        }
        for target in queued { cachingPool.submit { run(target) } }
    }

    /// Removes `scale` from the jobs of `targets` not started yet (all scales when nil, and
    /// every target's job when `targets` is nil).
    func stopCaching(_ targets: [CachingTarget]?, scale: RenditionScale?) {
        state.withLock { state in
            for target in targets ?? Array(state.caching.keys) {
                guard var job = state.caching[target] else { continue }
                let before = job.scales.count
                if let scale { job.scales.remove(scale) } else { job.scales.removeAll() }
                state.caching[target] = job.scales.isEmpty ? nil : job
                state.progress.total -= before - job.scales.count
            }
        }
    }

    /// Takes a target's job to run it (nil when it was stopped meanwhile).
    func takeCachingJob(_ target: CachingTarget) -> CachingJob? {
        state.withLock { $0.caching.removeValue(forKey: target) }
    }

    /// Counts scales of a caching job as done; `failure` says why those that failed did.
    func finishCaching(completed: Int, failed: Int, failure: ImageCachingFailure? = nil) {
        state.withLock { state in
            state.progress.completed += completed
            state.progress.failed += failed
            if failed > 0, let failure { state.failures.append(failure) }
        }
    }

    var cachingProgress: ImageCachingProgress { state.withLock { $0.progress } }

    var cachingFailures: [ImageCachingFailure] { state.withLock { $0.failures } }

    // MARK: Garbage

    /// Removes the renditions of resources no asset shows any more: every resource of an asset
    /// that is not purged (in Recently Deleted too) and its current edit keep theirs.
    @discardableResult
    func collectGarbage(_ db: Database, gracePeriod: TimeInterval, now: Date) throws -> Int {
        let shown = try db.rows(
            """
            SELECT r.sha256 FROM asset_resources r JOIN assets a ON a.asset_id = r.asset_id WHERE a.created = 1 AND a.purged = 0
            UNION SELECT content_sha256 FROM assets WHERE created = 1 AND purged = 0 AND content_sha256 IS NOT NULL
            """
        ) { Hex.encode($0.blob(0)) }
        return cache.collectGarbage(keeping: Set(shown), gracePeriod: gracePeriod, now: now)
    }
}
