import Dispatch
import Foundation
import LedgerCore
import Synchronization

/// Receives the library's changes after each commit, local or from sync.
public protocol PhotoLibraryChangeObserver: AnyObject, Sendable {
    /// Called on the library's serial notification queue after changes commit: once per commit,
    /// in commit order (or, for an observer registered with `coalescing`, once for the commits
    /// made while it was busy).
    func photoLibraryDidChange(_ change: PhotoLibraryChange)
}

/// The changes of one commit (PhotoKit's `PHChange`): a change block, a pulled page applied, or
/// events folded out. Ask it how a fetch result or an object changed.
///
/// The details are captured when the commit is made, not when the notification is read: a
/// fetch result and the details of each later commit, applied in commit order, give what a new
/// fetch gives after those commits, however slowly the notifications are handled.
public struct PhotoLibraryChange: Sendable {
    let library: PhotoLibrary
    /// The commits described, oldest first: one, or several for a coalescing observer.
    let records: [CommitRecord]

    /// The number of commits this change describes: 1, or more for an observer registered with
    /// `coalescing` that was busy while they were made.
    public var commitCount: Int { records.count }

    /// Identifiers of the assets touched by the commit.
    public var changedAssetIdentifiers: Set<String> {
        Set(records.flatMap(\.touched.assets).map { LocalIdentifier(uuid: $0, kind: .asset).description })
    }
    /// Identifiers of the albums touched by the commit.
    public var changedAlbumIdentifiers: Set<String> {
        Set(records.flatMap(\.touched.albums).map { LocalIdentifier(uuid: $0, kind: .album).description })
    }
    /// Identifiers of the folders touched by the commit.
    public var changedCollectionListIdentifiers: Set<String> {
        Set(records.flatMap(\.touched.lists).map { LocalIdentifier(uuid: $0, kind: .collectionList).description })
    }
    /// Identifiers of the assets whose photo or video content changed (an edit or a revert).
    public var contentChangedAssetIdentifiers: Set<String> {
        Set(records.flatMap(\.contentChanged).map { LocalIdentifier(uuid: $0, kind: .asset).description })
    }

    /// How `fetchResult` changed with this commit, or nil when the commit did not affect it
    /// (or `fetchResult` was fetched after the commit).
    ///
    /// Pass the result you hold: the one you fetched, or the `fetchResultAfterChanges` of the
    /// previous notification. When the library could not capture the result's state at the
    /// commit (it was fetched while the commit was being made, or its fetch failed at the
    /// commit), the details have `hasIncrementalChanges == false`: reload from
    /// `fetchResultAfterChanges`.
    public func changeDetails<T: PhotoObject>(for fetchResult: FetchResult<T>) -> FetchResultChangeDetails<T>? {
        guard let last = records.last, fetchResult.generation < last.generation else { return nil }
        let query = fetchResult.query
        for record in records.reversed() where record.generation > fetchResult.generation {
            if let snapshot = record.results[query] {
                let touched = Set(records.lazy.filter { $0.generation > fetchResult.generation }.flatMap(\.touched.assets))
                guard
                    let after = library.result(
                        from: snapshot, query: query, generation: last.generation, carrying: fetchResult, touched: touched, records: records
                    )
                else { return nil }
                let details = FetchResultChangeDetails(before: fetchResult, after: after, touched: touched)
                return details.hasChanges ? details : nil
            }
            if !record.tracked.contains(query) {
                // Not captured at that commit: only a fetch now can say what the result is.
                guard let after = try? library.refetch(fetchResult) else { return nil }
                return FetchResultChangeDetails(before: fetchResult, reloading: after)
            }
            // Tracked and not affected: the result was the same before this commit.
        }
        return nil
    }

    /// How `asset` changed, or nil when the commit did not touch it.
    public func changeDetails(for asset: Asset) -> ObjectChangeDetails<Asset>? {
        guard let record = records.last(where: { $0.touched.assets.contains(asset.id) }) else { return nil }
        let after =
            record.objectsCaptured ? record.assets[asset.id] : try? library.fetchAssets(withLocalIdentifiers: [asset.localIdentifier]).first
        return ObjectChangeDetails(
            objectBeforeChanges: asset, objectAfterChanges: after,
            assetContentChanged: records.contains { $0.contentChanged.contains(asset.id) })
    }

    /// How `folder` changed (its title, its place), or nil when the commit did not touch it.
    public func changeDetails(for folder: CollectionList) -> ObjectChangeDetails<CollectionList>? {
        guard let record = records.last(where: { $0.touched.lists.contains(folder.id) }) else { return nil }
        let after =
            record.objectsCaptured
            ? record.lists[folder.id] : try? library.fetchCollectionLists(withLocalIdentifiers: [folder.localIdentifier]).first
        return ObjectChangeDetails(objectBeforeChanges: folder, objectAfterChanges: after, assetContentChanged: false)
    }

