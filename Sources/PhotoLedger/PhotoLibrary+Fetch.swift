import Foundation
import LedgerStore

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
        let ids = identifiers.compactMap { LocalIdentifier($0) }.filter { $0.kind == .asset }.map(\.uuid)
        return try fetch(.assetsWithIdentifiers(ids, options))
    }

    /// All Photos: every asset not hidden and not deleted, by creation date unless sorted otherwise.
    public func fetchAssets(options: FetchOptions = FetchOptions()) throws -> FetchResult<Asset> {
        try fetch(.assets(options))
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

    /// The resources an asset was created with.
    public func resources(for asset: any ObjectReference) throws -> [AssetResource] {
        let id = try Self.parse(asset, kind: .asset)
        return try read { db, _ in
            try db.rows(
                "SELECT type, sha256, size, uniform_type, original_filename FROM asset_resources WHERE asset_id = ? ORDER BY resource_index",
                [id.bytes]
            ) { row in
                AssetResource(
                    type: ResourceType(rawValue: Int(row.int64(0))), sha256: Hex.encode(row.blob(1)), size: row.int64(2),
                    uniformTypeIdentifier: row.text(3), originalFilename: row.text(4))
            }
        }
    }

    // MARK: Running queries

    /// Reads with the caller's access checked.
    func read<T>(_ body: (Database, Access) throws -> T) throws -> T {
        if storage.isAccessedByCurrentThread {
            throw PhotoLibraryError(
                .changeNotSupported, "fetches cannot run inside a change block; use the change requests' own state, or fetch after the block")
        }
        return try readDatabase { db in try body(db, try Self.readAccess(in: db)) }
    }

    func fetch(_ query: FetchQuery) throws -> FetchResult<Asset> {
        FetchResult(try read { db, access in try Self.assets(query, db: db, access: access, now: options.clock()) }, query: query)
    }

    func fetch(_ query: FetchQuery) throws -> FetchResult<AssetCollection> {
        FetchResult(try read { db, access in try Self.collections(query, db: db, access: access, now: options.clock()) }, query: query)
    }

    static func assets(_ query: FetchQuery, db: Database, access: Access, now: UInt64) throws -> [Asset] {
        var conditions = ["a.created = 1", "a.purged = 0"]
        var values: [any SQLBindable] = []
        let options: FetchOptions
        var defaultOrder = "coalesce(a.creation_date, (a.created_hlc >> 16) / 1000.0), a.asset_id"
        switch query {
        case .assets(let o):
            options = o
            conditions.append("a.trash_cl % 2 = 1")
        case .assetsWithIdentifiers(let ids, let o):
            options = o
            conditions.append("a.trash_cl % 2 = 1")
            if ids.isEmpty { return [] }
            if ids.count == 1 {
                conditions.append("a.asset_id = ?")
                values.append(ids[0].bytes)
            } else {
                conditions.append("a.asset_id IN (SELECT value FROM temp_ids)")
            }
        case .assetsInAlbum(let album, let o):
            options = o
            guard let resolved = try AlbumMembers.resolve(album, in: db) else { return [] }
            var visible = "a.created = 1 AND a.purged = 0 AND a.trash_cl % 2 = 1"
            if !o.includeHiddenAssets && !Fetching.mentionsHidden(o.predicate) { visible += " AND a.hidden = 0" }
            if access == .limited { visible += " AND a.asset_id IN (SELECT asset_id FROM limited_selection)" }
            var extra: [any SQLBindable] = []
            if let predicate = o.predicate {
                let condition = Fetching.condition(predicate)
                visible += " AND " + condition.sql
                extra = condition.values
            }
            let group = try AlbumMembers.group(of: resolved, in: db)
            var assets: [Asset]
            if group.count == 1 {
                let order = try Fetching.order(o.sortDescriptors, defaultOrder: "m.position, m.asset_id", forAssets: true)
                let limit = o.fetchLimit > 0 ? " LIMIT \(o.fetchLimit)" : ""
                return try db.rows(
                    """
                    SELECT \(Fetching.assetColumns) FROM album_members m JOIN assets a ON a.asset_id = m.asset_id
                    WHERE m.album_id = ? AND m.cl % 2 = 1 AND \(visible) ORDER BY \(order)\(limit)
                    """, [resolved.bytes] + extra, Fetching.asset)
            }
            // A merged album: unite the members of every album merged into it.
            let members = try AlbumMembers.ordered(resolved, in: db, visible: visible, values: extra)
            let byID = Dictionary(
                try withTemporaryIDs(members.map(\.asset), in: db) {
                    try db.rows("SELECT \(Fetching.assetColumns) FROM assets a WHERE a.asset_id IN (SELECT value FROM temp_ids)", [], Fetching.asset)
                }.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
            assets = members.compactMap { byID[$0.asset] }
            if !o.sortDescriptors.isEmpty { assets = try sort(assets, by: o.sortDescriptors) }
            return o.fetchLimit > 0 ? Array(assets.prefix(o.fetchLimit)) : assets
        case .assetsInSmartAlbum(let subtype, let o):
            options = o
            switch subtype {
            case .smartAlbumRecentlyDeleted:
                conditions.append("a.trash_cl % 2 = 0")
                defaultOrder = "a.trashed_hlc DESC, a.asset_id"
            case .smartAlbumFavorites: conditions += ["a.trash_cl % 2 = 1", "a.favorite = 1"]
            case .smartAlbumVideos: conditions += ["a.trash_cl % 2 = 1", "a.media_type = 2"]
            case .smartAlbumRecentlyAdded:
                conditions += ["a.trash_cl % 2 = 1", "a.created_hlc >= ?"]
                values.append(Int64(bitPattern: HLCTimestamp(milliseconds: now &- 30 * 86_400_000, counter: 0).rawValue))
                defaultOrder = "a.created_hlc DESC, a.asset_id"
            case .smartAlbumUserLibrary: conditions.append("a.trash_cl % 2 = 1")
            default: return []
            }
        case .collections, .collectionsWithIdentifiers:
            return []
        }
        let hiddenAllowed = options.includeHiddenAssets || Fetching.mentionsHidden(options.predicate)
        if !hiddenAllowed, !(query.isRecentlyDeleted) { conditions.append("a.hidden = 0") }
        if access == .limited { conditions.append("a.asset_id IN (SELECT asset_id FROM limited_selection)") }
        if let predicate = options.predicate {
            guard !Fetching.mentionsTitle(predicate) else {
                throw PhotoLibraryError(.changeNotSupported, "assets have no title: use a title condition when fetching albums")
            }
            let condition = Fetching.condition(predicate)
            conditions.append(condition.sql)
            values += condition.values
        }
        var sql = "SELECT \(Fetching.assetColumns) FROM assets a WHERE " + conditions.joined(separator: " AND ")
        if case .assetsWithIdentifiers(let ids, _) = query, ids.count > 1 {
            let assets = try withTemporaryIDs(ids, in: db) { try db.rows(sql, values, Fetching.asset) }
            if !options.sortDescriptors.isEmpty {
                let sorted = try sort(assets, by: options.sortDescriptors)
                return options.fetchLimit > 0 ? Array(sorted.prefix(options.fetchLimit)) : sorted
            }
            let byID = Dictionary(assets.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
            var seen = Set<UUID>()
            let ordered: [Asset] = ids.compactMap { id in seen.insert(id).inserted ? byID[id] : nil }
            return options.fetchLimit > 0 ? Array(ordered.prefix(options.fetchLimit)) : ordered
        }
        sql += " ORDER BY " + (try Fetching.order(options.sortDescriptors, defaultOrder: defaultOrder, forAssets: true))
        if options.fetchLimit > 0 { sql += " LIMIT \(options.fetchLimit)" }
        return try db.rows(sql, values, Fetching.asset)
    }

    /// Sorts fetched assets in memory (album fetches with sort descriptors).
    static func sort(_ assets: [Asset], by descriptors: [SortDescriptor]) throws -> [Asset] {
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
            case .title: throw PhotoLibraryError(.changeNotSupported, "cannot sort assets by title; choose another sort key")
            }
        }
        let keyed = try assets.map { asset in (asset, try descriptors.map { try key(asset, $0.key) }) }
        return keyed.sorted { lhs, rhs in
            for (index, descriptor) in descriptors.enumerated() where lhs.1[index] != rhs.1[index] {
                return descriptor.ascending ? lhs.1[index] < rhs.1[index] : lhs.1[index] > rhs.1[index]
            }
            return lhs.0.id.bytes < rhs.0.id.bytes
        }.map(\.0)
    }

    static func collections(_ query: FetchQuery, db: Database, access: Access, now: UInt64) throws -> [AssetCollection] {
        let options: FetchOptions
        var wantedIDs: [UUID]?
        var includeRegular = true
        var smartSubtypes: [CollectionSubtype] = []
        switch query {
        case .collections(let type, let subtype, let o):
            options = o
            includeRegular = (type == nil || type == .album) && (subtype == .any || subtype == .albumRegular)
            if type == nil || type == .smartAlbum {
                smartSubtypes = CollectionSubtype.smartAlbums.filter { subtype == .any || subtype == $0 }
            }
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
            let count = try assets(.assetsInSmartAlbum(subtype, FetchOptions()), db: db, access: access, now: now).count
            result.append(
                AssetCollection(
                    id: subtype.smartAlbumID, collectionType: .smartAlbum, subtype: subtype, title: subtype.smartAlbumTitle,
                    estimatedAssetCount: count, creationDate: nil, modificationDate: nil, sourceDevice: nil))
        }
        if let predicate = options.predicate {
            result = result.filter { matches($0.title, predicate) }
        }
        if includeRegular && (wantedIDs == nil || wantedIDs!.contains { id in !smartSubtypes.contains { $0.smartAlbumID == id } }) {
            var conditions = ["c.created = 1", "c.deleted = 0", "c.merged_into IS NULL"]
            var values: [any SQLBindable] = []
            if let wantedIDs {
                conditions.append("c.album_id IN (\(wantedIDs.map { "x'\(Hex.encode($0.bytes))'" }.joined(separator: ",")))")
            }
            if let predicate = options.predicate {
                let condition = Fetching.condition(predicate)
                conditions.append(condition.sql)
                values += condition.values
            }
            let limited = access == .limited ? " AND a.asset_id IN (SELECT asset_id FROM limited_selection)" : ""
            let sql = """
                SELECT c.album_id, c.subtype, c.title, c.created_hlc, c.modification_hlc, c.source_device,
                    (SELECT count(*) FROM album_members m JOIN assets a ON a.asset_id = m.asset_id
                     WHERE m.album_id = c.album_id AND m.cl % 2 = 1 AND \(Fetching.visibleAsset)\(limited))
                FROM albums c WHERE \(conditions.joined(separator: " AND "))
                ORDER BY \(try Fetching.order(options.sortDescriptors, defaultOrder: "c.created_hlc, c.album_id", forAssets: false))
                """
            result += try db.rows(sql, values) { row in
                AssetCollection(
                    id: UUID(bytes: row.blob(0))!, collectionType: .album, subtype: CollectionSubtype(rawValue: Int(row.int64(1))),
                    title: row.text(2), estimatedAssetCount: Int(row.int64(6)),
                    creationDate: HLCTimestamp(rawValue: UInt64(bitPattern: row.int64(3))).dateValue,
                    modificationDate: HLCTimestamp(rawValue: UInt64(bitPattern: row.int64(4))).dateValue, sourceDevice: DeviceID(row.text(5)))
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
    var isRecentlyDeleted: Bool {
        if case .assetsInSmartAlbum(.smartAlbumRecentlyDeleted, _) = self { return true }
        return false
    }
}
