import Foundation
import LedgerCore
import LedgerStore

/// The kind of a collection list (PhotoKit's `PHCollectionListType` raw values).
public enum CollectionListType: Int, Sendable, Hashable {
    /// A folder the user made, holding albums and folders.
    case folder = 2
}

/// A folder of albums and folders (PhotoKit's `PHCollectionList`): an immutable snapshot. Fetch
/// what it holds with ``PhotoLibrary/fetchCollections(in:options:)``.
public struct CollectionList: Hashable, Sendable, ObjectReference, CustomStringConvertible {
    /// The folder's UUID, the same on every device.
    public let id: UUID
    /// The folder's local identifier (`<UUID>/L0/010`).
    public var localIdentifier: String { LocalIdentifier(uuid: id, kind: .collectionList).description }
    /// Always `.folder`.
    public let collectionListType: CollectionListType
    /// The title.
    public let title: String
    /// PhotoKit's name for ``title``.
    public var localizedTitle: String { title }
    /// When the folder was created.
    public let creationDate: Date
    /// When the folder was last changed on any device.
    public let modificationDate: Date
    /// The device that created it.
    public let sourceDevice: DeviceID
    /// The folder holding it, nil at the top level (after the tree rule, see
    /// ``PhotoLibrary/fetchTopLevelUserCollections(options:)``).
    public let parentIdentifier: String?

    /// Hashes the identifier only: snapshots of one folder hash alike; `==` compares every property.
    public func hash(into hasher: inout Hasher) { hasher.combine(id) }

    public var description: String { "CollectionList(\(localIdentifier), \"\(title)\")" }
}

/// An album or a folder, as a folder or the top level holds them (PhotoKit's `PHCollection`).
public enum PhotoCollection: Hashable, Sendable, PhotoObject, CustomStringConvertible {
    /// An album.
    case album(AssetCollection)
    /// A folder.
    case folder(CollectionList)

    /// The collection's UUID.
    public var id: UUID {
        switch self {
        case .album(let album): return album.id
        case .folder(let folder): return folder.id
        }
    }

    /// The collection's local identifier.
    public var localIdentifier: String {
        switch self {
        case .album(let album): return album.localIdentifier
        case .folder(let folder): return folder.localIdentifier
        }
    }

    /// The collection's title.
    public var title: String {
        switch self {
        case .album(let album): return album.title
        case .folder(let folder): return folder.title
        }
    }

    /// Whether it can hold assets (an album; PhotoKit's `canContainAssets`).
    public var canContainAssets: Bool { if case .album = self { true } else { false } }
    /// Whether it can hold collections (a folder; PhotoKit's `canContainCollections`).
    public var canContainCollections: Bool { !canContainAssets }

    public var description: String {
        switch self {
        case .album(let album): return album.description
        case .folder(let folder): return folder.description
        }
    }
}

extension CollectionList: PhotoObject {}

/// The tree of folders and albums, read from the folded parent registers.
///
/// The rule, the same on every device because it reads only the registers (which converge):
/// - a collection whose parent is nil, or is not a live folder (never created here, deleted),
///   is at the top level;
/// - where the parents make a cycle (a folder moved into itself: two devices each moved one
///   folder into the other, offline), the folder of the cycle whose parent was written last (the
///   greatest `(clock, device)` stamp: the latest move) is at the top level; the others keep
///   their parents.
struct CollectionTree {
    struct Folder {
        var title: String
        var createdHLC: Int64
        var modificationHLC: Int64
        var sourceDevice: String
        var parent: UUID?
        var parentStamp: WriterStamp
        /// The position key among the collections of its folder ("" without one).
        var position: String
    }

    /// Live folders with their effective parents.
    private(set) var folders: [UUID: Folder] = [:]
    /// Albums placed in a live folder, with it.
    private(set) var albumParents: [UUID: UUID] = [:]
    /// The position keys of the albums placed in a live folder (absent: none).
    private(set) var albumPositions: [UUID: String] = [:]

