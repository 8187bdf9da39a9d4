import Foundation
import LedgerCore
import LedgerStore
import PhotoMedia

/// An object a fetch can return: an asset or an album.
public protocol PhotoObject: Hashable, Sendable, ObjectReference {
    /// The object's UUID, the same on every device.
    var id: UUID { get }
}

extension Asset: PhotoObject {}
extension AssetCollection: PhotoObject {}

extension PhotoLibrary {
    // MARK: Assets

    /// The assets with these identifiers (hidden ones included, as in PhotoKit), in the order
    /// of the identifiers unless `options` sorts them. Unknown identifiers are skipped.
    public func fetchAssets(withLocalIdentifiers identifiers: [String], options: FetchOptions? = nil) throws -> FetchResult<Asset> {
        var options = options ?? FetchOptions()
        options.includeHiddenAssets = true
        options.includeAllBurstAssets = true
        let ids = identifiers.compactMap { LocalIdentifier($0) }.filter { $0.kind == .asset }.map(\.uuid)
        return try fetch(.assetsWithIdentifiers(ids, options))
    }

    /// All Photos: every asset not hidden and not deleted, by creation date unless sorted otherwise.
    public func fetchAssets(options: FetchOptions = FetchOptions()) throws -> FetchResult<Asset> {
        try fetch(.assets(options))
    }

    /// Every photo of a burst (PhotoKit's `fetchAssets(withBurstIdentifier:options:)`), its
    /// representative included, by creation date unless sorted otherwise; hidden ones only with
    /// ``FetchOptions/includeHiddenAssets``. Empty for an identifier no photo has.
    public func fetchAssets(withBurstIdentifier burstIdentifier: String, options: FetchOptions? = nil) throws -> FetchResult<Asset> {
        var options = options ?? FetchOptions()
        options.includeAllBurstAssets = true
        let burst = FetchPredicate.burstIdentifier(burstIdentifier)
        options.predicate = options.predicate.map { .and([burst, $0]) } ?? burst
        return try fetch(.assets(options))
    }

    /// The assets of an album in album order (or a smart album's assets), unless sorted otherwise.
    public func fetchAssets(in collection: AssetCollection, options: FetchOptions = FetchOptions()) throws -> FetchResult<Asset> {
        if collection.collectionType == .smartAlbum {
            return try fetch(.assetsInSmartAlbum(collection.subtype, options))
        }
        return try fetch(.assetsInAlbum(collection.id, options))
    }

    // MARK: Collections

    /// Albums of a type and subtype (`.any` for every subtype).
    public func fetchAssetCollections(
        with type: CollectionType, subtype: CollectionSubtype = .any, options: FetchOptions = FetchOptions()
    ) throws -> FetchResult<AssetCollection> {
        try fetch(.collections(type, subtype, options))
    }

    /// The albums and smart albums with these identifiers; an identifier of an album merged into
    /// another names the album it was merged into.
    public func fetchAssetCollections(withLocalIdentifiers identifiers: [String], options: FetchOptions = FetchOptions()) throws
        -> FetchResult<AssetCollection>
    {
        let ids = identifiers.compactMap { LocalIdentifier($0) }.filter { $0.kind == .album }.map(\.uuid)
        return try fetch(.collectionsWithIdentifiers(ids, options))
    }

    /// The key asset of a collection (PhotoKit's `fetchKeyAssets(in:options:)`): for an album, the
    /// asset chosen with ``AlbumChangeRequest/setKeyAsset(_:)`` while the album's fetch returns
    /// it, otherwise the first asset; for a smart album, its first asset. Empty for an empty
    /// collection.
    public func fetchKeyAssets(in collection: AssetCollection, options: FetchOptions = FetchOptions()) throws -> FetchResult<Asset> {
        try fetch(.keyAssets(collection.id, options))
    }