    /// How `album` changed, or nil when the commit did not touch it.
    public func changeDetails(for album: AssetCollection) -> ObjectChangeDetails<AssetCollection>? {
        guard let record = records.last(where: { $0.touched.albums.contains(album.id) }) else { return nil }
        let after =
            record.objectsCaptured
            ? record.albums[album.id]
            : (try? library.fetchAssetCollections(withLocalIdentifiers: [album.localIdentifier]).first).flatMap {
                $0.id == album.id ? $0 : nil
            }
        return ObjectChangeDetails(objectBeforeChanges: album, objectAfterChanges: after, assetContentChanged: false)
    }
}

extension PhotoLibrary {
    /// Runs a fetch result's query again now.
    func refetch<T: PhotoObject>(_ result: FetchResult<T>) throws -> FetchResult<T>? {
        if T.self == Asset.self {
            return try fetch(result.query) as FetchResult<Asset> as? FetchResult<T>
        }
        if T.self == PhotoCollection.self {
            return try fetch(result.query) as FetchResult<PhotoCollection> as? FetchResult<T>
        }
        if T.self == CollectionList.self {
            return try fetch(result.query) as FetchResult<CollectionList> as? FetchResult<T>
        }
        return try fetch(result.query) as FetchResult<AssetCollection> as? FetchResult<T>
    }

    /// The fetch result a captured snapshot describes. Its objects are the ones captured at the
    /// commits (the first batch, and every touched object), those `before` holds in the same
    /// version, and the others read when first accessed.
    func result<T: PhotoObject>(
        from snapshot: ResultSnapshot, query: FetchQuery, generation: Int64, carrying before: FetchResult<T>, touched: Set<UUID>,
        records: [CommitRecord]
    ) -> FetchResult<T>? {
        let registration = tracker.register(query)
        switch snapshot {
        case .collections(let collections):
            return FetchResult<AssetCollection>(collections, query: query, generation: generation, registration: registration)
                as? FetchResult<T>
        case .items(let items):
            return FetchResult<PhotoCollection>(items, query: query, generation: generation, registration: registration) as? FetchResult<T>
        case .lists(let lists):
            return FetchResult<CollectionList>(lists, query: query, generation: generation, registration: registration) as? FetchResult<T>
        case .assets(let fetch):
            var known: [UUID: Asset] = [:]
            if let carried = before as? FetchResult<Asset> {
                // Objects the commits touched may have changed in the same version: never carried over.
                for (index, object) in carried.loadedObjects.enumerated() where !touched.contains(carried.identifiers[index]) {
                    if let object { known[carried.identifiers[index]] = object }
                }
            }
            for record in records { for (id, asset) in record.assets { known[id] = asset } }
            for asset in fetch.loaded { known[asset.id] = asset }
            // An object is reused only in the version the snapshot names; the others are read
            // when first accessed.
            let objects = fetch.identifiers.indices.map { index in
                known[fetch.identifiers[index]].flatMap { $0.version == fetch.versions[index] ? $0 : nil }
            }
            return FetchResult<Asset>(
                identifiers: fetch.identifiers, versions: fetch.versions, objects: objects, query: query, loader: assetLoader,
                generation: generation, registration: registration) as? FetchResult<T>
        }
    }
}

/// How one object changed (PhotoKit's `PHObjectChangeDetails`).
public struct ObjectChangeDetails<T: PhotoObject>: Sendable {
    /// The object as it was.
    public let objectBeforeChanges: T
    /// The object as it is after the commit, or nil when it was deleted.
    public let objectAfterChanges: T?
    /// Whether the asset's photo or video changed (an edit or a revert won), not only its
    /// properties. Always false for albums.
    public let assetContentChanged: Bool
    /// Whether the object is gone (deleted, purged or merged away).
    public var objectWasDeleted: Bool { objectAfterChanges == nil }
}

