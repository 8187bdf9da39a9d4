import Foundation
import LedgerCore

/// How the stored pixels are turned to be shown upright, as the EXIF `Orientation` tag (and
/// Apple's `CGImagePropertyOrientation`) numbers it: the raw value is the EXIF value.
public enum ImageOrientation: Int, Sendable, Hashable, CaseIterable {
    /// Shown as stored (EXIF 1).
    case up = 1
    /// Mirrored left to right (EXIF 2).
    case upMirrored = 2
    /// Turned half a turn (EXIF 3).
    case down = 3
    /// Mirrored top to bottom (EXIF 4).
    case downMirrored = 4
    /// Mirrored along the main diagonal (EXIF 5).
    case leftMirrored = 5
    /// Turned a quarter turn clockwise to be shown (EXIF 6; a phone held upright).
    case right = 6
    /// Mirrored along the other diagonal (EXIF 7).
    case rightMirrored = 7
    /// Turned a quarter turn counter-clockwise to be shown (EXIF 8).
    case left = 8

    /// Whether showing the picture swaps its width and height (EXIF 5 to 8).
    public var swapsWidthAndHeight: Bool { rawValue >= 5 }

    /// The orientation of a video whose display matrix turns it `degrees` clockwise (0, 90,
    /// 180 or 270, after rounding to the nearest quarter turn).
    public init(clockwiseRotation degrees: Double) {
        let quarterTurns = ((Int((degrees / 90).rounded()) % 4) + 4) % 4
        self = [.up, .right, .down, .left][quarterTurns]
    }
}

/// What the bytes of a photo or video say about it: the values PhotoKit sets on a new asset.
///
/// Sizes follow one convention for every format, PhotoKit's: `pixelWidth` and `pixelHeight` are
/// the picture as shown, its orientation applied (EXIF orientation for stills, the HEIF
/// rotation, a video's display matrix), counted in stored pixels (an anamorphic video's
/// sample aspect ratio does not stretch them).
public struct MediaInfo: Sendable, Hashable {
    /// The container format, detected from the bytes.
    public var format: MediaFormat
    /// Width in pixels as shown, orientation applied.
    public var pixelWidth: Int
    /// Height in pixels as shown, orientation applied.
    public var pixelHeight: Int
    /// How the stored picture is turned to be shown: a still's EXIF orientation (for HEIC and
    /// AVIF, the `irot`/`imir` transform, which the decoder applies), a video's display matrix.
    public var orientation: ImageOrientation
    /// Seconds, for videos; nil for images.
    public var duration: Double?
    /// When the picture was taken: EXIF DateTimeOriginal, else DateTimeDigitized, else DateTime
    /// (read as UTC unless the file records its offset); for videos the container's creation
    /// time.
    public var creationDate: Date?
    /// Where the picture was taken: EXIF GPS tags, or a movie's ISO 6709 location.
    public var location: Location?
    /// Whether the image has more than one frame (animated GIF, animated WebP).
    public var isAnimated: Bool

    /// Image or video.
    public var mediaType: MediaType { format.mediaType }

    /// Creates a description of a resource.
    public init(
        format: MediaFormat, pixelWidth: Int, pixelHeight: Int, orientation: ImageOrientation = .up, duration: Double? = nil,
        creationDate: Date? = nil, location: Location? = nil, isAnimated: Bool = false
    ) {
        self.format = format
        self.pixelWidth = pixelWidth
        self.pixelHeight = pixelHeight
        self.orientation = orientation
        self.duration = duration
        self.creationDate = creationDate
        self.location = location
        self.isAnimated = isAnimated
    }
}
