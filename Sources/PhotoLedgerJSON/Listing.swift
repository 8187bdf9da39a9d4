import Foundation
import PhotoLedger

/// The assets and albums of a library as the tools and the C API list them, and their JSON
/// shapes (`photoledger assets --json`, `photoledger albums --json`; the README documents them).
package enum Listing {
    /// Every asset that is not purged: visible, hidden and in Recently Deleted.
    package static func allAssets(in library: PhotoLibrary) throws -> [Asset] {
        try library.fetchAssets(options: FetchOptions(includeHiddenAssets: true)).allObjects + deletedAssets(in: library)
    }

    /// The assets in Recently Deleted.
    package static func deletedAssets(in library: PhotoLibrary) throws -> [Asset] {
        guard let trash = try library.fetchAssetCollections(with: .smartAlbum, subtype: .smartAlbumRecentlyDeleted).firstObject else {
            return []
        }
        return try library.fetchAssets(in: trash, options: FetchOptions(includeHiddenAssets: true)).allObjects
    }

    /// The assets `photoledger assets` lists: those of `album` in album order, else those in
    /// Recently Deleted when `deletedOnly`, else every asset not in Recently Deleted; hidden ones
    /// included; then only favorites when `favoritesOnly`.
    package static func assets(
        in library: PhotoLibrary, album: AssetCollection? = nil, favoritesOnly: Bool = false, deletedOnly: Bool = false
    ) throws -> [Asset] {
        var assets: [Asset]
        if let album {
            assets = try library.fetchAssets(in: album, options: FetchOptions(includeHiddenAssets: true)).allObjects
        } else if deletedOnly {
            assets = try deletedAssets(in: library)
        } else {
            assets = try library.fetchAssets(options: FetchOptions(includeHiddenAssets: true)).allObjects
        }
        if deletedOnly { assets = assets.filter(\.isDeleted) }
        if favoritesOnly { assets = assets.filter(\.isFavorite) }
        return assets
    }

    /// The regular albums, each with its members (hidden ones included) in album order.
    package static func albums(in library: PhotoLibrary) throws -> [(album: AssetCollection, members: [Asset])] {
        try library.fetchAssetCollections(with: .album).allObjects.map { album in
            (album, try library.fetchAssets(in: album, options: FetchOptions(includeHiddenAssets: true)).allObjects)
        }
    }

    /// The SHA-256 of an asset's primary resource (photo or video), or nil.
    package static func primaryHash(of asset: Asset, in library: PhotoLibrary) throws -> String? {
        let resources = try library.resources(for: asset)
        return (resources.first { $0.type == .photo || $0.type == .video } ?? resources.first)?.sha256
    }

    /// The `assets --json` array of `assets`.
    package static func json(_ assets: [Asset], in library: PhotoLibrary) throws -> JSON {
        .array(try assets.map { json($0, sha256: try primaryHash(of: $0, in: library)) })
    }

    /// The `assets --json` shape of one asset.
    package static func json(_ asset: Asset, sha256: String?) -> JSON {
        .object([
            ("localIdentifier", .string(asset.localIdentifier)),
            ("mediaType", .string(asset.mediaType.description)),
            ("pixelWidth", .int(Int64(asset.pixelWidth))),
            ("pixelHeight", .int(Int64(asset.pixelHeight))),
            ("creationDate", .string(asset.creationDate.map(isoDate))),
            ("isFavorite", .bool(asset.isFavorite)),
            ("isHidden", .bool(asset.isHidden)),
            ("isDeleted", .bool(asset.isDeleted)),
            ("sha256", .string(sha256)),
        ])
    }

    /// The `albums --json` array of `albums`.
    package static func json(_ albums: [(album: AssetCollection, members: [Asset])]) -> JSON {
        .array(albums.map { json($0.album, assets: $0.members) })
    }

    /// The `albums --json` shape of one album.
    package static func json(_ album: AssetCollection, assets: [Asset]) -> JSON {
        .object([
            ("localIdentifier", .string(album.localIdentifier)),
            ("title", .string(album.title)),
            ("assetIdentifiers", .array(assets.map { .string($0.localIdentifier) })),
        ])
    }

    /// A date as ISO 8601 in UTC, to the second.
    package static func isoDate(_ date: Date) -> String {
        date.ISO8601Format()
    }
}
