import Foundation
import LedgerCore
import LedgerStore
import Synchronization

/// The outcome of tracked asset fetches as the last capture left them, so that a commit that
/// touched a few assets updates them by testing only those assets, instead of reading the
/// fetches again whole (what a capture otherwise costs: see BENCHMARKS.md, per-commit change
/// recording).
///
/// Only fetches in the default order of all assets or a smart album, without a limit, and not
/// Recently Added or Recently Deleted (whose order or membership moves with the time) are kept.
/// An outcome is used only by the commit right after the one that left it (the commit generation
/// before this one); any other commit reads the fetch whole and keeps that.
final class CapturedOutcomes: Sendable {
    struct Outcome: Sendable {
        var generation: Int64
        var fetch: PhotoLibrary.AssetFetch
    }

    private let outcomes = Mutex<[FetchQuery: Outcome]>([:])

    /// The most touched assets a commit may have for its fetches to be updated in place.
    static let largestUpdate = 64

    /// Whether the outcome of `query` can be kept and updated in place.
    static func isKept(_ query: FetchQuery) -> Bool {
        let options: FetchOptions
        switch query {
        case .assets(let o): options = o
        case .assetsInSmartAlbum(let subtype, let o):
            guard subtype != .smartAlbumRecentlyAdded, subtype != .smartAlbumRecentlyDeleted else { return false }
            options = o
        default: return false
        }
        return options.sortDescriptors.isEmpty && options.fetchLimit == 0
    }

    /// The outcome of `query` after commit `generation - 1`, when one was kept.
    func outcome(of query: FetchQuery, before generation: Int64) -> PhotoLibrary.AssetFetch? {
        outcomes.withLock { outcomes in
            guard let outcome = outcomes[query], outcome.generation == generation - 1 else { return nil }
            return outcome.fetch
        }
    }

    /// Keeps what commit `generation` left of every kept query it captured (`results`), carries
    /// the others still tracked and not affected (`unchanged`) over to it, and forgets the rest.
    func keep(_ results: [FetchQuery: ResultSnapshot], unchanged: Set<FetchQuery>, generation: Int64) {
        outcomes.withLock { outcomes in
            var kept: [FetchQuery: Outcome] = [:]
            for (query, result) in results where Self.isKept(query) {
                if case .assets(let fetch) = result, fetch.sortKeys.count == fetch.identifiers.count {
                    kept[query] = Outcome(generation: generation, fetch: fetch)
                }
            }
            for query in unchanged where Self.isKept(query) {
                if var outcome = outcomes[query], outcome.generation == generation - 1 {
                    outcome.generation = generation
                    kept[query] = outcome
                }
            }
            outcomes = kept
        }
    }

    /// Forgets every outcome (a commit that was not captured may have changed them).
    func forget() { outcomes.withLock { $0.removeAll() } }
}

extension PhotoLibrary {
    /// `previous` (what `query` returned before this commit) with the `touched` assets taken out
    /// and put back where the query now places them, each tested alone; nil when there are too
    /// many to do so.
    static func updated(
        _ previous: AssetFetch, query: FetchQuery, touched: Set<UUID>, db: Database, access: Access, now: UInt64
    ) throws -> AssetFetch? {
        guard touched.count <= CapturedOutcomes.largestUpdate else { return nil }
        var rows: [(id: UUID, version: Int64, key: Double, asset: Asset?)] = []
        rows.reserveCapacity(previous.identifiers.count)
        for index in previous.identifiers.indices where !touched.contains(previous.identifiers[index]) {
            rows.append(
                (
                    previous.identifiers[index], previous.versions[index], previous.sortKeys[index],
                    index < previous.loaded.count ? previous.loaded[index] : nil
                ))
        }
        for asset in touched.sorted(by: { $0.bytes.lexicographicallyPrecedes($1.bytes) }) {
            let found = try assets(query, db: db, access: access, now: now, only: asset)
            guard let row = found.loaded.first, let version = found.versions.first, let key = found.sortKeys.first else { continue }
            // The default order: the sort key, then the identifier's bytes (as SQLite compares blobs).
            let place = rows.partitionIndex { other in
                other.key != key ? other.key > key : !other.id.bytes.lexicographicallyPrecedes(row.id.bytes)
            }
            rows.insert((row.id, version, key, row), at: place)
        }
        var fetch = AssetFetch.empty
        fetch.identifiers = rows.map(\.id)
        fetch.versions = rows.map(\.version)
        fetch.sortKeys = rows.map(\.key)
        // The first batch whole: the objects kept or found, and those that moved up into it.
        let first = rows.prefix(FetchResult<Asset>.batchSize)
        let missing = first.filter { $0.asset == nil }.map(\.id)
        let read = Dictionary(try assets(withIDs: missing, db: db).map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
        fetch.loaded = first.compactMap { $0.asset ?? read[$0.id] }
        guard fetch.loaded.count == first.count else { return nil }
        return fetch
    }
}

extension Array {
    /// The index of the first element for which `belongsInSecondPartition` holds, in an array
    /// where it holds for a suffix (binary search).
    fileprivate func partitionIndex(where belongsInSecondPartition: (Element) -> Bool) -> Int {
        var (low, high) = (0, count)
        while low < high {
            let middle = (low + high) / 2
            if belongsInSecondPartition(self[middle]) { high = middle } else { low = middle + 1 }
        }
        return low
    }
}
