import Foundation
import LedgerCore
import LedgerCrypto
import LedgerStore

/// The changes of one change block: creates change requests, and records every change as an
/// event of the block. Valid only inside the `performChanges` block it was passed to.
///
/// Each change is folded in memory at once and written to the projections before anything in
/// the block reads them (so later requests in the block see it) or when the block returns, when
/// it is also appended to the log; the SQLite transaction makes the whole block atomic.
public final class LibraryChanges {
    unowned let library: PhotoLibrary
    /// The block's connection; read it through ``database``.
    private let connection: Database
    /// Changes recorded and folded, not yet written to the projections. Folding is commutative,
    /// so writing them together gives the rows writing each at once gives; an import of
    /// thousands of assets then writes a hundred rows a statement.
    private var unwritten = ProjectionBatch()
    let access: Access
    let changeBlock: UUID
    /// The archive of a compacted library (a purge refolds the archived events of its assets).
    let archive: Database?
    private var nextSequence: Int64
    private var events: [Event] = []
    private var isValid = true
    var touched = TouchedObjects()
    /// The content stamps of the assets the block edits, as they were before it.
    var contentBefore: [UUID: WriterStamp?] = [:]
    var afterCommit: [() -> Void] = []
    /// Whether ``commit()`` appended events (a block that changed nothing appends none).
    var committedEvents = false
    private var albumRequests: [UUID: AlbumChangeRequest] = [:]
    /// Asset keys made in this block (an encrypted library), cached once the block commits.
    var newAssetKeys: [UUID: (id: UInt32, key: SecretKey)] = [:]
    /// The assets among ``newAssetKeys`` whose keys go to the server in this block's packs, in
    /// the order they were made.
    var packedAssets: [UUID] = []
    /// The numbers (`e2e_packs`) of this block's packs, by index.
    var packNumbers: [Int64] = []

    init(library: PhotoLibrary, database: Database, access: Access, archive: Database? = nil) throws {
        self.library = library
        self.connection = database
        self.access = access
        self.archive = archive
        self.changeBlock = library.identifiers.next()
        self.nextSequence = try PhotoLibrary.lastDeviceSequence(for: library.device, in: database) + 1  // counts archived events
    }

    func invalidate() { isValid = false }

    /// The block's connection, every change recorded so far written to its projections: what
    /// every read in the block goes through.
    var database: Database {
        get throws {
            try writeFolded()
            return connection
        }
    }

    /// Writes the changes folded since the last write to the projections.
    private func writeFolded() throws {
        guard !unwritten.isEmpty else { return }
        let batch = unwritten
        unwritten = ProjectionBatch()
        try batch.write(to: connection)
        touched.formUnion(batch.touched)
    }

    func checkValid(_ what: String) throws {
        guard isValid else { throw PhotoLibraryError.outsideChangeBlock(what) }
    }

    func requireReadWrite(_ what: String) throws {
        try checkValid(what)
        if access == .addOnly {
            throw PhotoLibraryError(.accessUserDenied, "add-only access can create assets but cannot \(what); request readWrite access")
        }
    }

    /// Records a change of this block: folds it now, appends it to the log at commit. The event
    /// names the shared library (once this device knows it) and, for every register it writes,
    /// the write in effect here that it overwrites (its causal claims).
    func record(_ change: ChangeEvent, object: UUID) throws {
        let claims = try causalClaims(of: change, object: object)
        let event = Event(
            id: library.identifiers.next(), library: library.binding.withLock { $0.library }, device: library.device,
            deviceSequence: nextSequence, timestamp: library.clock.now(), changeBlock: changeBlock, object: object,
            type: change.type.rawValue,
            schemaVersion: change.schemaVersion, payload: change.encoded(claims: claims))
        nextSequence += 1
        if case .assetContentEdited = change, contentBefore[object] == nil {
            contentBefore[object] = try PhotoLibrary.contentStamps([object], in: database)[object] ?? nil
        }
        // Its identifiers are new (made here): it cannot conflict with another creation.
        unwritten.add(
            .fold(change, nil), event: event.id, object: object,
            stamp: WriterStamp(hlc: Int64(bitPattern: event.timestamp.rawValue), device: event.device.rawValue))
        events.append(try sealedIfEncrypted(event, change: change))
    }

