import Foundation
import LedgerCore

/// The kind of media an asset holds (PhotoKit's `PHAssetMediaType`, with its raw values). Named apart from
/// PhotoMedia's `MediaType` (a file format's kind), so that a file may import both modules.
public enum AssetMediaType: Int, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case unknown = 0
    case image = 1
    case video = 2
    case audio = 3

    public var description: String {
        switch self {
        case .unknown: return "unknown"
        case .image: return "image"
        case .video: return "video"
        case .audio: return "audio"
        }
    }
}

/// Further details of an asset's media (PhotoKit's bit values).
public struct MediaSubtypes: OptionSet, Sendable, Hashable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    public static let photoPanorama = MediaSubtypes(rawValue: 1 << 0)
    public static let photoHDR = MediaSubtypes(rawValue: 1 << 1)
    public static let photoScreenshot = MediaSubtypes(rawValue: 1 << 2)
    public static let photoLive = MediaSubtypes(rawValue: 1 << 3)
    public static let photoDepthEffect = MediaSubtypes(rawValue: 1 << 4)
    /// An animated image (GIF).
    public static let photoAnimation = MediaSubtypes(rawValue: 1 << 6)
    public static let videoStreamed = MediaSubtypes(rawValue: 1 << 16)
    public static let videoHighFrameRate = MediaSubtypes(rawValue: 1 << 17)
    public static let videoTimelapse = MediaSubtypes(rawValue: 1 << 18)
    /// A photo taken with the front camera (a selfie). PhotoKit has no subtype for it (its
    /// Selfies album reads private metadata): this bit is PhotoLedger's own, far above PhotoKit's.
    public static let photoSelfPortrait = MediaSubtypes(rawValue: 1 << 24)
}

/// How a photo of a burst was selected (PhotoKit's `PHAssetBurstSelectionType`, with its raw values).
public struct BurstSelectionTypes: OptionSet, Sendable, Hashable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// The camera chose the photo as one of the burst's best.
    public static let autoPick = BurstSelectionTypes(rawValue: 1 << 0)
    /// The user chose the photo (``AssetChangeRequest/setBurstUserPick(_:)``).
    public static let userPick = BurstSelectionTypes(rawValue: 1 << 1)
}

/// The role of a resource of an asset (PhotoKit's raw values). Unknown future values are kept.
public struct ResourceType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    public static let photo = ResourceType(rawValue: 1)
    public static let video = ResourceType(rawValue: 2)
    public static let audio = ResourceType(rawValue: 3)
    public static let alternatePhoto = ResourceType(rawValue: 4)
    /// The current rendition of an edited photo.
    public static let fullSizePhoto = ResourceType(rawValue: 5)
    /// The current rendition of an edited video.
    public static let fullSizeVideo = ResourceType(rawValue: 6)
    /// The adjustment data of an edit.
    public static let adjustmentData = ResourceType(rawValue: 7)
    /// The motion part of a Live Photo.
    public static let pairedVideo = ResourceType(rawValue: 9)

    public var description: String {
        switch self {
        case .photo: return "photo"
        case .video: return "video"
        case .audio: return "audio"
        case .alternatePhoto: return "alternatePhoto"
        case .fullSizePhoto: return "fullSizePhoto"
        case .fullSizeVideo: return "fullSizeVideo"
        case .adjustmentData: return "adjustmentData"
        case .pairedVideo: return "pairedVideo"
        default: return "type\(rawValue)"
        }
    }
}

/// One stored file of an asset.
public struct AssetResource: Sendable, Hashable {
    /// The role of the file.
    public var type: ResourceType
    /// Lowercase hex SHA-256 of the bytes: the file's name in the resource store.
    public var sha256: String
    /// The size in bytes.
    public var size: Int64
    /// The uniform type identifier, such as `public.jpeg`.
    public var uniformTypeIdentifier: String
    /// The file name the resource was created from.
    public var originalFilename: String

    /// Creates a resource description.
    public init(type: ResourceType, sha256: String, size: Int64, uniformTypeIdentifier: String, originalFilename: String) {
        self.type = type
        self.sha256 = sha256
        self.size = size
        self.uniformTypeIdentifier = uniformTypeIdentifier
        self.originalFilename = originalFilename
    }
}

