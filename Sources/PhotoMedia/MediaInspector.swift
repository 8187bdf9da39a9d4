import Foundation
import LedgerCore

/// Recognises and validates photos and videos from their bytes and reads the metadata PhotoKit
/// sets on a new asset: format, pixel size, duration, creation date, location, animation.
///
/// The format comes from the bytes, never the file name (a PNG named `.jpg` is a PNG). Files are
/// read by seeking: only headers, `moov`/`meta` boxes and EXIF segments are loaded, so inspecting
/// a large video costs a few small reads. Every failure is a `MediaError` naming the resource:
/// `missingResource` when the file does not exist, `invalidResource` (empty, truncated,
/// unreadable, unsupported) otherwise. No input makes it trap.
public enum MediaInspector {
    /// Inspects the file at `url`; errors name the file by its last path component.
    public static func inspect(fileAt url: URL) throws(MediaError) -> MediaInfo {
        let name = url.lastPathComponent
        let source = try FileByteSource(path: url.path, name: name)
        return try inspect(source, name: name)
    }

    /// Inspects bytes in memory; `name` (a file name, or a description such as "image data")
    /// appears in errors.
    public static func inspect(_ bytes: some Collection<UInt8>, name: String) throws(MediaError) -> MediaInfo {
        try inspect(MemoryByteSource(bytes: Array(bytes)), name: name)
    }

    static func inspect(_ source: ByteSource, name: String) throws(MediaError) -> MediaInfo {
        guard source.count > 0 else { throw MediaError(.invalidResource, resource: name, reason: "empty file") }
        do {
            let header = try source.read(at: 0, length: MediaFormat.headerLength)
            guard let format = MediaFormat.detect(header: header) else {
                throw InvalidMedia("unsupported format (\(describeUnsupported(header)))")
            }
            return try inspect(source, format: format)
        } catch let error as InvalidMedia {
            throw MediaError(.invalidResource, resource: name, reason: error.reason)
        } catch {
            throw MediaError(.invalidResource, resource: name, reason: "unreadable (\(error))")
        }
    }

    private static func inspect(_ source: ByteSource, format: MediaFormat) throws -> MediaInfo {
        let image: ImageParsers.Result
        switch format {
        case .jpeg: image = try ImageParsers.jpeg(source)
        case .png: image = try ImageParsers.png(source)
        case .gif: image = try ImageParsers.gif(source)
        case .webp: image = try ImageParsers.webp(source)
        case .heic:
            let heif = try ISOBaseMedia.heif(source)
            image = ImageParsers.Result(width: heif.width, height: heif.height, exif: heif.exif)
        case .mp4, .quickTime:
            let movie = try ISOBaseMedia.movie(source, kind: format == .mp4 ? "MP4" : "QuickTime movie")
            return MediaInfo(
                format: format, pixelWidth: movie.width, pixelHeight: movie.height, duration: movie.duration,
                creationDate: movie.creationDate)
        }
        var info = MediaInfo(format: format, pixelWidth: image.width, pixelHeight: image.height, isAnimated: image.isAnimated)
        if let exif = image.exif {
            (info.creationDate, info.location) = Exif.metadata(from: exif)
        }
        return info
    }

    /// A short description of bytes that are not a supported format, naming common look-alikes.
    private static func describeUnsupported(_ header: [UInt8]) -> String {
        let known: [([UInt8], Int, String)] = [
            ([0x1A, 0x45, 0xDF, 0xA3], 0, "a Matroska/WebM video"),
            (Array("ftypavif".utf8), 4, "an AVIF image"),
            (Array("II*".utf8) + [0], 0, "a TIFF or RAW image"),
            (Array("MM".utf8) + [0, 0x2A], 0, "a TIFF or RAW image"),
            (Array("BM".utf8), 0, "a BMP image"),
            (Array("%PDF".utf8), 0, "a PDF document"),
            (Array("PK".utf8) + [3, 4], 0, "a ZIP archive"),
            (Array("RIFF".utf8), 0, "a RIFF file that is not WebP (AVI or WAV)"),
        ]
        for (signature, offset, description) in known
        where header.count >= offset + signature.count && Array(header[offset..<offset + signature.count]) == signature {
            return "looks like \(description); supported: JPEG, PNG, GIF, HEIC, WebP, MP4, QuickTime"
        }
        return "not JPEG, PNG, GIF, HEIC, WebP, MP4 or QuickTime"
    }
}

extension MediaInspector {
    /// The creation date and location in an EXIF payload (with or without its `Exif\0\0`
    /// header), read as ``inspect(_:name:)`` reads the EXIF of a container; nil fields when the
    /// payload lacks them or cannot be read. For tools that feed the reader EXIF from elsewhere,
    /// such as the media fuzzer (`Tools/Fuzz`, target `media`).
    package static func exifMetadata(_ payload: [UInt8]) -> (creationDate: Date?, location: Location?) {
        Exif.metadata(from: payload)
    }
}