/// How a fetch result changed, with PhotoKit's index rules. Apply them in this order:
/// 1. remove the objects at `removedIndexes` (indexes in the result before the changes);
/// 2. insert the new objects at `insertedIndexes` (indexes in the result after removals and
///    insertions);
/// 3. reload the objects at `changedIndexes` (indexes in the new result);
/// 4. take the moved objects out (`from`: indexes after removals and insertions) and put them in
///    at their indexes in the new result (`to`), in increasing `to` order.
/// Only a minimal set of objects moves: the others keep their relative order.
public struct FetchResultChangeDetails<T: PhotoObject>: Sendable {
    /// The fetch result the details start from.
    public let fetchResultBeforeChanges: FetchResult<T>
    /// The fetch result with the changes: keep it for the next notification.
    public let fetchResultAfterChanges: FetchResult<T>
    /// Indexes, in the old result, of the objects no longer in the result.
    public let removedIndexes: IndexSet
    /// Indexes, after removals and insertions, of the new objects.
    public let insertedIndexes: IndexSet
    /// Indexes, in the new result, of objects whose properties changed.
    public let changedIndexes: IndexSet
    /// Moves (from an index after removals and insertions, to an index in the new result).
    public let moves: [(from: Int, to: Int)]
    /// Whether the indexes describe the change (PhotoKit's rule): true when the library
    /// captured the result's state at the commit; false when it could not (the result was
    /// fetched while the commit was being made), and then the indexes are empty: reload the
    /// view from ``fetchResultAfterChanges``.
    public let hasIncrementalChanges: Bool

    /// Whether any object moved.
    public var hasMoves: Bool { !moves.isEmpty }
    /// The objects removed.
    public var removedObjects: [T] { removedIndexes.map { fetchResultBeforeChanges[$0] } }
    /// The objects inserted, in the order of ``insertedIndexes``.
    public var insertedObjects: [T] { insertedNewIndexes.map { fetchResultAfterChanges[$0] } }
    /// Where each inserted object is in the new result.
    private let insertedNewIndexes: [Int]
    /// The objects changed, as they are now.
    public var changedObjects: [T] { changedIndexes.map { fetchResultAfterChanges[$0] } }

    /// Calls `body` for each move, in order.
    public func enumerateMoves(_ body: (Int, Int) -> Void) {
        for move in moves { body(move.from, move.to) }
    }

    var hasChanges: Bool {
        !hasIncrementalChanges || !removedIndexes.isEmpty || !insertedIndexes.isEmpty || !changedIndexes.isEmpty || !moves.isEmpty
    }

    /// Details without indexes: the view reloads from `after`.
    init(before: FetchResult<T>, reloading after: FetchResult<T>) {
        fetchResultBeforeChanges = before
        fetchResultAfterChanges = after
        hasIncrementalChanges = false
        removedIndexes = IndexSet()
        insertedIndexes = IndexSet()
        changedIndexes = IndexSet()
        insertedNewIndexes = []
        moves = []
    }