    /// Reads the tree.
    init(_ db: Database) throws {
        try db.forEachRow(
            """
            SELECT list_id, title, created_hlc, modification_hlc, source_device, parent, parent_hlc, parent_device, coalesce(position, '')
            FROM collection_lists WHERE created = 1 AND deleted = 0
            """
        ) { row in
            folders[UUID(bytes: row.blob(0))!] = Folder(
                title: row.text(1), createdHLC: row.int64(2), modificationHLC: row.int64(3), sourceDevice: row.text(4),
                parent: row.isNull(5) ? nil : UUID(bytes: row.blob(5)), parentStamp: WriterStamp(hlc: row.int64(6), device: row.text(7)),
                position: row.text(8))
        }
        for (id, folder) in folders where folder.parent.map({ folders[$0] == nil }) ?? false { folders[id]!.parent = nil }
        breakCycles()
        try db.forEachRow(
            """
            SELECT album_id, parent, position FROM albums WHERE parent IS NOT NULL AND created = 1 AND deleted = 0 AND merged_into IS NULL
            """
        ) { row in
            let parent = UUID(bytes: row.blob(1))!, album = UUID(bytes: row.blob(0))!
            guard folders[parent] != nil else { return }
            albumParents[album] = parent
            if !row.isNull(2) { albumPositions[album] = row.text(2) }
        }
    }

    /// Detaches, in each cycle of parents, the folder moved last.
    private mutating func breakCycles() {
        var state: [UUID: Int] = [:]  // absent: not visited, 1: on the current walk, 2: done
        for start in folders.keys.sorted(by: { $0.bytes.lexicographicallyPrecedes($1.bytes) }) where state[start] == nil {
            var path: [UUID] = []
            var current: UUID? = start
            while let node = current, state[node] == nil {
                state[node] = 1
                path.append(node)
                current = folders[node]?.parent
            }
            if let node = current, state[node] == 1, let first = path.firstIndex(of: node) {
                let cycle = path[first...]
                let latest = cycle.max { lhs, rhs in
                    let (a, b) = (folders[lhs]!.parentStamp, folders[rhs]!.parentStamp)
                    return a != b ? a < b : lhs.bytes.lexicographicallyPrecedes(rhs.bytes)
                }!
                folders[latest]!.parent = nil
            }
            for node in path { state[node] = 2 }
        }
    }

    /// Whether `folder` is `ancestor` or lies inside it.
    func isInside(_ folder: UUID, _ ancestor: UUID) -> Bool {
        var current: UUID? = folder
        var steps = 0
        while let node = current, steps <= folders.count {
            if node == ancestor { return true }
            current = folders[node]?.parent
            steps += 1
        }
        return false
    }

    /// The snapshot of a live folder.
    func list(_ id: UUID) -> CollectionList? {
        guard let folder = folders[id] else { return nil }
        return CollectionList(
            id: id, collectionListType: .folder, title: folder.title,
            creationDate: HLCTimestamp(rawValue: UInt64(bitPattern: folder.createdHLC)).dateValue,
            modificationDate: HLCTimestamp(rawValue: UInt64(bitPattern: folder.modificationHLC)).dateValue,
            sourceDevice: DeviceID(folder.sourceDevice),
            parentIdentifier: folder.parent.map { LocalIdentifier(uuid: $0, kind: .collectionList).description })
    }
}

extension PhotoLibrary {
    // MARK: Fetching folders

    /// The albums and folders at the top level (PhotoKit's `fetchTopLevelUserCollections(with:)`),
    /// in creation order unless sorted by title: those in no folder, in a folder that was deleted,
    /// or detached by the tree rule (<doc:ConflictRules>: where concurrent moves made a folder
    /// hold itself, the folder of the cycle moved last is at the top level on every device).
    public func fetchTopLevelUserCollections(options: FetchOptions = FetchOptions()) throws -> FetchResult<PhotoCollection> {
        try fetch(.collectionsInList(nil, options))
    }