    /// The albums (`.album`) or smart albums (`.smartAlbum`) that hold `asset`, as PhotoKit's
    /// `fetchAssetCollectionsContaining(_:with:options:)`: an album merged into another is
    /// reported as the album it was merged into; a smart album holds the asset when its own
    /// fetch returns it.
    public func fetchAssetCollectionsContaining(
        _ asset: any ObjectReference, with type: CollectionType, options: FetchOptions = FetchOptions()
    ) throws -> FetchResult<AssetCollection> {
        try fetch(.collectionsContaining(try Self.parse(asset, kind: .asset), type, options))
    }

    /// The resources of an asset (PhotoKit's `PHAssetResource.assetResources(for:)`): the ones
    /// it was created with (its photo or video, a Live Photo's paired video, …) and, while it has
    /// an edit, the edit's rendition (`.fullSizePhoto` or `.fullSizeVideo`, named
    /// `FullSizeRender.<ext>`) and its adjustment data (`.adjustmentData`).
    public func resources(for asset: any ObjectReference) throws -> [AssetResource] {
        let id = try Self.parse(asset, kind: .asset)
        return try read { db, _ in
            var resources = try db.rows(
                "SELECT type, sha256, size, uniform_type, original_filename FROM asset_resources WHERE asset_id = ? ORDER BY resource_index",
                [id.bytes]
            ) { row in
                AssetResource(
                    type: ResourceType(rawValue: Int(row.int64(0))), sha256: Hex.encode(row.blob(1)), size: row.int64(2),
                    uniformTypeIdentifier: row.text(3), originalFilename: row.text(4))
            }
            try db.forEachRow(
                """
                SELECT a.media_type, r.sha256, r.size, r.uniform_type, a.content_sha256 = r.sha256 FROM assets a
                JOIN referenced_resources r ON r.sha256 IN (a.content_sha256, a.adjustment_sha256)
                WHERE a.asset_id = ? ORDER BY a.content_sha256 = r.sha256 DESC
                """, [id.bytes]
            ) { row in
                let rendered = row.int64(4) == 1
                let type: ResourceType =
                    rendered ? (row.int64(0) == AssetMediaType.video.rawValue ? .fullSizeVideo : .fullSizePhoto) : .adjustmentData
                let uniformType = row.text(3)
                let name = rendered ? "FullSizeRender." + Self.filenameExtension(forUniformType: uniformType) : "Adjustments.data"
                resources.append(
                    AssetResource(
                        type: type, sha256: Hex.encode(row.blob(1)), size: row.int64(2), uniformTypeIdentifier: uniformType,
                        originalFilename: name))
            }
            return resources
        }
    }

    /// The usual extension of a file of `uniformType`.
    static func filenameExtension(forUniformType uniformType: String) -> String {
        MediaFormat.allCases.first { $0.uniformTypeIdentifier == uniformType }?.preferredFilenameExtension ?? "bin"
    }

    // MARK: Running queries

    /// Reads with the caller's access checked.
    func read<T>(_ body: (Database, Access) throws -> T) throws -> T {
        if storage.isWritingOnCurrentThread {
            throw PhotoLibraryError(
                .changeNotSupported,
                "fetches cannot run inside a change block; use the change requests' own state, or fetch after the block")
        }
        return try readDatabase { db in try body(db, try self.readAccess(in: db)) }
    }

    func fetch(_ query: FetchQuery) throws -> FetchResult<Asset> {
        let registration = try register(query)
        let (found, generation) = try read { db, access in
            (try Self.assets(query, db: db, access: access, now: options.clock()), try Self.changeGeneration(in: db))
        }
        // A result read whole at the fetch needs no loader.
        let loader = found.loaded.count < found.identifiers.count ? assetLoader : nil
        return FetchResult(
            identifiers: found.identifiers, versions: found.versions, loaded: found.loaded, query: query, loader: loader,
            generation: generation,
            registration: registration)
    }

    func fetch(_ query: FetchQuery) throws -> FetchResult<AssetCollection> {
        let registration = try register(query)
        let (found, generation) = try read { db, access in
            (try Self.collections(query, db: db, access: access, now: options.clock()), try Self.changeGeneration(in: db))
        }
        return FetchResult(found, query: query, generation: generation, registration: registration)
    }