    /// The stamps of the writes in effect for the registers `change` writes.
    private func causalClaims(of change: ChangeEvent, object: UUID) throws -> CausalClaims {
        var claims = CausalClaims()
        let lists = change.type.objectKind == .collectionList
        for field in change.registers {
            let (sql, key): (String, [any SQLBindable]) =
                switch field {
                case .title where lists: ("SELECT title_hlc, title_device FROM collection_lists WHERE list_id = ?", [object.bytes])
                case .parent where lists: ("SELECT parent_hlc, parent_device FROM collection_lists WHERE list_id = ?", [object.bytes])
                case .parent: ("SELECT parent_hlc, parent_device FROM albums WHERE album_id = ?", [object.bytes])
                case .collectionPosition where lists:
                    ("SELECT position_hlc, position_device FROM collection_lists WHERE list_id = ?", [object.bytes])
                case .collectionPosition: ("SELECT position_hlc, position_device FROM albums WHERE album_id = ?", [object.bytes])
                case .creationDate: ("SELECT creation_date_hlc, creation_date_device FROM assets WHERE asset_id = ?", [object.bytes])
                case .location: ("SELECT location_hlc, location_device FROM assets WHERE asset_id = ?", [object.bytes])
                case .isFavorite: ("SELECT favorite_hlc, favorite_device FROM assets WHERE asset_id = ?", [object.bytes])
                case .isHidden: ("SELECT hidden_hlc, hidden_device FROM assets WHERE asset_id = ?", [object.bytes])
                case .burstUserPick:
                    ("SELECT burst_user_pick_hlc, burst_user_pick_device FROM assets WHERE asset_id = ?", [object.bytes])
                case .content: ("SELECT content_hlc, content_device FROM assets WHERE asset_id = ?", [object.bytes])
                case .title: ("SELECT title_hlc, title_device FROM albums WHERE album_id = ?", [object.bytes])
                case .keyAsset: ("SELECT key_asset_hlc, key_asset_device FROM albums WHERE album_id = ?", [object.bytes])
                case .position(let asset):
                    (
                        "SELECT position_hlc, position_device FROM album_members WHERE album_id = ? AND asset_id = ?",
                        [object.bytes, asset.bytes]
                    )
                }
            let stamp = try database.firstRow(sql, key) { WriterStamp(hlc: $0.int64(0), device: $0.text(1)) }
            claims.overwritten[field] = stamp.flatMap { $0.hlc == 0 ? nil : $0 }
        }
        return claims
    }

    func commit() throws {
        guard !events.isEmpty else { return }
        try writeFolded()
        try EventLog(connection).append(events)
        committedEvents = true
        if !newAssetKeys.isEmpty {
            let (encryption, keys) = (library.encryption, newAssetKeys)
            afterCommit.append { encryption.add(assetKeys: keys) }
        }
        try packNewAssetKeys()
        // Crypto-shredding: purged assets' keys are destroyed with the purge (Shredding.swift).
        let purged = Set(events.filter { $0.type == EventType.assetPurged.rawValue }.map(\.object))
        if !purged.isEmpty {
            let shredded = try library.shred(purged, in: database, archive: archive, publishing: true)
            let library = library
            afterCommit.append { library.finishShredding(shredded) }
        }
    }

    // MARK: Assets

    /// Records a new asset (metadata already extracted, resources already stored).
    func createAsset(_ creation: ChangeEvent.AssetCreation) throws -> AssetCreationRequest {
        try checkValid("createAsset")
        let id = library.identifiers.next()
        try record(.assetCreated(creation), object: id)
        if access == .limited {
            try database.execute("INSERT INTO limited_selection (asset_id) VALUES (?) ON CONFLICT DO NOTHING", [id.bytes])
        }
        return AssetCreationRequest(changes: self, id: id)
    }

    /// A request to change the properties of an asset.
    public func assetChangeRequest(for asset: any ObjectReference) throws -> AssetChangeRequest {
        try requireReadWrite("change assets")
        let id = try existingAsset(asset, allowDeleted: true)
        return AssetChangeRequest(changes: self, id: id)
    }

    /// Moves assets to Recently Deleted. Their album memberships are kept and come back on recovery.
    public func deleteAssets(_ assets: [any ObjectReference]) throws {
        try requireReadWrite("delete assets")
        for (id, cl) in try trashState(assets) where CausalLength.isPresent(cl) {
            try record(.assetDeleted(causalLength: cl + 1), object: id)
        }
    }