    /// The albums and folders in a folder (PhotoKit's `fetchCollections(in:options:)`), in the
    /// folder's order (see ``CollectionListChangeRequest``) unless sorted by title.
    public func fetchCollections(in list: CollectionList, options: FetchOptions = FetchOptions()) throws -> FetchResult<PhotoCollection> {
        try fetch(.collectionsInList(list.id, options))
    }

    /// Every folder, in creation order unless sorted by title.
    public func fetchCollectionLists(options: FetchOptions = FetchOptions()) throws -> FetchResult<CollectionList> {
        try fetch(.collectionLists(nil, options))
    }

    /// The folders with these identifiers, in the order of the identifiers.
    public func fetchCollectionLists(withLocalIdentifiers identifiers: [String], options: FetchOptions = FetchOptions()) throws
        -> FetchResult<CollectionList>
    {
        let ids = identifiers.compactMap { LocalIdentifier($0) }.filter { $0.kind == .collectionList }.map(\.uuid)
        return try fetch(.collectionLists(ids, options))
    }

    /// The folder holding an album or a folder (PhotoKit's `fetchCollectionListsContaining`):
    /// one folder, or none at the top level.
    public func fetchCollectionListsContaining(_ collection: any ObjectReference, options: FetchOptions = FetchOptions()) throws
        -> FetchResult<CollectionList>
    {
        guard let identifier = LocalIdentifier(collection.localIdentifier), identifier.kind != .asset else {
            throw PhotoLibraryError(
                .identifierNotFound, "'\(collection.localIdentifier)' is not an album or folder identifier (<UUID>/L0/040 or <UUID>/L0/010)"
            )
        }
        return try fetch(.collectionListsContaining(identifier.uuid, options))
    }

    func fetch(_ query: FetchQuery) throws -> FetchResult<PhotoCollection> {
        let registration = try register(query)
        let (found, generation) = try read { db, access in
            (try Self.photoCollections(query, db: db, access: access, now: options.clock()), try Self.changeGeneration(in: db))
        }
        return FetchResult(found, query: query, generation: generation, registration: registration)
    }

    func fetch(_ query: FetchQuery) throws -> FetchResult<CollectionList> {
        let registration = try register(query)
        let (found, generation) = try read { db, _ in (try Self.collectionLists(query, db: db), try Self.changeGeneration(in: db)) }
        return FetchResult(found, query: query, generation: generation, registration: registration)
    }

    static func photoCollections(_ query: FetchQuery, db: Database, access: Access, now: UInt64) throws -> [PhotoCollection] {
        guard case .collectionsInList(let parent, let options) = query else { return [] }
        let tree = try CollectionTree(db)
        if let parent, tree.folders[parent] == nil { return [] }
        var albumOptions = FetchOptions()
        albumOptions.predicate = options.predicate
        let albums = try collections(.collections(.album, .albumRegular, albumOptions), db: db, access: access, now: now)
            .filter { tree.albumParents[$0.id] == parent }
        let folders = tree.folders.compactMap { id, folder in folder.parent == parent ? tree.list(id) : nil }
            .filter { folder in options.predicate.map { matches(folder.title, $0) } ?? true }
        // A folder's own order: position keys (none sorts first), then creation, then identifier,
        // as album members are ordered by key then identifier. The top level is in creation order.
        func key(_ id: UUID) -> String { parent == nil ? "" : tree.folders[id]?.position ?? tree.albumPositions[id] ?? "" }
        var items: [(item: PhotoCollection, key: String, date: Date)] =
            albums.map { (.album($0), key($0.id), $0.creationDate ?? .distantPast) }
            + folders.map { (.folder($0), key($0.id), $0.creationDate) }
        items.sort { lhs, rhs in
            for descriptor in options.sortDescriptors where descriptor.key == .title && lhs.item.title != rhs.item.title {
                return descriptor.ascending ? lhs.item.title < rhs.item.title : lhs.item.title > rhs.item.title
            }
            if lhs.key != rhs.key { return lhs.key.utf8.lexicographicallyPrecedes(rhs.key.utf8) }
            return lhs.date != rhs.date ? lhs.date < rhs.date : lhs.item.id.bytes.lexicographicallyPrecedes(rhs.item.id.bytes)
        }
        let result = items.map(\.item)
        return options.fetchLimit > 0 ? Array(result.prefix(options.fetchLimit)) : result
    }