    /// Tracks `query` for change details before it is read (a fetch inside a change block fails
    /// first, with the error ``read(_:)`` gives).
    func register(_ query: FetchQuery) throws -> QueryRegistration {
        if storage.isWritingOnCurrentThread {
            throw PhotoLibraryError(
                .changeNotSupported,
                "fetches cannot run inside a change block; use the change requests' own state, or fetch after the block")
        }
        return tracker.register(query)
    }

    /// Reads the assets of a fetch result that were not read at the fetch.
    var assetLoader: FetchResultStorage<Asset>.Loader {
        { [storage] ids in
            do {
                return try storage.read { db in try Self.assets(withIDs: ids, db: db) }
            } catch {
                throw PhotoLibrary.translate(error, doing: "read the library")
            }
        }
    }

    /// What an asset fetch read: every identifier and version, the first objects.
    struct AssetFetch {
        var identifiers: [UUID] = []
        var versions: [Int64] = []
        var loaded: [Asset] = []
        /// Each asset's key in the default order (creation date, else the time it was added), when
        /// read from asset rows: what an update in place sorts by (``CapturedOutcomes``).
        var sortKeys: [Double] = []

        /// Assets read whole.
        init(_ assets: [Asset], versions: [Int64]) {
            identifiers = assets.map(\.id)
            self.versions = versions
            loaded = assets
        }

        /// Rows of ``Fetching/assetColumns``: the first batch read whole, the others by identifier and version.
        init(rows sql: String, _ values: [any SQLBindable], db: Database) throws {
            try db.forEachRow(sql, values) { row in
                if loaded.count < FetchResult<Asset>.batchSize {
                    loaded.append(Fetching.asset(row))
                    identifiers.append(loaded[loaded.count - 1].id)
                } else {
                    identifiers.append(row.withBlob(0) { UUID(bytes: $0) }!)
                }
                versions.append(row.int64(Fetching.versionColumn))
                // coalesce(creation_date, (created_hlc >> 16) / 1000.0), as the default order's SQL.
                sortKeys.append(row.isNull(6) ? Double(UInt64(bitPattern: row.int64(8)) >> 16) / 1000 : row.double(6))
            }
        }

        /// Identifiers and versions read elsewhere: the first batch read from the asset rows.
        init(identifiers: [UUID], versions: [Int64], db: Database) throws {
            self.identifiers = identifiers
            self.versions = versions
            let first = identifiers.prefix(FetchResult<Asset>.batchSize)
            let byID = Dictionary(
                try PhotoLibrary.assets(withIDs: Array(first), db: db).map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
            loaded = first.compactMap { byID[$0] }
            guard loaded.count == first.count else {
                throw PhotoLibraryError(
                    .internalError, "an album member has no asset row in the library's views; rebuild the views with `photoledger rebuild`")
            }
        }

        static let empty = AssetFetch([], versions: [])
    }

    /// The assets with these identifiers, in any order (missing ones left out).
    static func assets(withIDs ids: [UUID], db: Database) throws -> [Asset] {
        guard !ids.isEmpty else { return [] }
        let size = FetchResult<Asset>.batchSize
        var assets: [Asset] = []
        assets.reserveCapacity(ids.count)
        for start in stride(from: 0, to: ids.count, by: size) {
            let chunk = ids[start..<min(ids.count, start + size)]
            // One statement for every chunk: short chunks repeat their first identifier.
            let statement = try db.cachedStatement(assetsByIDSQL)
            defer { statement.reset() }
            for index in 0..<size {
                let id = index < chunk.count ? chunk[chunk.startIndex + index] : chunk[chunk.startIndex]
                try withUnsafeBytes(of: id.uuid) { try statement.bind(bytes: $0, at: Int32(index + 1)) }
            }
            while try statement.step() { assets.append(Fetching.asset(statement)) }
        }
        return assets
    }

    private static let assetsByIDSQL = PreparedSQL(
        "SELECT \(Fetching.assetColumns) FROM assets a WHERE a.asset_id IN ("
            + Array(repeating: "?", count: FetchResult<Asset>.batchSize).joined(separator: ", ") + ")")