    /// Computes the details between two snapshots of the same fetch. `touched` names the objects
    /// the commits between them touched: their version alone does not tell whether they changed
    /// (a version is the latest clock value of any write folded, and an older write from another
    /// device can still win a field), so they are compared whole, or reported changed when one
    /// side is not read.
    init(before: FetchResult<T>, after: FetchResult<T>, touched: Set<UUID> = []) {
        fetchResultBeforeChanges = before
        fetchResultAfterChanges = after
        hasIncrementalChanges = true
        let old = before.identifiers, new = after.identifiers
        let oldIndex = Dictionary(old.enumerated().map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
        let newIndex = Dictionary(new.enumerated().map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
        removedIndexes = IndexSet(old.indices.filter { newIndex[old[$0]] == nil })
        // An object changed when its version moved; results without versions compare the objects.
        let changed: (Int, Int) -> Bool
        if let oldVersions = before.versions, let newVersions = after.versions {
            let (oldObjects, newObjects) = touched.isEmpty ? ([], []) : (before.loadedObjects, after.loadedObjects)
            changed = { old, new in
                guard oldVersions[old] == newVersions[new] else { return true }
                guard touched.contains(before.identifiers[old]) else { return false }
                guard let was = oldObjects[old], let now = newObjects[new] else { return true }
                return was != now
            }
        } else {
            changed = { before[$0] != after[$1] }
        }
        changedIndexes = IndexSet(new.indices.filter { index in oldIndex[new[index]].map { changed($0, index) } ?? false })

        // Survivors keep their old relative order, except a minimal set (outside a longest run
        // whose new positions increase) that moves.
        let survivors = old.filter { newIndex[$0] != nil }
        let staying = Set(longestIncreasingSubsequence(survivors.map { newIndex[$0]! }).map { survivors[$0] })
        // Movers wait right after the staying survivor that preceded them before the change.
        var moversAfter: [UUID?: [UUID]] = [:]
        var previousStayer: UUID?
        for id in survivors {
            if staying.contains(id) { previousStayer = id } else { moversAfter[previousStayer, default: []].append(id) }
        }
        // The state after removals and insertions: new order without the movers, movers where they were.
        var intermediate = moversAfter[nil] ?? []
        for id in new where staying.contains(id) || oldIndex[id] == nil {
            intermediate.append(id)
            if staying.contains(id) { intermediate += moversAfter[id] ?? [] }
        }
        insertedIndexes = IndexSet(intermediate.indices.filter { oldIndex[intermediate[$0]] == nil })
        insertedNewIndexes = insertedIndexes.map { newIndex[intermediate[$0]]! }
        moves = intermediate.enumerated().compactMap { index, id in
            oldIndex[id] != nil && !staying.contains(id) ? (from: index, to: newIndex[id]!) : nil
        }
    }
}

/// Indexes of a longest strictly increasing subsequence (patience sorting).
func longestIncreasingSubsequence(_ values: [Int]) -> [Int] {
    var tails: [Int] = []
    var previous = [Int](repeating: -1, count: values.count)
    for (index, value) in values.enumerated() {
        var low = 0, high = tails.count
        while low < high {
            let middle = (low + high) / 2
            if values[tails[middle]] < value { low = middle + 1 } else { high = middle }
        }
        if low > 0 { previous[index] = tails[low - 1] }
        if low == tails.count { tails.append(index) } else { tails[low] = index }
    }
    var result: [Int] = []
    var current = tails.last ?? -1
    while current >= 0 {
        result.append(current)
        current = previous[current]
    }
    return result.reversed()
}

/// The registered observers (held weakly) and change streams, and the delivery of each
/// commit's record to them in commit order.
final class ObserverRegistry: Sendable {
    private let observers = Mutex<[ObjectIdentifier: Entry]>([:])
    private let streams = Mutex<[Int: AsyncStream<PhotoLibraryChange>.Continuation]>([:])
    private let nextStream = Atomic<Int>(0)
    /// The queue callbacks run on, one at a time.
    let queue = DispatchQueue(label: "photoledger.observers")

    private struct Entry: Sendable {
        weak var observer: (any PhotoLibraryChangeObserver)?
        /// Records waiting for a coalescing observer (nil: one notification per commit).
        let pending: PendingRecords?
    }

    /// Records waiting for a coalescing observer.
    private final class PendingRecords: Sendable {
        let records = Mutex<[CommitRecord]>([])
    }

    func add(_ observer: any PhotoLibraryChangeObserver, coalescing: Bool) {
        observers.withLock { $0[ObjectIdentifier(observer)] = Entry(observer: observer, pending: coalescing ? PendingRecords() : nil) }
    }

    func remove(_ observer: any PhotoLibraryChangeObserver) {
        observers.withLock { $0[ObjectIdentifier(observer)] = nil }
    }

    func addStream(_ continuation: AsyncStream<PhotoLibraryChange>.Continuation) -> Int {
        let id = nextStream.add(1, ordering: .relaxed).newValue
        streams.withLock { $0[id] = continuation }
        return id
    }

    func removeStream(_ id: Int) {
        _ = streams.withLock { $0.removeValue(forKey: id) }
    }

    private var live: [Entry] {
        observers.withLock { observers in
            observers = observers.filter { $0.value.observer != nil }
            return Array(observers.values)
        }
    }

    /// Whether any observer or stream would receive a commit now.
    var hasListeners: Bool {
        !live.isEmpty || !streams.withLock { $0.isEmpty }
    }

    /// Hands one commit's record to every stream and observer. Called in commit order (under
    /// the tracker's capture lock), so each receives the commits in that order.
    func deliver(_ record: CommitRecord, library: PhotoLibrary) {
        let change = PhotoLibraryChange(library: library, records: [record])
        for continuation in streams.withLock({ Array($0.values) }) { continuation.yield(change) }
        for entry in live {
            if let pending = entry.pending {
                pending.records.withLock { $0.append(record) }
                queue.async {
                    let records = pending.records.withLock { records in
                        defer { records = [] }
                        return records
                    }
                    guard !records.isEmpty, let observer = entry.observer else { return }
                    observer.photoLibraryDidChange(PhotoLibraryChange(library: library, records: records))
                }
            } else {
                queue.async {
                    entry.observer?.photoLibraryDidChange(change)
                }
            }
        }
    }
}

extension PhotoLibrary {
    /// Registers an observer (held weakly) for every later commit (PhotoKit's
    /// `register(_:)`): one notification per commit, in commit order.
    public func register(_ observer: any PhotoLibraryChangeObserver) { observers.add(observer, coalescing: false) }

    /// Registers an observer (held weakly) for later commits; with `coalescing`, the commits
    /// made while the observer is busy arrive as one notification (``PhotoLibraryChange/commitCount``
    /// says how many) whose details go from the result passed to the state after the last of them.
    public func register(_ observer: any PhotoLibraryChangeObserver, coalescing: Bool) { observers.add(observer, coalescing: coalescing) }

    /// Unregisters an observer.
    public func unregisterChangeObserver(_ observer: any PhotoLibraryChangeObserver) { observers.remove(observer) }
}