    static func collectionLists(_ query: FetchQuery, db: Database) throws -> [CollectionList] {
        let tree = try CollectionTree(db)
        let options: FetchOptions
        var result: [CollectionList]
        switch query {
        case .collectionLists(let ids?, let o):
            options = o
            var seen = Set<UUID>()
            result = ids.compactMap { seen.insert($0).inserted ? tree.list($0) : nil }
        case .collectionLists(nil, let o):
            options = o
            result = tree.folders.keys.compactMap { tree.list($0) }.sorted { lhs, rhs in
                lhs.creationDate != rhs.creationDate
                    ? lhs.creationDate < rhs.creationDate : lhs.id.bytes.lexicographicallyPrecedes(rhs.id.bytes)
            }
        case .collectionListsContaining(let child, let o):
            options = o
            let album = try AlbumMembers.resolve(child, in: db) ?? child
            let parent = tree.folders[child].map { $0.parent } ?? tree.albumParents[album]
            result = parent.flatMap { tree.list($0) }.map { [$0] } ?? []
        default:
            return []
        }
        if let predicate = options.predicate { result = result.filter { matches($0.title, predicate) } }
        if let title = options.sortDescriptors.first(where: { $0.key == .title }) {
            result.sort { title.ascending ? $0.title < $1.title : $0.title > $1.title }
        }
        return options.fetchLimit > 0 ? Array(result.prefix(options.fetchLimit)) : result
    }
}

// MARK: Changing folders

extension LibraryChanges {
    /// Creates a folder at the top level (PhotoKit's
    /// `PHCollectionListChangeRequest.creationRequestForCollectionList(withTitle:)`).
    public func createCollectionList(title: String) throws -> CollectionListChangeRequest {
        try requireReadWrite("create folders")
        let id = library.identifiers.next()
        try record(.listCreated(title: title), object: id)
        return CollectionListChangeRequest(changes: self, id: id)
    }

    /// A request to change a folder: its title and what it holds.
    public func collectionListChangeRequest(for list: any ObjectReference) throws -> CollectionListChangeRequest {
        try requireReadWrite("change folders")
        return CollectionListChangeRequest(changes: self, id: try existingList(list))
    }

    /// Deletes folders. What they hold moves to the top level; no album or asset is deleted.
    public func deleteCollectionLists(_ lists: [any ObjectReference]) throws {
        try requireReadWrite("delete folders")
        for id in try lists.map({ try existingList($0) }) { try record(.listDeleted, object: id) }
    }

    /// The UUID of a live folder.
    func existingList(_ reference: any ObjectReference) throws -> UUID {
        let id = try PhotoLibrary.parse(reference, kind: .collectionList)
        guard try CollectionTree(database).folders[id] != nil else {
            throw PhotoLibraryError.notFound(reference.localIdentifier, kind: "folder")
        }
        return id
    }
}

/// A request to change a folder (PhotoKit's `PHCollectionListChangeRequest`): its title, and the
/// albums and folders it holds, in its own order.
///
/// Index-based operations refer to the folder's collections as
/// ``PhotoLibrary/fetchCollections(in:options:)`` returns them. Like an album's assets, each is
/// recorded with resolved targets: the collection's parent, and a fractional position key in a
/// last-writer-wins register of its own (see <doc:ConflictRules>), never an index. An invalid
/// operation throws and records nothing.
public final class CollectionListChangeRequest {
    unowned let changes: LibraryChanges
    let id: UUID

    init(changes: LibraryChanges, id: UUID) {
        self.changes = changes
        self.id = id
    }

    /// The placeholder of the folder: for a created folder, its final identifier.
    public var placeholderForCreatedCollectionList: ObjectPlaceholder {
        ObjectPlaceholder(LocalIdentifier(uuid: id, kind: .collectionList))
    }