    /// The assets `query` returns; with `only`, at most that asset (whether the query returns it).
    static func assets(_ query: FetchQuery, db: Database, access: Access, now: UInt64, only: UUID? = nil) throws -> AssetFetch {
        var conditions = ["a.created = 1", "a.purged = 0"]
        var values: [any SQLBindable] = []
        let options: FetchOptions
        var defaultOrder = "coalesce(a.creation_date, (a.created_hlc >> 16) / 1000.0), a.asset_id"
        switch query {
        case .assets(let o):
            options = o
            conditions.append(CausalLength.present("a.trash_cl"))
        case .assetsWithIdentifiers(let ids, let o):
            options = o
            conditions.append(CausalLength.present("a.trash_cl"))
            if ids.isEmpty { return .empty }
            if ids.count == 1 {
                conditions.append("a.asset_id = ?")
                values.append(ids[0].bytes)
            } else {
                conditions.append("a.asset_id IN (SELECT value FROM temp_ids)")
            }
        case .assetsInAlbum(let album, let o):
            return try assets(inAlbum: album, options: o, db: db, access: access)
        case .keyAssets(let collection, let o):
            return try keyAssets(of: collection, options: o, db: db, access: access, now: now)
        case .assetsInSmartAlbum(let subtype, let o):
            options = o
            switch subtype {
            case .smartAlbumRecentlyDeleted:
                conditions.append(CausalLength.absent("a.trash_cl"))
                defaultOrder = "a.trashed_hlc DESC, a.asset_id"
            case .smartAlbumFavorites: conditions += [CausalLength.present("a.trash_cl"), "a.favorite = 1"]
            case .smartAlbumVideos: conditions += [CausalLength.present("a.trash_cl"), "a.media_type = \(AssetMediaType.video.rawValue)"]
            case .smartAlbumRecentlyAdded:
                conditions += [CausalLength.present("a.trash_cl"), "a.created_hlc >= ?"]
                values.append(Int64(bitPattern: HLCTimestamp(milliseconds: now &- 30 * 86_400_000, counter: 0).rawValue))
                defaultOrder = "a.created_hlc DESC, a.asset_id"
            case .smartAlbumUserLibrary: conditions.append(CausalLength.present("a.trash_cl"))
            case .smartAlbumAllHidden: conditions += [CausalLength.present("a.trash_cl"), "a.hidden = 1"]
            case .smartAlbumLivePhotos:
                conditions += [CausalLength.present("a.trash_cl"), "a.media_subtypes & \(MediaSubtypes.photoLive.rawValue) <> 0"]
            case .smartAlbumAnimated:
                conditions += [CausalLength.present("a.trash_cl"), "a.media_subtypes & \(MediaSubtypes.photoAnimation.rawValue) <> 0"]
            case .smartAlbumPanoramas:
                conditions += [CausalLength.present("a.trash_cl"), "a.media_subtypes & \(MediaSubtypes.photoPanorama.rawValue) <> 0"]
            case .smartAlbumScreenshots:
                conditions += [CausalLength.present("a.trash_cl"), "a.media_subtypes & \(MediaSubtypes.photoScreenshot.rawValue) <> 0"]
            case .smartAlbumSelfPortraits:
                conditions += [CausalLength.present("a.trash_cl"), "a.media_subtypes & \(MediaSubtypes.photoSelfPortrait.rawValue) <> 0"]
            case .smartAlbumBursts: conditions += [CausalLength.present("a.trash_cl"), "a.burst_identifier IS NOT NULL"]
            default: return .empty
            }
        case .collections, .collectionsWithIdentifiers, .collectionsContaining, .collectionsInList, .collectionLists,
            .collectionListsContaining:
            return .empty
        }
        if let only {
            conditions.append("a.asset_id = ?")
            values.append(only.bytes)
        }
        let hiddenAllowed = options.includeHiddenAssets || Fetching.mentionsHidden(options.predicate) || query.listsHidden
        if !hiddenAllowed, !(query.isRecentlyDeleted) { conditions.append("a.hidden = 0") }
        // Recently Deleted lists each deleted photo: a deleted photo represents no burst.
        if !options.includeAllBurstAssets, !query.isRecentlyDeleted { conditions.append(Fetching.burstRepresentativesOnly) }
        if let condition = try assetCondition(options.predicate, access: access) {
            conditions.append(condition.sql)
            values += condition.values
        }
        var sql = "SELECT \(Fetching.assetColumns) FROM assets a WHERE " + conditions.joined(separator: " AND ")
        if case .assetsWithIdentifiers(let ids, _) = query, ids.count > 1 {
            let rows = try withTemporaryIDs(ids, in: db) {
                try db.rows(sql, values) { (Fetching.asset($0), $0.int64(Fetching.versionColumn)) }
            }
            if !options.sortDescriptors.isEmpty {
                let sorted = try sort(rows, by: options.sortDescriptors)
                return limit(AssetFetch(sorted.map(\.0), versions: sorted.map(\.1)), options.fetchLimit)
            }
            let byID = Dictionary(rows.map { ($0.0.id, $0) }, uniquingKeysWith: { first, _ in first })
            var seen = Set<UUID>()
            let ordered = ids.compactMap { id in seen.insert(id).inserted ? byID[id] : nil }
            return limit(AssetFetch(ordered.map(\.0), versions: ordered.map(\.1)), options.fetchLimit)
        }
        sql += " ORDER BY " + (try Fetching.order(options.sortDescriptors, defaultOrder: defaultOrder, forAssets: true))
        if options.fetchLimit > 0 { sql += " LIMIT \(options.fetchLimit)" }
        return try AssetFetch(rows: sql, values, db: db)
    }

