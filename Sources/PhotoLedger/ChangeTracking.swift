import Foundation
import LedgerCore
import LedgerStore
import Synchronization

/// A fetch's outcome as one commit left it: what change details compare a fetch result with.
enum ResultSnapshot: Sendable {
    /// An asset fetch: identifiers, versions and the first objects.
    case assets(PhotoLibrary.AssetFetch)
    /// A collection fetch: every collection.
    case collections([AssetCollection])
    /// A fetch of albums and folders.
    case items([PhotoCollection])
    /// A fetch of folders.
    case lists([CollectionList])
}

/// What one commit changed, captured inside its transaction: the objects it touched as they
/// are after it, and the outcome of every fetch the app held then that the commit could affect.
struct CommitRecord: Sendable {
    /// The commit's place in the library's commit order (`replica_state.change_generation`).
    let generation: Int64
    /// The objects the commit touched.
    let touched: TouchedObjects
    /// Assets whose current rendition changed (an edit, or a revert, won).
    let contentChanged: Set<UUID>
    /// Whether the touched objects were read after the commit (not without read access).
    let objectsCaptured: Bool
    /// The touched assets as a fetch by identifier returns them after the commit (absent: gone).
    let assets: [UUID: Asset]
    /// The touched albums after the commit (absent: deleted or merged away).
    let albums: [UUID: AssetCollection]
    /// The touched folders after the commit (absent: deleted).
    let lists: [UUID: CollectionList]
    /// The fetches the app held when the commit was made.
    let tracked: Set<FetchQuery>
    /// The outcome of each tracked fetch the commit could affect, after the commit.
    let results: [FetchQuery: ResultSnapshot]
}

/// Keeps a fetch's query tracked while a fetch result made by it exists.
final class QueryRegistration: Sendable {
    let query: FetchQuery
    private weak let tracker: ChangeTracker?

    init(query: FetchQuery, tracker: ChangeTracker) {
        self.query = query
        self.tracker = tracker
    }

    deinit { tracker?.release(query) }
}

/// The fetches the app holds results of (counted by query), and the lock that orders commits'
/// captures with their notifications.
///
/// A commit that notifies takes ``captureLock`` inside its transaction, before it reads the
/// tracked queries, and releases it after it has committed and handed its record to the
/// observers. So notifications go out in commit order, and a fetch whose query nobody tracked
/// yet waits for a commit in progress before it reads: it then either reads that commit, or is
/// tracked by it.
final class ChangeTracker: Sendable {
    private let queries = Mutex<[FetchQuery: Int]>([:])
    /// Held from a commit's capture until its notification is handed over (see above).
    let captureLock = NSLock()
    /// What the last capture left of the asset fetches it can update in place.
    let outcomes = CapturedOutcomes()

    /// Tracks `query` until the returned registration is released.
    func register(_ query: FetchQuery) -> QueryRegistration {
        let known = queries.withLock { queries in
            guard let count = queries[query] else { return false }
            queries[query] = count + 1
            return true
        }
        if !known {
            captureLock.lock()
            queries.withLock { $0[query, default: 0] += 1 }
            captureLock.unlock()
        }
        return QueryRegistration(query: query, tracker: self)
    }

    func release(_ query: FetchQuery) {
        queries.withLock { queries in
            guard let count = queries[query] else { return }
            queries[query] = count > 1 ? count - 1 : nil
        }
    }

    /// The queries of the fetch results that exist now.
    var tracked: Set<FetchQuery> { queries.withLock { Set($0.keys) } }
}

/// A notifying commit in progress: begun inside the transaction, published after the commit.
struct PendingCommit {
    /// The record to publish (nil: nobody listens, nothing to publish).
    var record: CommitRecord?
}