/// A photo, video or other media item of the library: an immutable snapshot of its properties
/// at the time it was fetched. Change it with ``AssetChangeRequest`` inside a change block.
public struct Asset: Hashable, Sendable, ObjectReference, CustomStringConvertible {
    /// The asset's UUID, the same on every device.
    public let id: UUID
    /// The asset's local identifier (`<UUID>/L0/001`).
    public var localIdentifier: String { LocalIdentifier(uuid: id, kind: .asset).description }
    /// The kind of media.
    public let mediaType: AssetMediaType
    /// Further details of the media.
    public let mediaSubtypes: MediaSubtypes
    /// Width in pixels.
    public let pixelWidth: Int
    /// Height in pixels.
    public let pixelHeight: Int
    /// Duration in seconds (0 for images).
    public let duration: Double
    /// When the photo or video was taken.
    public let creationDate: Date?
    /// When the asset was last changed on any device.
    public let modificationDate: Date
    /// When the asset was added to the library.
    public let addedDate: Date
    /// Where the photo or video was taken.
    public let location: Location?
    /// Whether the user marked it as a favorite.
    public let isFavorite: Bool
    /// Whether the user hid it.
    public let isHidden: Bool
    /// Whether it is in Recently Deleted.
    public let isDeleted: Bool
    /// When it was moved to Recently Deleted, if it is there.
    public let deletionDate: Date?
    /// The device that created it.
    public let sourceDevice: DeviceID
    /// Whether it has a content edit.
    public let hasAdjustments: Bool
    /// The identifier of the burst the photo belongs to (nil: not a burst photo).
    public internal(set) var burstIdentifier: String? = nil
    /// How the photo was selected within its burst.
    public internal(set) var burstSelectionTypes: BurstSelectionTypes = []
    /// Whether the photo is its burst's representative: the one fetches return for the burst
    /// unless ``FetchOptions/includeAllBurstAssets`` is set. The representative is the burst's
    /// first photo (by creation date, then identifier) not in Recently Deleted that the user
    /// picked; without a user pick, the first the camera picked; without either, the first.
    public internal(set) var representsBurst = false
    /// The asset's modification clock value when read: what change details compare.
    var version: Int64 = 0

    /// Hashes the identifier only: snapshots of one asset hash alike; `==` compares every property.
    public func hash(into hasher: inout Hasher) { hasher.combine(id) }

    public var description: String { "Asset(\(localIdentifier), \(mediaType), \(pixelWidth)×\(pixelHeight))" }
}

/// The kind of a collection (PhotoKit's raw values).
public enum CollectionType: Int, Sendable, Hashable {
    /// An album made by the user or an app.
    case album = 1
    /// A smart album computed from asset properties.
    case smartAlbum = 2
}

