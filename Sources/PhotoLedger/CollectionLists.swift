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
    }

    /// Live folders with their effective parents.
    private(set) var folders: [UUID: Folder] = [:]
    /// Albums placed in a live folder, with it.
    private(set) var albumParents: [UUID: UUID] = [:]

    /// Reads the tree.
    init(_ db: Database) throws {
        try db.forEachRow(
            """
            SELECT list_id, title, created_hlc, modification_hlc, source_device, parent, parent_hlc, parent_device
            FROM collection_lists WHERE created = 1 AND deleted = 0
            """
        ) { row in
            folders[UUID(bytes: row.blob(0))!] = Folder(
                title: row.text(1), createdHLC: row.int64(2), modificationHLC: row.int64(3), sourceDevice: row.text(4),
                parent: row.isNull(5) ? nil : UUID(bytes: row.blob(5)), parentStamp: WriterStamp(hlc: row.int64(6), device: row.text(7)))
        }
        for (id, folder) in folders where folder.parent.map({ folders[$0] == nil }) ?? false { folders[id]!.parent = nil }
        breakCycles()
        try db.forEachRow(
            "SELECT album_id, parent FROM albums WHERE parent IS NOT NULL AND created = 1 AND deleted = 0 AND merged_into IS NULL"
        ) { row in
            let parent = UUID(bytes: row.blob(1))!
            if folders[parent] != nil { albumParents[UUID(bytes: row.blob(0))!] = parent }
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

    /// The albums and folders in a folder (PhotoKit's `fetchCollections(in:options:)`).
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
        var items: [(PhotoCollection, Date)] =
            albums.map { (.album($0), $0.creationDate ?? .distantPast) } + folders.map { (.folder($0), $0.creationDate) }
        items.sort { lhs, rhs in
            for descriptor in options.sortDescriptors where descriptor.key == .title && lhs.0.title != rhs.0.title {
                return descriptor.ascending ? lhs.0.title < rhs.0.title : lhs.0.title > rhs.0.title
            }
            return lhs.1 != rhs.1 ? lhs.1 < rhs.1 : lhs.0.id.bytes.lexicographicallyPrecedes(rhs.0.id.bytes)
        }
        let result = items.map(\.0)
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

/// A request to change a folder (PhotoKit's `PHCollectionListChangeRequest`).
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

    /// Moves albums and folders into this folder (from wherever they are).
    ///
    /// - Throws: ``PhotoLibraryError`` `.operationInterrupted` when a folder would end up inside
    ///   itself (this folder, or a folder holding it); nothing is recorded then.
    public func addChildCollections(_ collections: [any ObjectReference]) throws {
        try changes.checkValid("a folder change request")
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
        for (change, object) in moves { try changes.record(change, object: object) }
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