    /// Brings assets back from Recently Deleted, with their latest properties and memberships.
    public func recoverAssets(_ assets: [any ObjectReference]) throws {
        try requireReadWrite("recover assets")
        for (id, cl) in try trashState(assets) where !CausalLength.isPresent(cl) {
            try record(.assetRecovered(causalLength: cl + 1), object: id)
        }
    }

    /// Removes assets in Recently Deleted for good.
    public func purgeAssets(_ assets: [any ObjectReference]) throws {
        try requireReadWrite("purge assets")
        let states = try trashState(assets)
        if let alive = states.first(where: { CausalLength.isPresent($0.1) }) {
            throw PhotoLibraryError(
                .changeNotSupported,
                "asset \(LocalIdentifier(uuid: alive.0, kind: .asset)) is not in Recently Deleted; delete it before purging it")
        }
        for (id, _) in states { try record(.assetPurged, object: id) }
    }

    private func trashState(_ assets: [any ObjectReference]) throws -> [(UUID, Int64)] {
        try assets.map { reference in
            let id = try existingAsset(reference, allowDeleted: true)
            let cl = try database.firstRow("SELECT trash_cl FROM assets WHERE asset_id = ?", [id.bytes]) { $0.int64(0) } ?? 1
            return (id, cl)
        }
    }

    /// The UUID of an asset that exists (created, not purged, visible under the current access).
    func existingAsset(_ reference: any ObjectReference, allowDeleted: Bool = false) throws -> UUID {
        let id = try PhotoLibrary.parse(reference, kind: .asset)
        let row = try database.firstRow(
            "SELECT trash_cl, purged, asset_id IN (SELECT asset_id FROM limited_selection) FROM assets WHERE asset_id = ? AND created = 1",
            [id.bytes]
        ) { ($0.int64(0), $0.int64(1) == 1, $0.int64(2) == 1) }
        guard let (cl, purged, selected) = row, !purged, access != .limited || selected else {
            throw PhotoLibraryError.notFound(reference.localIdentifier, kind: "asset")
        }
        if !allowDeleted && !CausalLength.isPresent(cl) {
            throw PhotoLibraryError(
                .changeNotSupported, "asset \(reference.localIdentifier) is in Recently Deleted; recover it before using it")
        }
        return id
    }

    // MARK: Albums

    /// Creates an album with a title. Titles are not unique: another album may have the same one.
    ///
    /// With a `stableKey`, the album's identifier is derived from the key, so devices that create
    /// "the same" album concurrently (for example an app's own album) converge on one album.
    public func createAlbum(title: String, stableKey: String? = nil) throws -> AlbumChangeRequest {
        try requireReadWrite("create albums")
        let id = stableKey.map { UUID.named("album/" + $0, in: PhotoLibrary.namespace) } ?? library.identifiers.next()
        try record(.albumCreated(title: title, subtype: CollectionSubtype.albumRegular.rawValue), object: id)
        return try albumRequest(id, isNew: true)
    }

    /// The first regular album with this exact title (oldest first), including albums created
    /// earlier in this block, or nil.
    public func album(titled title: String) throws -> AlbumChangeRequest? {
        try requireReadWrite("find albums")
        let id = try database.firstRow(
            """
            SELECT album_id FROM albums WHERE created = 1 AND deleted = 0 AND merged_into IS NULL AND title = ?
            ORDER BY created_hlc, album_id LIMIT 1
            """, [title]
        ) { UUID(bytes: $0.blob(0))! }
        return try id.map { try albumRequest($0, isNew: false) }
    }

    /// A request to change an album: its title and its assets.
    public func albumChangeRequest(for album: any ObjectReference) throws -> AlbumChangeRequest {
        try requireReadWrite("change albums")
        return try albumRequest(try existingAlbum(album), isNew: false)
    }

    /// Deletes albums. Their assets stay in the library.
    public func deleteAlbums(_ albums: [any ObjectReference]) throws {
        try requireReadWrite("delete albums")
        for id in try albums.map({ try existingAlbum($0) }) {
            try record(.albumDeleted, object: id)
            albumRequests[id] = nil
        }
    }