    /// The folder's identifier.
    public var localIdentifier: String { LocalIdentifier(uuid: id, kind: .collectionList).description }

    /// Renames the folder.
    public func setTitle(_ title: String) throws {
        try changes.checkValid("a folder change request")
        try changes.record(.listRenamed(title: title), object: id)
    }

    /// Moves albums and folders into this folder (from wherever they are), after the collections
    /// it holds; those it holds already keep their place.
    ///
    /// - Throws: ``PhotoLibraryError`` `.operationInterrupted` when a folder would end up inside
    ///   itself (this folder, or a folder holding it); nothing is recorded then.
    public func addChildCollections(_ collections: [any ObjectReference]) throws {
        try changes.checkValid("a folder change request")
        let moves = try resolve(collections)
        var order = try children()
        let held = Set(order.map(\.id))
        var seen = Set<UUID>()
        for (change, object) in moves where !held.contains(object) && seen.insert(object).inserted {
            order.append(Child(id: object, isFolder: change.type == .collectionListMoved, key: nil))
        }
        for (change, object) in moves { try changes.record(change, object: object) }
        try assignKeys(order)
    }

    /// Inserts albums and folders (moved from wherever they are) so that, afterwards,
    /// `collections[k]` is at the k-th smallest of `indexes` (PhotoKit's
    /// `insertChildCollections(_:at:)`). The number of indexes must equal the number of collections.
    ///
    /// - Throws: ``PhotoLibraryError`` `.operationInterrupted` for a count or an index that does
    ///   not fit, a collection given twice or already in this folder (move it with
    ///   ``moveChildCollections(at:to:)``), or a folder that would end up inside itself.
    public func insertChildCollections(_ collections: [any ObjectReference], at indexes: IndexSet) throws {
        try changes.checkValid("a folder change request")
        guard indexes.count == collections.count else {
            throw PhotoLibraryError(
                .operationInterrupted,
                "insertChildCollections got \(collections.count) collections but \(indexes.count) indexes; give one index per collection")
        }
        let moves = try resolve(collections)
        var order = try children()
        var seen = Set<UUID>()
        for ((change, object), (reference, index)) in zip(moves, zip(collections, indexes)) {
            guard seen.insert(object).inserted, !order.contains(where: { $0.id == object }) else {
                throw PhotoLibraryError(
                    .operationInterrupted,
                    "\(reference.localIdentifier) is already in the folder or given twice; use moveChildCollections(at:to:) to change its place"
                )
            }
            guard index <= order.count else {
                throw PhotoLibraryError(
                    .operationInterrupted,
                    "index \(index) is out of range: the folder holds \(order.count) collections at that point; insert at 0…\(order.count)")
            }
            order.insert(Child(id: object, isFolder: change.type == .collectionListMoved, key: nil), at: index)
        }
        for (change, object) in moves { try changes.record(change, object: object) }
        try assignKeys(order)
    }

    /// Moves the collections at `indexes` so that they start at `toIndex` in the folder as it is
    /// after removing them (PhotoKit's `moveChildCollections(at:to:)`: remove first, then insert).
    public func moveChildCollections(at indexes: IndexSet, to toIndex: Int) throws {
        try changes.checkValid("a folder change request")
        var order = try children()
        try check(indexes, count: order.count)
        var moving = indexes.map { order[$0] }
        for index in indexes.reversed() { order.remove(at: index) }
        guard toIndex >= 0, toIndex <= order.count else {
            throw PhotoLibraryError(
                .operationInterrupted,
                "moveChildCollections destination \(toIndex) is out of range: after removing the moved collections the folder holds "
                    + "\(order.count); use an index from 0 to \(order.count)")
        }
        for index in moving.indices { moving[index].key = nil }
        order.insert(contentsOf: moving, at: toIndex)
        try assignKeys(order)
    }

