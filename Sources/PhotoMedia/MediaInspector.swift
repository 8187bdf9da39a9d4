import Foundation
import LedgerCore

/// Recognises photos and videos from their bytes, validates them by decoding them with the
/// field's own decoders, and reads the metadata PhotoKit sets on a new asset: format, pixel size
/// as shown, orientation, duration, creation date, location, animation.
///
/// The format comes from the bytes, never the file name (a PNG named `.jpg` is a PNG). Stills
/// are decoded by libvips (libjpeg, libpng, libnsgif, libwebp, libheif), every pixel of every
/// frame, JPEG and WebP at an eighth of their size (which still reads all of the compressed
/// data); movies by FFmpeg, which must find a video stream and decode its first frame, and
/// whose index must lie within the file. The article *Validation* in the catalog says what each
/// format's check catches. A file that the decoder finds truncated is refused, in every format
/// alike: its end was lost, usually in a copy that did not finish, and importing it would make
/// the damaged bytes the original for good.
///
/// Every failure is a `MediaError` naming the resource: `missingResource` when the file does not
/// exist, `invalidResource` otherwise, with a ``MediaError/Refusal`` saying whether the bytes are
/// not media at all, damaged, or the path not a readable regular file. No input makes it trap,
/// and a FIFO or device never blocks it.
public enum MediaInspector {
    /// Inspects the file at `url`; errors name the file by its last path component.
    public static func inspect(fileAt url: URL) throws(MediaError) -> MediaInfo {
        try inspect(path: url.path, name: url.lastPathComponent)
    }

    /// Inspects bytes in memory; `name` (a file name, or a description such as "image data")
    /// appears in errors. The decoders read files, so the bytes are written to a temporary file
    /// first.
    public static func inspect(_ bytes: some Collection<UInt8>, name: String) throws(MediaError) -> MediaInfo {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("photomedia-\(UUID().uuidString)").path
        let descriptor = try FileIO.open(path, O_WRONLY | O_CREAT | O_EXCL, mode: 0o600, name: name)
        defer { unlink(path) }
        let array = Array(bytes)
        let written = array.withUnsafeBytes { buffer -> MediaError? in
            do throws(MediaError) { try FileIO.write(descriptor, buffer, name: name) } catch { return error }
            return nil
        }
        close(descriptor)
        if let written { throw written }
        return try inspect(path: path, name: name)
    }

    /// Inspects the file at `path`, naming it `name` in errors.
    static func inspect(path: String, name: String) throws(MediaError) -> MediaInfo {
        try inspect(path: path, name: name, preview: 0).info
    }

    /// Inspects the file at `path` and makes the renditions of `scales` that the validation's own
    /// decode can give: a JPEG's or WebP's, decoded reduced to validate it, when the reduced
    /// picture holds enough pixels for them. The others (other formats, larger scales) are left
    /// out: they need a decode of their own.
    static func inspect(path: String, name: String, renditions scales: [RenditionScale]) throws(MediaError) -> (MediaInfo, [Rendition]) {
        let preview = scales.compactMap(\.size).max() ?? 0
        let (info, picture) = try inspect(path: path, name: name, preview: preview)
        guard let picture else { return (info, []) }
        let covered = scales.filter { picture.covers($0) }
        return (info, try Thumbnailer.make(covered, start: picture, name: name) { _ in picture })
    }

    /// Inspects the file at `path`; with `preview` > 0, also hands out a JPEG's or WebP's
    /// decoded picture (see `StillImageDecoder.inspect(path:format:preview:)`).
    private static func inspect(path: String, name: String, preview: Int) throws(MediaError) -> (info: MediaInfo, preview: Picture?) {
        let (descriptor, status) = try FileIO.openRegularFile(URL(fileURLWithPath: path), name: name)
        var header = [UInt8](repeating: 0, count: MediaFormat.headerLength)
        let count = header.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, 0) }
        close(descriptor)
        guard count >= 0 else {
            throw MediaError(.invalidResource, resource: name, reason: "unreadable (\(FileIO.lastError()))", refusal: .unreadable)
        }
        guard status.st_size > 0 else {
            throw MediaError(
                .invalidResource, resource: name, reason: "empty file (0 bytes); copy it again from its source", refusal: .damaged)
        }
        let format: MediaFormat
        switch MediaFormat.identify(header: Array(header.prefix(count))) {
        case .supported(let supported): format = supported
        case .recognised(let description):
            throw MediaError(.invalidResource, resource: name, reason: "\(description) is not supported; \(supported)", refusal: .notMedia)
        case .unknown:
            throw MediaError(.invalidResource, resource: name, reason: "not a photo or video; \(supported)", refusal: .notMedia)
        }
        do {
            if format.mediaType == .video { return (try MovieDecoder.inspect(path: path, format: format), nil) }
            return try StillImageDecoder.inspect(path: path, format: format, preview: preview)
        } catch let error as InvalidMedia {
            let hint = "copy the file again from its source"
            let reason = error.refusal == .damaged && !error.reason.contains(hint) ? "\(error.reason); \(hint)" : error.reason
            throw MediaError(.invalidResource, resource: name, reason: reason, refusal: error.refusal)
        } catch {
            throw MediaError(.invalidResource, resource: name, reason: "unreadable (\(error))", refusal: .unreadable)
        }
    }

    private static let supported = "supported: JPEG, PNG, GIF, WebP, HEIC, AVIF, MP4 and QuickTime"
}

/// The readers of metadata text and blocks that ``MediaInspector/inspect(_:name:)`` applies to what
/// the decoders hand it, for tools that feed them bytes from elsewhere, such as the media fuzzer
/// (`Tools/Fuzz`, target `media`).
extension MediaInspector {
    /// The creation date and location in an EXIF payload (with or without its `Exif\0\0`
    /// header), read as ``inspect(_:name:)`` reads the EXIF of a container; nil fields when the
    /// payload lacks them or cannot be read.
    package static func exifMetadata(_ payload: [UInt8]) -> (creationDate: Date?, location: Location?) {
        let metadata = Exif.metadata(from: payload)
        return (metadata.creationDate, metadata.location)
    }

    /// The EXIF payload of a PNG `Raw profile type exif` text, as a PNG without `eXIf` keeps it;
    /// nil when the text is not such a profile.
    package static func exifPayload(textProfile text: String) -> [UInt8]? {
        Exif.payload(fromTextProfile: text)
    }

    /// A date as EXIF (`2015:06:29 18:19:12` with an `OffsetTime*` tag) or a movie's metadata
    /// (ISO 8601) writes it; nil when the text is not one.
    package static func date(text: String, offset: String?) -> Date? {
        Exif.date(text: text, offset: offset)
    }

    /// A movie's ISO 6709 location (`+48.8583+002.2945+035.000/`); nil when the text is not one.
    package static func location(iso6709 text: String) -> Location? {
        ISO6709.location(text)
    }
}