    /// Merges albums (for example two albums with the same title made on two devices) into the
    /// one with the smallest identifier: the members are united, positions kept, the others
    /// disappear, and later changes addressed to them land in the merged album.
    public func mergeAlbums(_ albums: [any ObjectReference]) throws -> AlbumChangeRequest {
        try requireReadWrite("merge albums")
        let ids = Set(try albums.map { try existingAlbum($0) })
        guard ids.count >= 2, let winner = ids.min(by: { $0.bytes.lexicographicallyPrecedes($1.bytes) }) else {
            throw PhotoLibraryError(.changeNotSupported, "merging needs at least two different albums")
        }
        for loser in ids where loser != winner {
            try record(.albumMerged(winner: winner), object: loser)
            albumRequests[loser] = nil
        }
        albumRequests[winner] = nil
        return try albumRequest(winner, isNew: false)
    }

    /// The UUID of a live album, following merges.
    func existingAlbum(_ reference: any ObjectReference) throws -> UUID {
        let id = try PhotoLibrary.parse(reference, kind: .album)
        guard let resolved = try AlbumMembers.resolve(id, in: database) else {
            throw PhotoLibraryError.notFound(reference.localIdentifier, kind: "album")
        }
        return resolved
    }

    private func albumRequest(_ id: UUID, isNew: Bool) throws -> AlbumChangeRequest {
        if let request = albumRequests[id] { return request }
        let request = try AlbumChangeRequest(changes: self, id: id, isNew: isNew)
        albumRequests[id] = request
        return request
    }
}

/// A request that created an asset; its placeholder names the new asset.
public final class AssetCreationRequest {
    unowned let changes: LibraryChanges
    let id: UUID

    init(changes: LibraryChanges, id: UUID) {
        self.changes = changes
        self.id = id
    }

    /// The placeholder of the created asset: its identifier is the asset's final identifier.
    public var placeholderForCreatedAsset: ObjectPlaceholder { ObjectPlaceholder(LocalIdentifier(uuid: id, kind: .asset)) }
}

/// A request to change an asset's properties. Each property set is recorded as its own
/// last-writer-wins change: setting `isFavorite` never touches `isHidden`.
public final class AssetChangeRequest {
    unowned let changes: LibraryChanges
    let id: UUID

    init(changes: LibraryChanges, id: UUID) {
        self.changes = changes
        self.id = id
    }

    /// The asset's identifier.
    public var localIdentifier: String { LocalIdentifier(uuid: id, kind: .asset).description }

    private func set(_ change: ChangeEvent.AssetChanges) throws {
        try changes.checkValid("an asset change request")
        try changes.record(.assetChanged(change), object: id)
    }

    /// Marks or unmarks the asset as a favorite.
    public func setFavorite(_ value: Bool) throws { try set(.init(isFavorite: value)) }
    /// Hides or shows the asset.
    public func setHidden(_ value: Bool) throws { try set(.init(isHidden: value)) }
    /// Sets or clears when the photo was taken.
    public func setCreationDate(_ value: Date?) throws { try set(.init(creationDate: .some(value))) }
    /// Sets or clears where the photo was taken.
    public func setLocation(_ value: Location?) throws { try set(.init(location: .some(value))) }

    /// Marks a burst photo as picked by the user (or unpicks it): ``BurstSelectionTypes/userPick``
    /// in its ``Asset/burstSelectionTypes``, a last-writer-wins register like the favorite. The
    /// burst's representative is its first user pick (see ``Asset/representsBurst``).
    ///
    /// - Throws: ``PhotoLibraryError`` `.changeNotSupported` when the asset is not a burst photo.
    public func setBurstUserPick(_ value: Bool) throws {
        try changes.checkValid("an asset change request")
        let burst = try changes.database.firstRow("SELECT burst_identifier FROM assets WHERE asset_id = ?", [id.bytes]) {
            $0.isNull(0) ? nil : $0.text(0)
        }
        guard burst != nil, burst! != nil else {
            throw PhotoLibraryError(
                .changeNotSupported, "asset \(localIdentifier) is not a burst photo; only a photo of a burst can be a user pick")
        }
        try set(.init(burstUserPick: value))
    }
}

extension LibraryChanges {
    /// Records an image asset without resource bytes: the log and projections alone, for
    /// benchmarks and simulations that measure them without media I/O.
    package func createImageRecord(width: Int, height: Int, creationDate: Date?) throws -> AssetCreationRequest {
        try createAsset(
            ChangeEvent.AssetCreation(
                mediaType: .image, mediaSubtypes: [], pixelWidth: width, pixelHeight: height, duration: 0, creationDate: creationDate,
                location: nil, isFavorite: false, isHidden: false, resources: []))
    }
}