extension TouchedObjects {
    /// Whether a commit that touched these objects can change what `query` returns.
    func mayAffect(_ query: FetchQuery) -> Bool {
        switch query {
        case .assetsWithIdentifiers(let ids, _): return ids.contains { assets.contains($0) }
        case .assets, .assetsInSmartAlbum: return !assets.isEmpty
        case .assetsInAlbum, .keyAssets: return !assets.isEmpty || !albums.isEmpty
        case .collections, .collectionsWithIdentifiers, .collectionsContaining: return !assets.isEmpty || !albums.isEmpty
        case .collectionsInList: return !assets.isEmpty || !albums.isEmpty || !lists.isEmpty
        case .collectionLists, .collectionListsContaining: return !albums.isEmpty || !lists.isEmpty
        }
    }
}

extension PhotoLibrary {
    /// The stamp of each asset's content register (nil: never edited), to tell after a fold
    /// which assets' current rendition changed.
    static func contentStamps(_ assets: some Collection<UUID>, in db: Database) throws -> [UUID: WriterStamp?] {
        guard !assets.isEmpty else { return [:] }
        var stamps: [UUID: WriterStamp?] = [:]
        let statement = try db.cachedStatement("SELECT content_hlc, content_device FROM assets WHERE asset_id = ?")
        for asset in assets {
            defer { statement.reset() }
            try statement.bind(asset.bytes, at: 1)
            let found = try statement.step() && !statement.isNull(0) && statement.int64(0) != 0
            stamps[asset] = found ? WriterStamp(hlc: statement.int64(0), device: statement.isNull(1) ? "" : statement.text(1)) : nil
        }
        return stamps
    }

    /// Captures a commit that touched `touched`, inside its transaction after its fold: moves the
    /// commit generation and, when anyone listens, reads what the notification needs. Takes the
    /// tracker's capture lock when it returns a record: ``publish(_:)`` releases it.
    ///
    /// - Parameter contentBefore: the content stamps (``contentStamps(_:in:)``) of the assets the
    ///   commit may have edited, read before the fold.
    func beginCommit(_ touched: TouchedObjects, contentBefore: [UUID: WriterStamp?], in db: Database) throws -> PendingCommit {
        guard !touched.isEmpty else { return PendingCommit(record: nil) }
        try db.execute("UPDATE replica_state SET change_generation = change_generation + 1 WHERE id = 1")
        guard observers.hasListeners else { return PendingCommit(record: nil) }
        let generation = try Self.changeGeneration(in: db)
        tracker.captureLock.lock()
        do {
            return try capture(touched, generation: generation, contentBefore: contentBefore, in: db)
        } catch {
            tracker.captureLock.unlock()
            throw error
        }
    }

    private func capture(_ touched: TouchedObjects, generation: Int64, contentBefore: [UUID: WriterStamp?], in db: Database) throws
        -> PendingCommit
    {
        let touched = try Self.withBurstSiblings(touched, in: db)
        let after = try Self.contentStamps(contentBefore.keys, in: db)
        let edited = Set(contentBefore.keys.filter { touched.assets.contains($0) && contentBefore[$0]! != after[$0] ?? nil })
        let now = options.clock()
        let tracked = tracker.tracked
        var assets: [UUID: Asset] = [:], albums: [UUID: AssetCollection] = [:], results: [FetchQuery: ResultSnapshot] = [:]
        var lists: [UUID: CollectionList] = [:]
        var untracked = Set<FetchQuery>()
        let access = try? readAccess(in: db)
        if let access {
            let everything = FetchOptions(includeHiddenAssets: true)
            for asset in try Self.assets(.assetsWithIdentifiers(Array(touched.assets), everything), db: db, access: access, now: now).loaded
            {
                assets[asset.id] = asset
            }
            let wanted = Array(touched.albums)
            for album in try Self.collections(.collectionsWithIdentifiers(wanted, FetchOptions()), db: db, access: access, now: now)
            where touched.albums.contains(album.id) {
                albums[album.id] = album
            }
            if !touched.lists.isEmpty {
                let tree = try CollectionTree(db)
                for id in touched.lists { lists[id] = tree.list(id) }
            }
            for query in tracked where touched.mayAffect(query) {
                // A query that cannot run any more (its album is gone, for example) gives what a
                // fetch would; one that fails is left to a fresh fetch when details are asked for.
                do {
                    switch query {
                    case .assets, .assetsWithIdentifiers, .assetsInAlbum, .assetsInSmartAlbum, .keyAssets:
                        // Updated in place from the last capture when it was the commit before
                        // this one (CapturedOutcomes), read whole otherwise.
                        if let previous = tracker.outcomes.outcome(of: query, before: generation),
                            let updated = try Self.updated(
                                previous, query: query, touched: touched.assets, db: db, access: access, now: now)
                        {
                            results[query] = .assets(updated)
                        } else {
                            results[query] = .assets(try Self.assets(query, db: db, access: access, now: now))
                        }
                    case .collections, .collectionsWithIdentifiers, .collectionsContaining:
                        results[query] = .collections(try Self.collections(query, db: db, access: access, now: now))
                    case .collectionsInList:
                        results[query] = .items(try Self.photoCollections(query, db: db, access: access, now: now))
                    case .collectionLists, .collectionListsContaining:
                        results[query] = .lists(try Self.collectionLists(query, db: db))
                    }
                } catch {
                    untracked.insert(query)
                }
            }
        }
        tracker.outcomes.keep(results, unchanged: tracked.filter { !touched.mayAffect($0) }, generation: generation)
        return PendingCommit(
            record: CommitRecord(
                generation: generation, touched: touched, contentChanged: edited, objectsCaptured: access != nil, assets: assets,
                albums: albums, lists: lists, tracked: access == nil ? [] : tracked.subtracting(untracked), results: results))
    }