    /// The assets of a regular album: in album order from the membership rows alone, unless a
    /// condition or a sort needs the asset rows.
    static func assets(inAlbum album: UUID, options o: FetchOptions, db: Database, access: Access) throws -> AssetFetch {
        guard let resolved = try AlbumMembers.resolve(album, in: db) else { return .empty }
        let includeHidden = o.includeHiddenAssets || Fetching.mentionsHidden(o.predicate)
        var assetCondition = try assetCondition(o.predicate, access: access)
        // Only a library with bursts joins the members to their asset rows for them.
        if !o.includeAllBurstAssets, try Fetching.hasBursts(db) {
            let bursts = Fetching.Condition(sql: Fetching.burstRepresentativesOnly, values: [])
            assetCondition = assetCondition.map { Fetching.Condition(sql: $0.sql + " AND " + bursts.sql, values: $0.values) } ?? bursts
        }
        let condition = assetCondition?.sql, values = assetCondition?.values ?? []
        let group = try AlbumMembers.group(of: resolved, in: db)
        if o.sortDescriptors.isEmpty {
            let (identifiers, versions) = try AlbumMembers.identifiers(
                group: group, in: db, includeHidden: includeHidden, condition: condition, values: values)
            return limit(try AssetFetch(identifiers: identifiers, versions: versions, db: db), o.fetchLimit)
        }
        let order = try Fetching.order(o.sortDescriptors, defaultOrder: "", forAssets: true)
        if group.count == 1 {
            return try AssetFetch(
                rows: """
                    SELECT \(Fetching.assetColumns) FROM album_members m JOIN assets a ON a.asset_id = m.asset_id
                    WHERE m.album_id = ? AND \(CausalLength.present("m.cl")) AND \(AlbumMembers.filter(includeHidden, condition)) ORDER BY \(order)\(o.fetchLimit > 0 ? " LIMIT \(o.fetchLimit)" : "")
                    """, [resolved.bytes] + values, db: db)
        }
        // A merged album with a sort: read every member, sort in memory.
        let members = try AlbumMembers.ordered(group: group, in: db, includeHidden: includeHidden, condition: condition, values: values)
        let versions = Dictionary(members.map { ($0.asset, $0.version) }, uniquingKeysWith: { first, _ in first })
        let sorted = try sort(try assets(withIDs: members.map(\.asset), db: db).map { ($0, versions[$0.id] ?? 0) }, by: o.sortDescriptors)
        return limit(AssetFetch(sorted.map(\.0), versions: sorted.map(\.1)), o.fetchLimit)
    }

