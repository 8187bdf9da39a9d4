import Foundation
import LedgerCore

/// A request to change an album: its title and its ordered assets. Index-based operations follow
/// PhotoKit's rules and refer to the album's assets as a default fetch returns them (visible
/// members in album order): index 0 is the first asset, the album's cover.
///
/// Every operation is recorded with resolved targets — asset identifiers and fractional position
/// keys — never indexes. An invalid operation throws and records nothing.
///
/// The album's members are read when an operation first needs all of them (``assetCount``,
/// removals and moves by index, replacements), with the changes made before it in the change
/// block; from then on the request keeps them as its own operations change them. Appending
/// assets, and inserting a run of assets at one index, read only the rows they need: a change
/// block that adds a photo to a large album does not read the whole album.
public final class AlbumChangeRequest {
    unowned let changes: LibraryChanges
    let id: UUID
    /// The members the index operations see, in album order, once read (see ``members()``).
    private var loaded: [(asset: UUID, position: String)]?

    init(changes: LibraryChanges, id: UUID, isNew: Bool) throws {
        self.changes = changes
        self.id = id
        self.loaded = isNew ? [] : nil
    }

    /// The visible members in album order: read from the views the first time, then kept.
    private func members() throws -> [(asset: UUID, position: String)] {
        if let loaded { return loaded }
        let members = try AlbumMembers.ordered(id, in: changes.database).map { (asset: $0.asset, position: $0.position) }
        loaded = members
        return members
    }

    /// Whether the members are not read yet and the album has no others merged into it (`group`,
    /// its merge group, read when not given): the operations that need a few rows read them
    /// alone then.
    private func readsRowsAlone(group: [UUID]? = nil) throws -> Bool {
        try loaded == nil && (group ?? AlbumMembers.group(of: id, in: changes.database)).count == 1
    }

    /// The placeholder of the album: for a created album, its final identifier.
    public var placeholderForCreatedAssetCollection: ObjectPlaceholder { ObjectPlaceholder(LocalIdentifier(uuid: id, kind: .album)) }

    /// The album's identifier.
    public var localIdentifier: String { LocalIdentifier(uuid: id, kind: .album).description }

    /// The number of assets the index operations see.
    ///
    /// - Throws: ``PhotoLibraryError`` when the album's members cannot be read.
    public var assetCount: Int {
        get throws { try members().count }
    }

    /// Renames the album.
    public func setTitle(_ title: String) throws {
        try changes.checkValid("an album change request")
        try changes.record(.albumRenamed(title: title), object: id)
    }

    /// Chooses the album's key asset, the cover its lists show (nil: none chosen, the first asset
    /// is the cover). The choice is a last-writer-wins field like the title; while the asset is
    /// not a member (removed on another device, deleted or hidden) the first asset is shown, and
    /// the choice shows again when the asset returns.
    ///
    /// - Throws: ``PhotoLibraryError`` `.operationInterrupted` when the asset is not in the album.
    public func setKeyAsset(_ asset: (any ObjectReference)?) throws {
        try changes.checkValid("an album change request")
        var id: UUID?
        if let asset {
            let member = try changes.existingAsset(asset)
            guard try members().contains(where: { $0.asset == member }) else {
                throw PhotoLibraryError(
                    .operationInterrupted, "asset \(asset.localIdentifier) is not in the album; add it before making it the key asset")
            }
            id = member
        }
        try changes.record(.albumKeyAssetSet(asset: id), object: self.id)
    }

    /// Appends assets at the end of the album; assets already in it are left where they are.
    public func addAssets(_ assets: [any ObjectReference]) throws {
        try changes.checkValid("an album change request")
        // Unread members are looked up one asset at a time (a member, hidden or not, is in the
        // album's rows), and only the last position is read.
        let group = try AlbumMembers.group(of: id, in: changes.database)
        let alone = try readsRowsAlone(group: group)
        var seen = alone ? [] : Set(try members().map(\.asset))
        var added: [UUID] = []
        for reference in assets {
            let asset = try changes.existingAsset(reference)
            if seen.insert(asset).inserted, try !isHiddenMember(asset, group: group) { added.append(asset) }
        }
        guard !added.isEmpty else { return }
        let last = alone ? try AlbumMembers.lastPosition(of: id, in: changes.database) : try members().last?.position
        let keys = changes.library.randomness.use {
            FractionalIndex.keys(count: added.count, between: last, and: nil, using: &$0)
        }
        try recordAdditions(.add, Array(zip(added, keys)))
        loaded? += zip(added, keys).map { (asset: $0.0, position: $0.1) }
    }

