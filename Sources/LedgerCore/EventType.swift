/// The kinds of object a library's events are about. The raw value is PhotoKit's suffix of a
/// local identifier after the UUID.
public enum ObjectKind: String, Sendable, Hashable {
    /// A photo, video or other asset: `<UUID>/L0/001`.
    case asset = "001"
    /// An album or smart album: `<UUID>/L0/040`.
    case album = "040"
    /// A folder of albums and folders (PhotoKit's collection list): `<UUID>/L0/010`.
    case collectionList = "010"
}

/// The types of library events, named once for every module: the library folds them, the server
/// checks scopes against them, the tools print them.
///
/// The raw value is the type's name in the log and on the wire (`asset.created`, …). A type this
/// build does not know is kept and forwarded, never dropped: code that reads a type from bytes
/// uses `EventType(rawValue:)` and treats nil as "newer than this build".
public enum EventType: String, Sendable, Hashable, CaseIterable {
    /// A new asset with its metadata and resources.
    case assetCreated = "asset.created"
    /// Scalar properties of an asset set.
    case assetChanged = "asset.changed"
    /// An asset moved to Recently Deleted.
    case assetDeleted = "asset.deleted"
    /// An asset recovered from Recently Deleted.
    case assetRecovered = "asset.recovered"
    /// An asset removed for good.
    case assetPurged = "asset.purged"
    /// An asset's content edited, or reverted to the original.
    case assetContentEdited = "asset.contentEdited"
    /// A rendition of one of an asset's resources recorded (a thumbnail a device made, synced as a
    /// derived resource so that other devices can show the asset before they hold its original).
    case assetRenditionRecorded = "asset.renditionRecorded"
    /// A new album.
    case albumCreated = "album.created"
    /// An album's new title.
    case albumRenamed = "album.renamed"
    /// An album deleted.
    case albumDeleted = "album.deleted"
    /// Assets added to, removed from or moved within an album.
    case albumMembersChanged = "album.membersChanged"
    /// An album merged into another.
    case albumMerged = "album.merged"
    /// An album's key asset (its cover) chosen, or cleared.
    case albumKeyAssetSet = "album.keyAssetSet"
    /// An album moved into a folder, or to the top level.
    case albumMoved = "album.moved"
    /// A new folder (collection list).
    case collectionListCreated = "collectionList.created"
    /// A folder's new title.
    case collectionListRenamed = "collectionList.renamed"
    /// A folder deleted (what it held moves to the top level).
    case collectionListDeleted = "collectionList.deleted"
    /// A folder moved into another folder, or to the top level.
    case collectionListMoved = "collectionList.moved"
    /// An album's place among the collections of its folder (a position key).
    case albumPositioned = "album.positioned"
    /// A folder's place among the collections of its folder (a position key).
    case collectionListPositioned = "collectionList.positioned"

    /// The kind of object the event's object identifier names.
    public var objectKind: ObjectKind {
        switch self {
        case .assetCreated, .assetChanged, .assetDeleted, .assetRecovered, .assetPurged, .assetContentEdited, .assetRenditionRecorded:
            return .asset
        case .albumCreated, .albumRenamed, .albumDeleted, .albumMembersChanged, .albumMerged, .albumKeyAssetSet, .albumMoved,
            .albumPositioned:
            return .album
        case .collectionListCreated, .collectionListRenamed, .collectionListDeleted, .collectionListMoved, .collectionListPositioned:
            return .collectionList
        }
    }

    /// Whether the event creates its object (the only events an addOnly device may push, and only
    /// for identifiers the library does not hold yet).
    public var isCreation: Bool { self == .assetCreated || self == .albumCreated || self == .collectionListCreated }
}