    /// The key asset of a collection, as a one-asset fetch: an album's chosen key asset while
    /// its fetch returns it, else the collection's first asset; none for an empty collection.
    static func keyAssets(of collection: UUID, options o: FetchOptions, db: Database, access: Access, now: UInt64) throws -> AssetFetch {
        var options = o
        options.fetchLimit = 0
        let members: AssetFetch
        var chosen: UUID?
        if let subtype = CollectionSubtype.smartAlbums.first(where: { $0.smartAlbumID == collection }) {
            members = try assets(.assetsInSmartAlbum(subtype, options), db: db, access: access, now: now)
        } else {
            guard let album = try AlbumMembers.resolve(collection, in: db) else { return .empty }
            chosen =
                try db.firstRow("SELECT key_asset FROM albums WHERE album_id = ?", [album.bytes]) {
                    $0.isNull(0) ? nil : UUID(bytes: $0.blob(0))
                } ?? nil
            members = try assets(inAlbum: album, options: options, db: db, access: access)
        }
        guard let index = chosen.flatMap(members.identifiers.firstIndex(of:)) ?? (members.identifiers.isEmpty ? nil : 0) else {
            return .empty
        }
        let found = try assets(withIDs: [members.identifiers[index]], db: db)
        return AssetFetch(found, versions: [members.versions[index]])
    }

    /// The condition on asset rows (alias `a`) that limited access and the predicate add, or nil.
    static func assetCondition(_ predicate: FetchPredicate?, access: Access) throws -> Fetching.Condition? {
        var parts: [Fetching.Condition] = []
        if access == .limited {
            parts.append(Fetching.Condition(sql: "a.asset_id IN (SELECT asset_id FROM limited_selection)", values: []))
        }
        if let predicate {
            guard !Fetching.mentionsTitle(predicate) else {
                throw PhotoLibraryError(.changeNotSupported, "assets have no title: use a title condition when fetching albums")
            }
            parts.append(Fetching.condition(predicate))
        }
        guard !parts.isEmpty else { return nil }
        return Fetching.Condition(sql: parts.map(\.sql).joined(separator: " AND "), values: parts.flatMap(\.values))
    }

    static func limit(_ fetch: AssetFetch, _ limit: Int) -> AssetFetch {
        guard limit > 0, fetch.identifiers.count > limit else { return fetch }
        var fetch = fetch
        fetch.identifiers.removeLast(fetch.identifiers.count - limit)
        fetch.versions.removeLast(fetch.versions.count - limit)
        if fetch.loaded.count > limit { fetch.loaded.removeLast(fetch.loaded.count - limit) }
        if fetch.sortKeys.count > limit { fetch.sortKeys.removeLast(fetch.sortKeys.count - limit) }
        return fetch
    }

    /// Sorts fetched assets in memory (album fetches with sort descriptors).
    static func sort(_ assets: [(Asset, Int64)], by descriptors: [SortDescriptor]) throws -> [(Asset, Int64)] {
        func key(_ asset: Asset, _ sortKey: SortKey) throws -> Double {
            switch sortKey {
            case .creationDate: return asset.creationDate?.timeIntervalSince1970 ?? -.infinity
            case .modificationDate: return asset.modificationDate.timeIntervalSince1970
            case .addedDate: return asset.addedDate.timeIntervalSince1970
            case .mediaType: return Double(asset.mediaType.rawValue)
            case .isFavorite: return asset.isFavorite ? 1 : 0
            case .pixelWidth: return Double(asset.pixelWidth)
            case .pixelHeight: return Double(asset.pixelHeight)
            case .duration: return asset.duration
            case .distance: return Self.distanceKey(asset.location, from: descriptors.first { $0.key == .distance }?.origin)
            case .title: throw PhotoLibraryError(.changeNotSupported, "cannot sort assets by title; choose another sort key")
            }
        }
        let keyed = try assets.map { asset in (asset, try descriptors.map { try key(asset.0, $0.key) }) }
        return keyed.sorted { lhs, rhs in
            for (index, descriptor) in descriptors.enumerated() where lhs.1[index] != rhs.1[index] {
                // Without a location, last in either direction (as the SQL order puts it).
                let (lhsNone, rhsNone) = (lhs.1[index] == .greatestFiniteMagnitude, rhs.1[index] == .greatestFiniteMagnitude)
                if descriptor.key == .distance, lhsNone != rhsNone { return rhsNone }
                return descriptor.ascending ? lhs.1[index] < rhs.1[index] : lhs.1[index] > rhs.1[index]
            }
            return lhs.0.0.id.bytes < rhs.0.0.id.bytes
        }.map(\.0)
    }