    /// Inserts assets so that, afterwards, `assets[k]` is at the k-th smallest of `indexes`.
    /// The number of indexes must equal the number of assets.
    public func insertAssets(_ assets: [any ObjectReference], at indexes: IndexSet) throws {
        try changes.checkValid("an album change request")
        guard indexes.count == assets.count else {
            throw PhotoLibraryError(
                .operationInterrupted, "insertAssets got \(assets.count) assets but \(indexes.count) indexes; give one index per asset")
        }
        if let first = indexes.first, indexes.last! - first + 1 == indexes.count, try readsRowsAlone() {
            // One run of assets at one index: its neighbours are the members at `first - 1` and
            // `first`. An index past the end falls through to the reading of every member, which
            // says how many there are.
            let neighbours = try AlbumMembers.positions(
                of: id, from: max(first - 1, 0), limit: first == 0 ? 1 : 2, in: changes.database)
            if first == 0 || !neighbours.isEmpty {
                let ids = try newMembers(assets, readingRows: true)
                let lower = first == 0 ? nil : neighbours[0]
                let upper = first == 0 ? neighbours.first : neighbours.dropFirst().first
                let keys = changes.library.randomness.use { FractionalIndex.keys(count: ids.count, between: lower, and: upper, using: &$0) }
                try recordAdditions(.insert, Array(zip(ids, keys)))
                return
            }
        }
        let ids = try newMembers(assets)
        try insert(ids, at: indexes, operation: .insert, removals: [])
    }

    /// Removes assets from the album (assets not in it are ignored). The assets stay in the library.
    public func removeAssets(_ assets: [any ObjectReference]) throws {
        try changes.checkValid("an album change request")
        let ids = try Set(assets.map { try changes.existingAsset($0, allowDeleted: true) })
        let group = try AlbumMembers.group(of: id, in: changes.database)
        let members = try members()
        let removed =
            members.filter { ids.contains($0.asset) }.map(\.asset)
            + (try ids.filter { id in !members.contains { $0.asset == id } }.filter { try isHiddenMember($0, group: group) })
        try recordRemovals(.remove, removed)
        loaded = members.filter { !ids.contains($0.asset) }
    }

    /// Removes the assets at `indexes`.
    public func removeAssets(at indexes: IndexSet) throws {
        try changes.checkValid("an album change request")
        let members = try check(indexes)
        try recordRemovals(.remove, indexes.map { members[$0].asset })
        remove(at: indexes)
    }

    /// Replaces the assets at `indexes` with `assets` (one asset per index).
    public func replaceAssets(at indexes: IndexSet, withAssets assets: [any ObjectReference]) throws {
        try changes.checkValid("an album change request")
        let members = try check(indexes)
        guard indexes.count == assets.count else {
            throw PhotoLibraryError(
                .operationInterrupted, "replaceAssets got \(assets.count) assets but \(indexes.count) indexes; give one index per asset")
        }
        let removed = indexes.map { members[$0].asset }
        let ids = try newMembers(assets, ignoring: Set(removed))
        remove(at: indexes)
        do {
            try insert(ids, at: indexes, operation: .replace, removals: removed)
        } catch {
            loaded = members
            throw error
        }
    }

    /// Moves the assets at `indexes` so that they start at `toIndex` in the album as it is after
    /// removing them (PhotoKit's rule: remove first, then insert).
    public func moveAssets(at indexes: IndexSet, to toIndex: Int) throws {
        try changes.checkValid("an album change request")
        let members = try check(indexes)
        let moving = indexes.map { members[$0].asset }
        var remaining = members
        for index in indexes.reversed() { remaining.remove(at: index) }
        guard toIndex >= 0, toIndex <= remaining.count else {
            throw PhotoLibraryError(
                .operationInterrupted,
                "moveAssets destination \(toIndex) is out of range: after removing the moved assets the album has \(remaining.count); "
                    + "use an index from 0 to \(remaining.count)")
        }
        let keys = changes.library.randomness.use {
            FractionalIndex.keys(
                count: moving.count, between: toIndex > 0 ? remaining[toIndex - 1].position : nil,
                and: toIndex < remaining.count ? remaining[toIndex].position : nil, using: &$0)
        }
        let entries = zip(moving, keys).map { ChangeEvent.MemberChange(asset: $0.0, causalLength: 0, position: $0.1) }
        try changes.record(.albumMembersChanged(operation: .move, entries: entries), object: id)
        remaining.insert(contentsOf: zip(moving, keys).map { (asset: $0.0, position: $0.1) }, at: toIndex)
        loaded = remaining
    }

    // MARK: Helpers

