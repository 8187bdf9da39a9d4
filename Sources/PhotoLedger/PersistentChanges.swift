import Foundation
import LedgerCore
import LedgerStore

/// An opaque position in a library's change history, like PhotoKit's `PHPersistentChangeToken`.
///
/// Tokens are local to one library file on one device: store one (it is `Codable`), and later
/// ask ``PhotoLibrary/fetchPersistentChanges(since:)`` what changed after it.
public struct PersistentChangeToken: Hashable, Sendable, Codable, CustomStringConvertible {
    let library: UUID
    let sequence: Int64

    init(library: UUID, sequence: Int64) {
        self.library = library
        self.sequence = sequence
    }

    public var description: String { "PersistentChangeToken(\(sequence))" }

    /// The position in its library's log the token marks: the changes since the token are the
    /// events after it (``ObjectHistoryEntry/localSequence`` greater than it).
    public var logPosition: Int64 { sequence }
}

/// The kinds of object the persistent change history reports on (PhotoKit's `PHObjectType`).
public enum ObjectType: Int, Sendable, Hashable, CaseIterable {
    /// Assets.
    case asset = 1
    /// Albums and smart albums.
    case assetCollection = 2
    /// Folders (collection lists).
    case collectionList = 3
}

/// The objects of one type that one persistent change inserted, updated or deleted.
///
/// An identifier appears in at most one of the three sets: deleted wins over inserted, inserted
/// over updated.
public struct PersistentObjectChangeDetails: Hashable, Sendable {
    /// The type of the objects.
    public let objectType: ObjectType
    /// Objects created by the change.
    public internal(set) var insertedLocalIdentifiers: Set<String> = []
    /// Objects changed by the change: properties, content, album title and membership, recovery
    /// from Recently Deleted.
    public internal(set) var updatedLocalIdentifiers: Set<String> = []
    /// Assets moved to Recently Deleted or purged; albums deleted or merged into another album;
    /// folders deleted.
    public internal(set) var deletedLocalIdentifiers: Set<String> = []

    init(objectType: ObjectType) { self.objectType = objectType }
}

/// One committed change: a local change block, or a page of events applied from sync.
public struct PersistentChange: Hashable, Sendable {
    /// The token after this change: store it once the change has been processed.
    public let changeToken: PersistentChangeToken
    /// The change blocks whose events the change holds, in log order.
    public let changeBlocks: [UUID]
    /// The devices that made those events.
    public let devices: Set<DeviceID>
    let assets: PersistentObjectChangeDetails
    let albums: PersistentObjectChangeDetails
    let lists: PersistentObjectChangeDetails

    /// The objects of `objectType` the change inserted, updated and deleted. A folder is updated
    /// when it is renamed or moved; an album moved into or out of a folder is an updated album.
    public func changeDetails(for objectType: ObjectType) -> PersistentObjectChangeDetails {
        switch objectType {
        case .asset: assets
        case .assetCollection: albums
        case .collectionList: lists
        }
    }
}

/// The persistent changes after a token, oldest first.
public struct PersistentChangeFetchResult: Sequence, Sendable {
    /// The changes, in commit order.
    public let changes: [PersistentChange]

    /// The number of changes.
    public var count: Int { changes.count }

    public func makeIterator() -> IndexingIterator<[PersistentChange]> { changes.makeIterator() }
}

extension PhotoLibrary {
    /// A token for the library's current state. Store it, and pass it to
    /// ``fetchPersistentChanges(since:)`` later to learn what changed in between, including
    /// changes that arrived by sync.
    public var currentChangeToken: PersistentChangeToken {
        get throws {
            try readDatabase { db in
                PersistentChangeToken(library: try AuditState.read(db).libraryID, sequence: try EventLog(db).lastLocalSequence())
            }
        }
    }

    /// The changes committed after `token`, oldest first, each with its own token and the
    /// identifiers of the assets and albums it inserted, updated and deleted.
    ///
    /// - Throws: ``PhotoLibraryError`` `.persistentChangeTokenExpired` when the token is older
    ///   than the history still kept (the library was compacted since), comes from another
    ///   library, or is newer than the library (it was restored from a backup): refetch
    ///   everything you mirror and store ``currentChangeToken``.
    public func fetchPersistentChanges(since token: PersistentChangeToken) throws -> PersistentChangeFetchResult {
        try readDatabase { db in
            let state = try AuditState.read(db)
            try Self.check(token, against: state, last: try EventLog(db).lastLocalSequence())
            var builder = PersistentChangeBuilder(library: state.libraryID)
            let ends = try db.rows("SELECT end_seq FROM commits WHERE end_seq > ? ORDER BY end_seq", [token.sequence]) { $0.int64(0) }
            var nextEnd = ends.startIndex
            try db.forEachRow(
                """
                SELECT local_seq, object_id, type, change_block, device_id, CASE WHEN type = 'album.merged' THEN payload END
                FROM events WHERE local_seq > ? ORDER BY local_seq
                """, [token.sequence]
            ) { row in
                let sequence = row.int64(0)
                let block = row.withBlob(3) { UUID(bytes: $0) }
                while nextEnd < ends.endIndex && ends[nextEnd] < sequence { nextEnd += 1 }
                // Events after the last recorded commit end (appended without one) group by change block.
                if nextEnd == ends.endIndex, builder.currentBlock != nil, block != builder.currentBlock { builder.finish() }
                builder.add(
                    sequence: sequence, object: row.withBlob(1) { UUID(bytes: $0) }, type: row.text(2), block: block,
                    device: DeviceID(row.text(4)), payload: row.isNull(5) ? nil : row.blob(5))
                if nextEnd < ends.endIndex && ends[nextEnd] == sequence { builder.finish() }
            }
            builder.finish()
            return PersistentChangeFetchResult(changes: builder.changes)
        }
    }