    /// What a distance sort compares, as its SQL computes it: the haversine of the great-circle
    /// distance (it grows with the distance); no location sorts last.
    static func distanceKey(_ location: Location?, from origin: Location?) -> Double {
        guard let location, let origin else { return .greatestFiniteMagnitude }
        let (φ1, φ2) = (origin.latitude * .pi / 180, location.latitude * .pi / 180)
        let (dφ, dλ) = (φ2 - φ1, (location.longitude - origin.longitude) * .pi / 180)
        return sin(dφ / 2) * sin(dφ / 2) + cos(φ1) * cos(φ2) * sin(dλ / 2) * sin(dλ / 2)
    }

    static func collections(_ query: FetchQuery, db: Database, access: Access, now: UInt64) throws -> [AssetCollection] {
        let options: FetchOptions
        var wantedIDs: [UUID]?
        var includeRegular = true
        var smartSubtypes: [CollectionSubtype] = []
        var containing: Set<UUID>?
        switch query {
        case .collections(let type, let subtype, let o):
            options = o
            includeRegular = (type == nil || type == .album) && (subtype == .any || subtype == .albumRegular)
            if type == nil || type == .smartAlbum {
                smartSubtypes = CollectionSubtype.smartAlbums.filter { subtype == .any || subtype == $0 }
            }
        case .collectionsContaining(let asset, let type, let o):
            options = o
            includeRegular = type == .album
            if type == .smartAlbum {
                smartSubtypes = try CollectionSubtype.smartAlbums.filter { subtype in
                    try !assets(.assetsInSmartAlbum(subtype, FetchOptions()), db: db, access: access, now: now, only: asset).identifiers
                        .isEmpty
                }
            }
            // The albums with a membership row that holds the asset, each followed to the album it
            // was merged into.
            let rows = try db.rows(
                "SELECT album_id FROM album_members WHERE asset_id = ? AND \(CausalLength.present("cl")) AND asset_state >= 1",
                [asset.bytes]
            ) { UUID(bytes: $0.blob(0))! }
            containing = Set(try rows.compactMap { try AlbumMembers.resolve($0, in: db) })
        case .collectionsWithIdentifiers(let ids, let o):
            options = o
            wantedIDs = try ids.compactMap { id in
                CollectionSubtype.smartAlbums.contains { $0.smartAlbumID == id } ? id : try AlbumMembers.resolve(id, in: db)
            }
            smartSubtypes = CollectionSubtype.smartAlbums.filter { subtype in wantedIDs!.contains(subtype.smartAlbumID) }
        default:
            return []
        }
        if Fetching.mentionsAssetKey(options.predicate) {
            throw PhotoLibraryError(.changeNotSupported, "albums can be filtered by title only; filter their assets instead")
        }
        var result: [AssetCollection] = []
        for subtype in smartSubtypes {
            let count = try assets(.assetsInSmartAlbum(subtype, FetchOptions()), db: db, access: access, now: now).identifiers.count
            result.append(
                AssetCollection(
                    id: subtype.smartAlbumID, collectionType: .smartAlbum, subtype: subtype, title: subtype.smartAlbumTitle,
                    estimatedAssetCount: count, creationDate: nil, modificationDate: nil, sourceDevice: nil))
        }
        if let predicate = options.predicate {
            result = result.filter { matches($0.title, predicate) }
        }
        if includeRegular && containing?.isEmpty != true
            && (wantedIDs == nil || wantedIDs!.contains { id in !smartSubtypes.contains { $0.smartAlbumID == id } })
        {
            var conditions = ["c.created = 1", "c.deleted = 0", "c.merged_into IS NULL"]
            var values: [any SQLBindable] = []
            if let ids = containing.map(Array.init) ?? wantedIDs {
                conditions.append("c.album_id IN (\(ids.map { "x'\(Hex.encode($0.bytes))'" }.joined(separator: ",")))")
            }
            if let predicate = options.predicate {
                let condition = Fetching.condition(predicate)
                conditions.append(condition.sql)
                values += condition.values
            }
            let limited = access == .limited ? " AND m.asset_id IN (SELECT asset_id FROM limited_selection)" : ""
            let sql = """
                SELECT c.album_id, c.subtype, c.title, c.created_hlc, c.modification_hlc, c.source_device,
                    (SELECT count(*) FROM album_members m WHERE m.album_id = c.album_id AND \(CausalLength.present("m.cl"))
                     AND m.asset_state = \(MemberAssetState.shown.rawValue)\(limited))
                FROM albums c WHERE \(conditions.joined(separator: " AND "))
                ORDER BY \(try Fetching.order(options.sortDescriptors, defaultOrder: "c.created_hlc, c.album_id", forAssets: false))
                """
            result += try db.rows(sql, values) { row in
                AssetCollection(
                    id: UUID(bytes: row.blob(0))!, collectionType: .album, subtype: CollectionSubtype(rawValue: Int(row.int64(1))),
                    title: row.text(2), estimatedAssetCount: Int(row.int64(6)),
                    creationDate: HLCTimestamp(rawValue: UInt64(bitPattern: row.int64(3))).dateValue,
                    modificationDate: HLCTimestamp(rawValue: UInt64(bitPattern: row.int64(4))).dateValue,
                    sourceDevice: DeviceID(row.text(5)))
            }
        }
        if let wantedIDs, options.sortDescriptors.isEmpty {
            let byID = Dictionary(result.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
            var seen = Set<UUID>()
            result = wantedIDs.compactMap { seen.insert($0).inserted ? byID[$0] : nil }
        }
        return options.fetchLimit > 0 ? Array(result.prefix(options.fetchLimit)) : result
    }

    /// Runs `body` with `ids` in the connection's temporary table `temp_ids`.
    static func withTemporaryIDs<T>(_ ids: [UUID], in db: Database, _ body: () throws -> T) throws -> T {
        try db.execute("CREATE TEMP TABLE IF NOT EXISTS temp_ids (value BLOB PRIMARY KEY) WITHOUT ROWID")
        try db.execute("DELETE FROM temp_ids")
        defer { try? db.execute("DELETE FROM temp_ids") }
        for id in ids { try db.execute("INSERT OR IGNORE INTO temp_ids (value) VALUES (?)", [id.bytes]) }
        return try body()
    }

    static func matches(_ title: String, _ predicate: FetchPredicate) -> Bool {
        switch predicate {
        case .title(let value): return title == value
        case .titleContains(let text): return title.range(of: text, options: .caseInsensitive) != nil
        case .and(let parts): return parts.allSatisfy { matches(title, $0) }
        case .or(let parts): return parts.contains { matches(title, $0) }
        case .not(let inner): return !matches(title, inner)
        default: return true
        }
    }
}

extension FetchQuery {
    /// Whether the query lists hidden assets without being asked to (the Hidden smart album).
    var listsHidden: Bool {
        if case .assetsInSmartAlbum(.smartAlbumAllHidden, _) = self { return true }
        return false
    }

    var isRecentlyDeleted: Bool {
        if case .assetsInSmartAlbum(.smartAlbumRecentlyDeleted, _) = self { return true }
        return false
    }
}
