import Foundation
import LedgerCore

/// What the bytes of a photo or video say about it: the values PhotoKit sets on a new asset.
public struct MediaInfo: Sendable, Hashable {
    /// The container format, detected from the bytes.
    public var format: MediaFormat
    /// Width in pixels as displayed (HEIC rotation and video track matrices applied).
    public var pixelWidth: Int
    /// Height in pixels as displayed.
    public var pixelHeight: Int
    /// Seconds, for videos; nil for images.
    public var duration: Double?
    /// When the picture was taken: EXIF DateTimeOriginal, else DateTime (read as UTC unless the
    /// file records its offset); for videos the movie header's creation time, when set.
    public var creationDate: Date?
    /// Where the picture was taken, from EXIF GPS tags.
    public var location: Location?
    /// Whether the image has more than one frame (animated GIF, animated WebP, APNG).
    public var isAnimated: Bool

    /// Image or video.
    public var mediaType: MediaType { format.mediaType }

    /// Creates a description of a resource.
    public init(
        format: MediaFormat, pixelWidth: Int, pixelHeight: Int, duration: Double? = nil, creationDate: Date? = nil,
        location: Location? = nil, isAnimated: Bool = false
    ) {
        self.format = format
        self.pixelWidth = pixelWidth
        self.pixelHeight = pixelHeight
        self.duration = duration
        self.creationDate = creationDate
        self.location = location
        self.isAnimated = isAnimated
    }
}
