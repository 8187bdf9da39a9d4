import CMediaDecoding
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
///
/// Whatever the file, the values stay within what an asset's events may record: sides of 1 to
/// 2^20 pixels (and at most 2^28 pixels a frame: larger media are refused), a duration of 0 to
/// 10^9 seconds (0 when unknown or beyond), a date within the years 1 to 9999, a valid location
/// (`Location.isValid`).
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
    /// How the photo was taken, as its metadata says (screenshot, selfie, panorama, burst).
    public var capture = CaptureMetadata()

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

extension MediaInfo {
    /// The most pixels along one side of a photo or video.
    package static let largestSide = Int(PHOTOLEDGER_MAX_SIDE)
    /// The most pixels in one frame of a photo or video.
    package static let largestFrame = Int(PHOTOLEDGER_MAX_PIXELS)
    /// The longest duration a movie is read with, in seconds (about 31 years): a container that
    /// claims more gives a duration of 0, unknown.
    package static let longestDuration = 1e9
    /// The dates a file's metadata may give, in seconds since 1970: the years 1 to 9999 (UTC).
    package static let dateRange = -62_135_596_800.0...253_402_300_799.0

    /// Why media of `width × height` pixels, more than ``largestFrame`` or a side of more than
    /// ``largestSide``, is refused.
    static func tooLarge(_ format: MediaFormat, width: Int, height: Int) -> InvalidMedia {
        InvalidMedia(
            "a \(format.name) of \(width) × \(height) pixels is larger than supported (at most \(largestFrame / 1_000_000) megapixels "
                + "a frame, \(largestSide) pixels a side); scale it down to import it", .notMedia)
    }

    /// Whether media of `width × height` pixels is within ``largestFrame`` and ``largestSide``.
    static func fits(width: Int, height: Int) -> Bool {
        width <= largestSide && height <= largestSide && width * height <= largestFrame
    }
}