    /// The members, once `indexes` are checked against them.
    private func check(_ indexes: IndexSet) throws -> [(asset: UUID, position: String)] {
        let members = try members()
        if let bad = indexes.first(where: { $0 < 0 || $0 >= members.count }) {
            throw PhotoLibraryError(
                .operationInterrupted,
                "index \(bad) is out of range: the album has \(members.count) assets (indexes 0 to \(max(0, members.count - 1)))")
        }
        return members
    }

    private func remove(at indexes: IndexSet) {
        for index in indexes.reversed() { loaded?.remove(at: index) }
    }

    /// Resolves assets that must not already be visible members (with `readingRows`, looked up
    /// in the album's rows one by one: the members are not read).
    private func newMembers(_ assets: [any ObjectReference], ignoring: Set<UUID> = [], readingRows: Bool = false) throws -> [UUID] {
        var seen = Set<UUID>()
        let members = readingRows ? [] : try members()
        return try assets.map { reference in
            let asset = try changes.existingAsset(reference)
            guard seen.insert(asset).inserted else {
                throw PhotoLibraryError(.operationInterrupted, "asset \(reference.localIdentifier) appears twice; insert each asset once")
            }
            let member =
                readingRows
                ? try AlbumMembers.isVisibleMember(asset, of: id, in: changes.database) : members.contains(where: { $0.asset == asset })
            if !ignoring.contains(asset), member {
                throw PhotoLibraryError(
                    .operationInterrupted,
                    "asset \(reference.localIdentifier) is already in the album; use moveAssets(at:to:) to change its place")
            }
            return asset
        }
    }

    private func insert(_ assets: [UUID], at indexes: IndexSet, operation: ChangeEvent.MembershipOperation, removals: [UUID]) throws {
        var list: [(asset: UUID, position: String?)] = try members().map { ($0.asset, $0.position) }
        for (asset, index) in zip(assets, indexes) {
            guard index <= list.count else {
                throw PhotoLibraryError(
                    .operationInterrupted,
                    "index \(index) is out of range: the album has \(list.count) assets at that point; insert at 0…\(list.count)")
            }
            list.insert((asset, nil), at: index)
        }
        // Give each run of new assets keys between its neighbours, from a random sub-interval.
        var start = 0
        while start < list.count {
            guard list[start].position == nil else {
                start += 1
                continue
            }
            var end = start
            while end < list.count, list[end].position == nil { end += 1 }
            let lower = start > 0 ? list[start - 1].position : nil
            let upper = end < list.count ? list[end].position : nil
            let keys = changes.library.randomness.use { FractionalIndex.keys(count: end - start, between: lower, and: upper, using: &$0) }
            for (offset, key) in keys.enumerated() { list[start + offset].position = key }
            start = end
        }
        let inserted = Set(assets)
        try recordRemovals(operation, removals)
        try recordAdditions(operation, list.filter { inserted.contains($0.asset) }.map { ($0.asset, $0.position!) })
        loaded = list.map { (asset: $0.asset, position: $0.position!) }
    }

    private func recordAdditions(_ operation: ChangeEvent.MembershipOperation, _ additions: [(UUID, String)]) throws {
        guard !additions.isEmpty else { return }
        let entries = try additions.map { asset, key in
            let cl = try AlbumMembers.causalLength(album: id, asset: asset, db: changes.database)
            return ChangeEvent.MemberChange(asset: asset, causalLength: CausalLength.isPresent(cl) ? cl : cl + 1, position: key)
        }
        try changes.record(.albumMembersChanged(operation: operation, entries: entries), object: id)
    }

    /// Records removals on every album of the merge group where the asset is a member.
    private func recordRemovals(_ operation: ChangeEvent.MembershipOperation, _ assets: [UUID]) throws {
        guard !assets.isEmpty else { return }
        let group = try AlbumMembers.group(of: id, in: changes.database)
        var byAlbum: [UUID: [ChangeEvent.MemberChange]] = [:]
        for asset in assets {
            for row in try AlbumMembers.memberRows(of: asset, in: group, db: changes.database) {
                byAlbum[row.album, default: []].append(
                    ChangeEvent.MemberChange(asset: asset, causalLength: row.causalLength + 1, position: nil))
            }
        }
        for album in group where byAlbum[album] != nil {
            try changes.record(.albumMembersChanged(operation: operation, entries: byAlbum[album]!), object: album)
        }
    }

    /// Whether `asset` is a member that the index operations do not see (hidden, for example).
    /// `group` is the album's merge group (``AlbumMembers/group(of:in:)``).
    private func isHiddenMember(_ asset: UUID, group: [UUID]) throws -> Bool {
        return try !AlbumMembers.memberRows(of: asset, in: group, db: changes.database).isEmpty
    }
}