    /// Moves the collections at `indexes` to the top level (PhotoKit's
    /// `removeChildCollections(at:)`).
    public func removeChildCollections(at indexes: IndexSet) throws {
        try changes.checkValid("a folder change request")
        let order = try children()
        try check(indexes, count: order.count)
        for index in indexes {
            let child = order[index]
            try changes.record(child.isFolder ? .listMoved(parent: nil) : .albumMoved(parent: nil), object: child.id)
        }
    }

    /// An album or folder this folder holds, with its position key.
    private struct Child {
        var id: UUID
        var isFolder: Bool
        var key: String?
    }

    /// What this folder holds, in its order (as a fetch of it returns them).
    private func children() throws -> [Child] {
        let tree = try CollectionTree(changes.database)
        let items = try PhotoLibrary.photoCollections(
            .collectionsInList(id, FetchOptions()), db: changes.database, access: changes.access, now: changes.library.options.clock())
        return items.map { item in
            let key = tree.folders[item.id].map(\.position) ?? tree.albumPositions[item.id]
            return Child(id: item.id, isFolder: !item.canContainAssets, key: key?.isEmpty == false ? key : nil)
        }
    }

    /// Gives each run of collections without a key (placed by this request, or never placed)
    /// keys between its neighbours', and records them.
    private func assignKeys(_ order: [Child]) throws {
        var order = order
        var start = 0
        while start < order.count {
            guard order[start].key == nil else {
                start += 1
                continue
            }
            var end = start
            while end < order.count, order[end].key == nil { end += 1 }
            let (lower, upper) = (start > 0 ? order[start - 1].key : nil, end < order.count ? order[end].key : nil)
            let keys = changes.library.randomness.use { FractionalIndex.keys(count: end - start, between: lower, and: upper, using: &$0) }
            for (offset, key) in keys.enumerated() {
                let child = order[start + offset]
                order[start + offset].key = key
                try changes.record(child.isFolder ? .listPositioned(position: key) : .albumPositioned(position: key), object: child.id)
            }
            start = end
        }
    }

    private func check(_ indexes: IndexSet, count: Int) throws {
        if let bad = indexes.first(where: { $0 < 0 || $0 >= count }) {
            throw PhotoLibraryError(
                .operationInterrupted,
                "index \(bad) is out of range: the folder holds \(count) collections (indexes 0 to \(max(0, count - 1)))")
        }
    }

    /// The moves into this folder that `collections` name, checked (nothing recorded).
    private func resolve(_ collections: [any ObjectReference]) throws -> [(ChangeEvent, UUID)] {
        let tree = try CollectionTree(changes.database)
        var moves: [(ChangeEvent, UUID)] = []
        for reference in collections {
            guard let identifier = LocalIdentifier(reference.localIdentifier), identifier.kind != .asset else {
                throw PhotoLibraryError(
                    .identifierNotFound,
                    "'\(reference.localIdentifier)' is not an album or folder identifier (<UUID>/L0/040 or <UUID>/L0/010)")
            }
            if identifier.kind == .album {
                moves.append((.albumMoved(parent: id), try changes.existingAlbum(reference)))
            } else {
                let child = try changes.existingList(reference)
                if tree.isInside(id, child) {
                    throw PhotoLibraryError(
                        .operationInterrupted,
                        "moving folder \(reference.localIdentifier) into \(localIdentifier) would put it inside itself; move it elsewhere")
                }
                moves.append((.listMoved(parent: id), child))
            }
        }
        return moves
    }

    /// Moves albums and folders this folder holds to the top level (others are ignored).
    public func removeChildCollections(_ collections: [any ObjectReference]) throws {
        try changes.checkValid("a folder change request")
        let tree = try CollectionTree(changes.database)
        for reference in collections {
            guard let identifier = LocalIdentifier(reference.localIdentifier), identifier.kind != .asset else { continue }
            if identifier.kind == .album, let album = try? changes.existingAlbum(reference), tree.albumParents[album] == id {
                try changes.record(.albumMoved(parent: nil), object: album)
            } else if identifier.kind == .collectionList, tree.folders[identifier.uuid]?.parent == id {
                try changes.record(.listMoved(parent: nil), object: identifier.uuid)
            }
        }
    }
}