    static func check(_ token: PersistentChangeToken, against state: AuditState, last: Int64) throws {
        let remedy = "fetch everything you mirror again and store a new currentChangeToken"
        guard token.library == state.libraryID else {
            throw PhotoLibraryError(.persistentChangeTokenExpired, "the change token belongs to another library; \(remedy)")
        }
        guard token.sequence >= state.archivedThrough else {
            throw PhotoLibraryError(
                .persistentChangeTokenExpired,
                "the change token is older than the change history still kept (the library was compacted up to position "
                    + "\(state.archivedThrough)); \(remedy)")
        }
        guard token.sequence <= last else {
            throw PhotoLibraryError(
                .persistentChangeTokenExpired,
                "the change token is newer than the library (position \(token.sequence) of \(last)): the library was restored "
                    + "from a backup or replaced; \(remedy)")
        }
    }
}

/// Groups events into persistent changes and classifies the objects each touched.
struct PersistentChangeBuilder {
    private enum Fate { case touched, inserted, alive, deleted }

    let library: UUID
    private(set) var changes: [PersistentChange] = []
    private(set) var currentBlock: UUID?
    private var lastSequence: Int64 = 0
    private var blocks: [UUID] = []
    private var devices: Set<DeviceID> = []
    private var assets: [UUID: Fate] = [:]
    private var albums: [UUID: Fate] = [:]
    private var lists: [UUID: Fate] = [:]

    init(library: UUID) { self.library = library }

    mutating func add(sequence: Int64, object: UUID?, type: String, block: UUID?, device: DeviceID, payload: [UInt8]?) {
        lastSequence = sequence
        if let block, block != currentBlock {
            blocks.append(block)
            currentBlock = block
        }
        devices.insert(device)
        guard let object, let type = EventType(rawValue: type) else { return }
        switch type {
        case .assetCreated: Self.mark(&assets, object, .inserted)
        case .assetRenditionRecorded: break  // a derived resource: the asset is unchanged
        case .assetChanged, .assetContentEdited: Self.mark(&assets, object, .touched)
        case .assetRecovered: Self.mark(&assets, object, .alive)
        case .assetDeleted, .assetPurged: Self.mark(&assets, object, .deleted)
        case .albumCreated: Self.mark(&albums, object, .inserted)
        case .albumRenamed, .albumMembersChanged, .albumKeyAssetSet, .albumMoved, .albumPositioned: Self.mark(&albums, object, .touched)
        case .collectionListCreated: Self.mark(&lists, object, .inserted)
        case .collectionListRenamed, .collectionListMoved, .collectionListPositioned: Self.mark(&lists, object, .touched)
        case .collectionListDeleted: Self.mark(&lists, object, .deleted)
        case .albumDeleted: Self.mark(&albums, object, .deleted)
        case .albumMerged:
            Self.mark(&albums, object, .deleted)
            if let payload,
                case (.albumMerged(let winner), _)? = try? ChangeEvent.decode(type: type, version: 1, payload: payload)
            {
                Self.mark(&albums, winner, .touched)
            }
        }
    }

    /// Creation and deletion stick within a change; recovery undoes a deletion; touching changes neither.
    private static func mark(_ fates: inout [UUID: Fate], _ object: UUID, _ fate: Fate) {
        switch (fates[object], fate) {
        case (nil, _): fates[object] = fate
        case (_, .touched): break
        case (.inserted?, .alive), (.deleted?, .inserted): break
        case (.deleted?, .alive): fates[object] = .touched
        default: fates[object] = fate
        }
    }

    mutating func finish() {
        defer {
            blocks = []
            devices = []
            assets = [:]
            albums = [:]
            lists = [:]
            currentBlock = nil
        }
        guard !blocks.isEmpty || !devices.isEmpty else { return }
        changes.append(
            PersistentChange(
                changeToken: PersistentChangeToken(library: library, sequence: lastSequence), changeBlocks: blocks, devices: devices,
                assets: Self.details(.asset, assets, kind: .asset), albums: Self.details(.assetCollection, albums, kind: .album),
                lists: Self.details(.collectionList, lists, kind: .collectionList)))
    }

    private static func details(_ type: ObjectType, _ fates: [UUID: Fate], kind: ObjectKind) -> PersistentObjectChangeDetails {
        var details = PersistentObjectChangeDetails(objectType: type)
        for (object, fate) in fates {
            let identifier = LocalIdentifier(uuid: object, kind: kind).description
            switch fate {
            case .inserted: details.insertedLocalIdentifiers.insert(identifier)
            case .deleted: details.deletedLocalIdentifiers.insert(identifier)
            case .touched, .alive: details.updatedLocalIdentifiers.insert(identifier)
            }
        }
        return details
    }
}