/// The subtype of a collection (PhotoKit's raw values where PhotoKit has one).
public struct CollectionSubtype: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// A regular album.
    public static let albumRegular = CollectionSubtype(rawValue: 2)
    /// Every video.
    public static let smartAlbumVideos = CollectionSubtype(rawValue: 202)
    /// Every favorite.
    public static let smartAlbumFavorites = CollectionSubtype(rawValue: 203)
    /// Every hidden asset (PhotoKit's `smartAlbumAllHidden`): the one place hidden assets are
    /// listed without asking for them.
    public static let smartAlbumAllHidden = CollectionSubtype(rawValue: 205)
    /// Assets added in the last 30 days.
    public static let smartAlbumRecentlyAdded = CollectionSubtype(rawValue: 206)
    /// Live Photos: photos created with a paired video.
    public static let smartAlbumLivePhotos = CollectionSubtype(rawValue: 213)
    /// Animated images (GIF, animated WebP).
    public static let smartAlbumAnimated = CollectionSubtype(rawValue: 214)
    /// Panoramas (``MediaSubtypes/photoPanorama``).
    public static let smartAlbumPanoramas = CollectionSubtype(rawValue: 201)
    /// Bursts: each burst's representative (all of their photos with
    /// ``FetchOptions/includeAllBurstAssets``).
    public static let smartAlbumBursts = CollectionSubtype(rawValue: 207)
    /// Selfies (``MediaSubtypes/photoSelfPortrait``).
    public static let smartAlbumSelfPortraits = CollectionSubtype(rawValue: 210)
    /// Screenshots (``MediaSubtypes/photoScreenshot``).
    public static let smartAlbumScreenshots = CollectionSubtype(rawValue: 211)
    /// All Photos: every asset not deleted or hidden.
    public static let smartAlbumUserLibrary = CollectionSubtype(rawValue: 209)
    /// Recently Deleted (PhotoKit has no public subtype for it).
    public static let smartAlbumRecentlyDeleted = CollectionSubtype(rawValue: 1_000_000_201)
    /// Matches every subtype in a fetch.
    public static let any = CollectionSubtype(rawValue: Int.max)

    /// The smart albums every library has.
    public static let smartAlbums: [CollectionSubtype] = [
        .smartAlbumUserLibrary, .smartAlbumFavorites, .smartAlbumRecentlyAdded, .smartAlbumVideos, .smartAlbumRecentlyDeleted,
        .smartAlbumAllHidden, .smartAlbumLivePhotos, .smartAlbumAnimated, .smartAlbumPanoramas, .smartAlbumBursts,
        .smartAlbumSelfPortraits, .smartAlbumScreenshots,
    ]

    public var description: String {
        switch self {
        case .albumRegular: return "albumRegular"
        case .smartAlbumVideos: return "smartAlbumVideos"
        case .smartAlbumFavorites: return "smartAlbumFavorites"
        case .smartAlbumRecentlyAdded: return "smartAlbumRecentlyAdded"
        case .smartAlbumUserLibrary: return "smartAlbumUserLibrary"
        case .smartAlbumRecentlyDeleted: return "smartAlbumRecentlyDeleted"
        case .smartAlbumAllHidden: return "smartAlbumAllHidden"
        case .smartAlbumLivePhotos: return "smartAlbumLivePhotos"
        case .smartAlbumAnimated: return "smartAlbumAnimated"
        case .smartAlbumPanoramas: return "smartAlbumPanoramas"
        case .smartAlbumBursts: return "smartAlbumBursts"
        case .smartAlbumSelfPortraits: return "smartAlbumSelfPortraits"
        case .smartAlbumScreenshots: return "smartAlbumScreenshots"
        case .any: return "any"
        default: return "subtype\(rawValue)"
        }
    }

    var smartAlbumTitle: String {
        switch self {
        case .smartAlbumVideos: return "Videos"
        case .smartAlbumFavorites: return "Favorites"
        case .smartAlbumRecentlyAdded: return "Recently Added"
        case .smartAlbumUserLibrary: return "All Photos"
        case .smartAlbumRecentlyDeleted: return "Recently Deleted"
        case .smartAlbumAllHidden: return "Hidden"
        case .smartAlbumLivePhotos: return "Live Photos"
        case .smartAlbumAnimated: return "Animated"
        case .smartAlbumPanoramas: return "Panoramas"
        case .smartAlbumBursts: return "Bursts"
        case .smartAlbumSelfPortraits: return "Selfies"
        case .smartAlbumScreenshots: return "Screenshots"
        default: return "Smart Album"
        }
    }

    /// The fixed identifier of a smart album, the same in every library.
    var smartAlbumID: UUID { UUID.named("smart-album/\(rawValue)", in: PhotoLibrary.namespace) }
}

/// An album or smart album: an immutable snapshot. Fetch its assets with
/// ``PhotoLibrary/fetchAssets(in:options:)``.
public struct AssetCollection: Hashable, Sendable, ObjectReference, CustomStringConvertible {
    /// The album's UUID, the same on every device.
    public let id: UUID
    /// The album's local identifier (`<UUID>/L0/040`).
    public var localIdentifier: String { LocalIdentifier(uuid: id, kind: .album).description }
    /// Album or smart album.
    public let collectionType: CollectionType
    /// The subtype.
    public let subtype: CollectionSubtype
    /// The title.
    public let title: String
    /// PhotoKit's name for ``title``.
    public var localizedTitle: String { title }
    /// The number of assets when fetched (an estimate, as in PhotoKit: use a fetch for the exact count).
    public let estimatedAssetCount: Int
    /// When the album was created (nil for smart albums).
    public let creationDate: Date?
    /// When the album was last changed on any device.
    public let modificationDate: Date?
    /// The device that created it (nil for smart albums).
    public let sourceDevice: DeviceID?

    /// Hashes the identifier only: snapshots of one album hash alike; `==` compares every property.
    public func hash(into hasher: inout Hasher) { hasher.combine(id) }

    public var description: String { "AssetCollection(\(localIdentifier), \"\(title)\")" }
}

extension HLCTimestamp {
    var dateValue: Date { Date(timeIntervalSince1970: Double(milliseconds) / 1000) }
}
