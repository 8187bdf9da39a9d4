import Dispatch
import Foundation
import LedgerCore
import Synchronization

/// Receives the library's changes after each commit, local or from sync.
public protocol PhotoLibraryChangeObserver: AnyObject, Sendable {
    /// Called on the library's serial notification queue after changes commit.
    func photoLibraryDidChange(_ change: PhotoLibraryChange)
}

/// The changes of one commit. Ask it how a fetch result or an object changed.
public struct PhotoLibraryChange: Sendable {
    let library: PhotoLibrary
    let touched: TouchedObjects

    /// Identifiers of the assets touched by the commit.
    public var changedAssetIdentifiers: Set<String> {
        Set(touched.assets.map { LocalIdentifier(uuid: $0, kind: .asset).description })
    }
    /// Identifiers of the albums touched by the commit.
    public var changedAlbumIdentifiers: Set<String> {
        Set(touched.albums.map { LocalIdentifier(uuid: $0, kind: .album).description })
    }

    /// How `fetchResult` changed, or nil when the commit did not affect it.
    public func changeDetails<T: PhotoObject>(for fetchResult: FetchResult<T>) -> FetchResultChangeDetails<T>? {
        guard let after = try? refetch(fetchResult) else { return nil }
        let details = FetchResultChangeDetails(before: fetchResult, after: after)
        return details.hasChanges ? details : nil
    }

    /// How `object` changed, or nil when the commit did not touch it.
    public func changeDetails(for asset: Asset) -> ObjectChangeDetails<Asset>? {
        guard touched.assets.contains(asset.id) else { return nil }
        let after = try? library.fetchAssets(withLocalIdentifiers: [asset.localIdentifier]).first
        return ObjectChangeDetails(objectBeforeChanges: asset, objectAfterChanges: after)
    }

    /// How `album` changed, or nil when the commit did not touch it.
    public func changeDetails(for album: AssetCollection) -> ObjectChangeDetails<AssetCollection>? {
        guard touched.albums.contains(album.id) else { return nil }
        let after = try? library.fetchAssetCollections(withLocalIdentifiers: [album.localIdentifier]).first
        return ObjectChangeDetails(objectBeforeChanges: album, objectAfterChanges: after)
    }

    private func refetch<T: PhotoObject>(_ result: FetchResult<T>) throws -> FetchResult<T>? {
        if T.self == Asset.self {
            return try library.fetch(result.query) as FetchResult<Asset> as? FetchResult<T>
        }
        return try library.fetch(result.query) as FetchResult<AssetCollection> as? FetchResult<T>
    }
}

/// How one object changed.
public struct ObjectChangeDetails<T: PhotoObject>: Sendable {
    /// The object as it was.
    public let objectBeforeChanges: T
    /// The object as it is now, or nil when it was deleted.
    public let objectAfterChanges: T?
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
    /// Incremental details are always available.
    public let hasIncrementalChanges = true

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

    var hasChanges: Bool { !removedIndexes.isEmpty || !insertedIndexes.isEmpty || !changedIndexes.isEmpty || !moves.isEmpty }

    /// Computes the details between two snapshots of the same fetch.
    init(before: FetchResult<T>, after: FetchResult<T>) {
        fetchResultBeforeChanges = before
        fetchResultAfterChanges = after
        let old = before.identifiers, new = after.identifiers
        let oldIndex = Dictionary(old.enumerated().map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
        let newIndex = Dictionary(new.enumerated().map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
        removedIndexes = IndexSet(old.indices.filter { newIndex[old[$0]] == nil })
        // An object changed when its version moved; results without versions compare the objects.
        let changed: (Int, Int) -> Bool
        if let oldVersions = before.versions, let newVersions = after.versions {
            changed = { oldVersions[$0] != newVersions[$1] }
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

/// The registered observers, held weakly.
final class ObserverRegistry: Sendable {
    private let observers = Mutex<[ObjectIdentifier: Weak]>([:])
    /// The queue callbacks run on, one at a time.
    let queue = DispatchQueue(label: "photoledger.observers")

    private struct Weak: Sendable {
        weak var observer: (any PhotoLibraryChangeObserver)?
    }

    func add(_ observer: any PhotoLibraryChangeObserver) {
        observers.withLock { $0[ObjectIdentifier(observer)] = Weak(observer: observer) }
    }

    func remove(_ observer: any PhotoLibraryChangeObserver) {
        observers.withLock { $0[ObjectIdentifier(observer)] = nil }
    }

    var live: [any PhotoLibraryChangeObserver] {
        observers.withLock { observers in
            observers = observers.filter { $0.value.observer != nil }
            return observers.values.compactMap(\.observer)
        }
    }
}

extension PhotoLibrary {
    /// Registers an observer (held weakly) for every later commit.
    public func register(_ observer: any PhotoLibraryChangeObserver) { observers.add(observer) }

    /// Unregisters an observer.
    public func unregisterChangeObserver(_ observer: any PhotoLibraryChangeObserver) { observers.remove(observer) }

    func notifyObservers(_ touched: TouchedObjects) {
        guard !touched.isEmpty else { return }
        let change = PhotoLibraryChange(library: self, touched: touched)
        let targets = observers.live
        guard !targets.isEmpty else { return }
        observers.queue.async {
            for observer in targets { observer.photoLibraryDidChange(change) }
        }
    }
}
