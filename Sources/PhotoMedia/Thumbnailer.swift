import CMediaDecoding
import Foundation

/// Renditions of photos and videos, made with libvips' thumbnailer: a still is decoded with
/// shrink-on-load (JPEG's DCT scaling decodes a 12-megapixel photo at a quarter or an eighth of
/// its size, WebP decodes scaled, a HEIF uses its embedded thumbnail when it is large enough),
/// turned upright by its EXIF orientation, converted to sRGB when it carries a colour profile,
/// scaled and encoded; a movie's poster frame is its first decodable frame, decoded by FFmpeg,
/// turned by its display matrix and scaled by libvips. The result is a JPEG, or a PNG when the
/// picture has transparent pixels, without metadata (see ``Rendition``).
///
/// Several scales of one source are made from one decode where they can be: the largest first,
/// the others scaled down from it when it holds enough pixels for them.
public enum Thumbnailer {
    /// The JPEG quality of renditions.
    public static let quality = 85

    /// The renditions of the photo or video in the file at `url`, one per scale, in the order of
    /// `scales`. `invalidResource` when the file is no photo or video the decoders read,
    /// `missingResource` when it does not exist.
    public static func renditions(ofFileAt url: URL, scales: [RenditionScale]) throws(MediaError) -> [Rendition] {
        let name = url.lastPathComponent
        let (descriptor, _) = try FileIO.openRegularFile(url, name: name)
        var header = [UInt8](repeating: 0, count: MediaFormat.headerLength)
        let count = header.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, 0) }
        close(descriptor)
        guard let format = MediaFormat.detect(header: header.prefix(max(0, count))) else {
            throw MediaError(.invalidResource, resource: name, reason: "not a photo or video, so it has no rendition", refusal: .notMedia)
        }
        if format.mediaType == .video {
            return try make(scales, name: name) { scale in try MovieDecoder.posterFrame(path: url.path, format: format, scale: scale) }
        }
        let bytes: Data
        do { bytes = try Data(contentsOf: url) } catch {
            throw MediaError(.invalidResource, resource: name, reason: "unreadable (\(error.localizedDescription))", refusal: .unreadable)
        }
        return try renditions(ofStill: bytes, name: name, scales: scales)
    }

    /// The renditions of the encoded still in `bytes` (any supported still format; an
    /// animation's first frame), one per scale, in the order of `scales`; `name` appears in
    /// errors.
    public static func renditions(ofStill bytes: Data, name: String, scales: [RenditionScale]) throws(MediaError) -> [Rendition] {
        // The bytes may come from another device, unchecked by an import here: libpng must not
        // see a chunk that declares more than they hold (see `StillImageDecoder`).
        var checked = MediaFormat.detect(header: [UInt8](bytes.prefix(MediaFormat.headerLength))) != .png
        return try make(scales, name: name) { scale in
            if !checked {
                try StillImageDecoder.checkPNGChunkLengths(bytes)
                checked = true
            }
            return try thumbnail(bytes, scale: scale)
        }
    }

    /// One rendition per scale: the scales that need the most pixels first, each scaled down from
    /// the smallest picture made so far that covers it (`start`, a picture decoded already, among
    /// them), or decoded from the source by `decode` when none does.
    static func make(
        _ scales: [RenditionScale], start: Picture? = nil, name: String, decode: (RenditionScale) throws -> Picture
    ) throws(MediaError) -> [Rendition] {
        do {
            var pictures = start.map { [$0] } ?? []
            var made: [RenditionScale: Rendition] = [:]
            for scale in Set(scales).sorted(by: { $0.precedes($1) }) {
                let picture: Picture
                if let larger = pictures.filter({ $0.covers(scale) }).min(by: { $0.width * $0.height < $1.width * $1.height }) {
                    picture = try larger.scaled(to: scale)
                } else {
                    picture = try decode(scale)
                }
                pictures.append(picture)
                made[scale] = try picture.encoded(as: scale, quality: quality)
            }
            return scales.map { made[$0]! }
        } catch let error as InvalidMedia {
            throw MediaError(.invalidResource, resource: name, reason: "no rendition: \(error.reason)", refusal: error.refusal)
        } catch {
            throw MediaError(.invalidResource, resource: name, reason: "no rendition: \(error)", refusal: .damaged)
        }
    }

    /// libvips' thumbnailer on encoded still bytes.
    private static func thumbnail(_ bytes: Data, scale: RenditionScale) throws(InvalidMedia) -> Picture {
        var picture: OpaquePointer?
        var message = [CChar](repeating: 0, count: 512)
        let status = bytes.withUnsafeBytes { buffer in
            photoledger_picture_thumbnail(buffer.baseAddress, buffer.count, scale.c, &picture, &message, message.count)
        }
        guard status == 0, let picture else { throw InvalidMedia("libvips' thumbnailer refused it (\(Picture.text(message)))") }
        return Picture(picture, madeFor: scale)
    }
}
