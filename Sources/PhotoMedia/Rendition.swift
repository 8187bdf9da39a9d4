import CMediaDecoding

/// How a rendition is scaled from its source: into a square box of `size` pixels, without
/// cropping and never enlarged, PhotoKit's content modes. `size` nil keeps the full size (the
/// picture only turned upright and re-encoded).
public struct RenditionScale: Hashable, Sendable, CustomStringConvertible {
    /// How the picture meets the box.
    public enum Mode: String, Hashable, Sendable, CaseIterable {
        /// Scaled to fit inside the box: its longer side becomes the box's side.
        case fit
        /// Scaled to cover the box: its shorter side becomes the box's side (PhotoKit's aspect
        /// fill, which does not crop either: whoever shows it crops).
        case fill
    }

    /// The side of the square box in pixels (at least 1), or nil for the full size.
    public var size: Int?
    /// Fit or fill.
    public var mode: Mode

    /// A scale into a box of `size` pixels (nil: the full size).
    public init(size: Int?, mode: Mode) {
        self.size = size.map { max(1, $0) }
        self.mode = mode
    }

    /// `256-fit`, `1024-fill`, `full`.
    public var description: String { size.map { "\($0)-\(mode.rawValue)" } ?? "full" }

    /// The scale in C.
    var c: photoledger_scale { photoledger_scale(size: Int32(clamping: size ?? 0), fill: mode == .fill ? 1 : 0) }

    /// Whether a rendition of this scale needs more pixels than one of `other` (so that it can
    /// be made first and the other scaled from it): the full size before every box, a larger
    /// box before a smaller one, fill before fit for the same box.
    public func precedes(_ other: RenditionScale) -> Bool {
        switch (size, other.size) {
        case (nil, nil): return false
        case (nil, _): return true
        case (_, nil): return false
        case (let mine?, let theirs?): return mine != theirs ? mine > theirs : mode == .fill && other.mode == .fit
        }
    }
}

/// A photo or video's picture scaled, turned upright and encoded: a JPEG, or a PNG when the
/// picture has transparent pixels; without metadata, colours in sRGB.
public struct Rendition: Sendable, Hashable {
    /// The scale it was made for.
    public var scale: RenditionScale
    /// The encoded bytes.
    public var bytes: [UInt8]
    /// Width in pixels, upright.
    public var pixelWidth: Int
    /// Height in pixels, upright.
    public var pixelHeight: Int
    /// `.jpeg` or `.png`.
    public var format: MediaFormat

    /// Describes an encoded rendition.
    public init(scale: RenditionScale, bytes: [UInt8], pixelWidth: Int, pixelHeight: Int, format: MediaFormat) {
        self.scale = scale
        self.bytes = bytes
        self.pixelWidth = pixelWidth
        self.pixelHeight = pixelHeight
        self.format = format
    }

    /// Reads back a rendition's encoded bytes (as a cache keeps them): a JPEG or PNG that is
    /// whole (a JPEG ends with its EOI marker, a PNG with its IEND chunk), its size read from its
    /// header. `invalidResource` when the bytes are not such an image, which is what a rendition
    /// file cut short by a crash looks like.
    public init(encoded bytes: [UInt8], scale: RenditionScale) throws(MediaError) {
        let pngEnd: [UInt8] = [0x49, 0x45, 0x4E, 0x44, 0xAE, 0x42, 0x60, 0x82]
        let format: MediaFormat
        switch MediaFormat.detect(header: bytes.prefix(MediaFormat.headerLength)) {
        case .jpeg where bytes.count > 4 && bytes.suffix(2).elementsEqual([0xFF, 0xD9]): format = .jpeg
        case .png where bytes.count > 16 && bytes.suffix(8).elementsEqual(pngEnd): format = .png
        default:
            throw MediaError(.invalidResource, resource: "rendition \(scale)", reason: "not a whole JPEG or PNG", refusal: .damaged)
        }
        var width: Int32 = 0, height: Int32 = 0
        var message = [CChar](repeating: 0, count: 512)
        let status = bytes.withUnsafeBytes { photoledger_image_size($0.baseAddress, $0.count, &width, &height, &message, message.count) }
        guard status == 0, width > 0, height > 0 else {
            throw MediaError(
                .invalidResource, resource: "rendition \(scale)", reason: "unreadable header (\(Picture.text(message)))", refusal: .damaged)
        }
        self.init(scale: scale, bytes: bytes, pixelWidth: Int(width), pixelHeight: Int(height), format: format)
    }
}

/// A picture decoded by libvips and held in memory, upright: the one owner of its C handle.
final class Picture {
    let handle: OpaquePointer
    let width: Int
    let height: Int
    /// Whether the picture is the whole source, unscaled: it then covers every scale.
    let isComplete: Bool

    /// Takes ownership of `handle`; `complete` says, from the picture's size, whether it is the
    /// source at its full size.
    init(_ handle: OpaquePointer, complete: (_ width: Int, _ height: Int) -> Bool) {
        self.handle = handle
        var width: Int32 = 0, height: Int32 = 0, alpha: Int32 = 0
        photoledger_picture_describe(handle, &width, &height, &alpha)
        self.width = Int(width)
        self.height = Int(height)
        isComplete = complete(Int(width), Int(height))
    }

    /// Takes ownership of a picture the thumbnailer made for `scale` from the source: complete
    /// when `scale` is the full size, or when the source was too small to be scaled down into it.
    convenience init(_ handle: OpaquePointer, madeFor scale: RenditionScale) {
        self.init(handle) { width, height in
            guard let size = scale.size else { return true }
            return scale.mode == .fit ? max(width, height) < size : min(width, height) < size
        }
    }

    deinit { photoledger_picture_free(handle) }

    /// Whether a rendition of `scale` can be scaled down from this picture without losing detail.
    func covers(_ scale: RenditionScale) -> Bool {
        if isComplete { return true }
        guard let size = scale.size else { return false }
        return scale.mode == .fit ? max(width, height) >= size : min(width, height) >= size
    }

    /// This picture scaled down into `scale`'s box.
    func scaled(to scale: RenditionScale) throws(InvalidMedia) -> Picture {
        var result: OpaquePointer?
        var message = [CChar](repeating: 0, count: 512)
        guard photoledger_picture_scaled(handle, scale.c, &result, &message, message.count) == 0, let result else {
            throw InvalidMedia("libvips could not scale the picture (\(Picture.text(message)))")
        }
        let (complete, width, height) = (isComplete, self.width, self.height)
        return Picture(result) { complete && $0 == width && $1 == height }
    }

    /// The picture encoded for `scale`.
    func encoded(as scale: RenditionScale, quality: Int) throws(InvalidMedia) -> Rendition {
        var bytes: UnsafeMutablePointer<UInt8>?
        var length = 0
        var isPNG: Int32 = 0
        var message = [CChar](repeating: 0, count: 512)
        guard photoledger_picture_encode(handle, Int32(quality), &bytes, &length, &isPNG, &message, message.count) == 0, let bytes else {
            throw InvalidMedia("libvips could not encode the rendition (\(Picture.text(message)))")
        }
        defer { photoledger_bytes_free(bytes) }
        return Rendition(
            scale: scale, bytes: Array(UnsafeBufferPointer(start: bytes, count: length)), pixelWidth: width, pixelHeight: height,
            format: isPNG != 0 ? .png : .jpeg)
    }

    /// A C message buffer as text.
    static func text(_ message: [CChar]) -> String {
        String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