    /// `touched` with the other photos of the bursts of its assets: a change to one photo of a
    /// burst (a pick, a deletion) can make another its representative.
    static func withBurstSiblings(_ touched: TouchedObjects, in db: Database) throws -> TouchedObjects {
        guard !touched.assets.isEmpty, try Fetching.hasBursts(db) else { return touched }
        var result = touched
        let statement = try db.cachedStatement(
            """
            SELECT b.asset_id FROM assets a JOIN assets b ON b.burst_identifier = a.burst_identifier
            WHERE a.asset_id = ? AND a.burst_identifier IS NOT NULL AND b.asset_id <> a.asset_id
            """)
        for asset in touched.assets {
            defer { statement.reset() }
            try statement.bind(asset.bytes, at: 1)
            while try statement.step() { result.assets.insert(statement.withBlob(0) { UUID(bytes: $0) }!) }
        }
        return result
    }

    /// Hands a committed record to the observers and change streams, then releases the capture
    /// lock ``beginCommit(_:contentBefore:in:)`` took.
    func publish(_ pending: PendingCommit) {
        guard let record = pending.record else { return }
        observers.deliver(record, library: self)
        tracker.captureLock.unlock()
    }

    /// Releases the capture lock of a commit that did not commit (its transaction rolled back).
    func abandon(_ pending: PendingCommit?) {
        guard pending?.record != nil else { return }
        tracker.captureLock.unlock()
    }

    /// The commit generation a read transaction sees.
    static func changeGeneration(in db: Database) throws -> Int64 {
        try db.firstRow("SELECT change_generation FROM replica_state WHERE id = 1") { $0.int64(0) } ?? 0
    }

    // MARK: The change stream

    /// The library's changes as an asynchronous sequence: one element per commit made after
    /// this call (a change block, a pulled page applied, events folded out), in commit order,
    /// with the same change details an observer gets.
    ///
    /// ```swift
    /// var photos = try library.fetchAssets()
    /// for await change in library.changeStream() {
    ///     guard let details = change.changeDetails(for: photos) else { continue }
    ///     photos = details.fetchResultAfterChanges
    ///     // apply details.removedIndexes, insertedIndexes, changedIndexes, moves to the view
    /// }
    /// ```
    ///
    /// The sequence buffers every element until it is consumed; it ends when the iteration is
    /// cancelled.
    public func changeStream() -> AsyncStream<PhotoLibraryChange> {
        AsyncStream { continuation in
            let id = observers.addStream(continuation)
            continuation.onTermination = { [observers] _ in observers.removeStream(id) }
        }
    }
}
