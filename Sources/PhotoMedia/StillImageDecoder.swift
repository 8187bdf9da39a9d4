import CMediaDecoding
import Foundation

/// Stills through libvips: the file is decoded (every pixel of every frame; WebP at an eighth of
/// its size, which still reads all of its compressed data), except a JPEG, whose header and
/// tables libjpeg reads and whose first rows it decodes while a walk of its markers and
/// entropy-coded data checks the rest (see `photoledger_jpeg_check_structure`: libjpeg also
/// reads its size and its EXIF and XMP segments, as libvips' loader takes them); its size,
/// orientation, frames and EXIF are what the decoder read (a JPEG's orientation from its EXIF).
/// A JPEG or WebP whose picture is wanted for renditions is decoded reduced.
enum StillImageDecoder {
    /// The libvips loader and the decode reduction of each still format.
    private static func loader(for format: MediaFormat) -> (name: String, reduce: Int32) {
        switch format {
        case .jpeg: ("jpegload", 8)
        case .webp: ("webpload", 8)
        case .png: ("pngload", 1)
        case .gif: ("gifload", 1)
        case .heic, .avif: ("heifload", 1)
        case .mp4, .quickTime: ("", 1)
        }
    }

    static func inspect(path: String, format: MediaFormat) throws -> MediaInfo {
        try inspect(path: path, format: format, preview: 0).info
    }

    /// Inspects the file, and with `preview` > 0 keeps the decoded picture of a JPEG or WebP
    /// (decoded at the smallest fraction whose shorter side still has `preview` pixels, upright)
    /// for renditions: the validation's decode serves both.
    static func inspect(path: String, format: MediaFormat, preview: Int) throws -> (info: MediaInfo, preview: Picture?) {
        let loader = loader(for: format)
        if format == .png { try checkPNGChunkLengths(path: path) }
        var result = photoledger_still()
        defer { photoledger_still_free(&result) }
        // A JPEG without a preview to make is checked for its structure (see `Validation`);
        // every other still, and a JPEG whose picture is wanted, is decoded.
        let level = format == .jpeg && preview == 0 ? PHOTOLEDGER_DECODE_STRUCTURE : PHOTOLEDGER_DECODE_PIXELS
        let status = photoledger_still_check(path, loader.name, Int32(level), loader.reduce, Int32(clamping: preview), &result)
        guard status == 0 else {
            let message = withUnsafeBytes(of: result.message) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            throw InvalidMedia(describeFailure(message, format: format))
        }
        if result.checksum_mismatch != 0 {
            throw InvalidMedia(
                "damaged \(format.name): a chunk's checksum (CRC) does not match its bytes, so they changed after it was written; "
                    + "copy the file again from its source")
        }
        guard result.width > 0, result.height > 0 else { throw InvalidMedia("damaged \(format.name): the decoder found no pixels") }
        if result.too_large != 0 { throw MediaInfo.tooLarge(format, width: Int(result.width), height: Int(result.height)) }
        var metadata = Exif.Metadata()
        if let exif = result.exif, result.exif_length > 0 {
            metadata = Exif.metadata(from: Array(UnsafeBufferPointer(start: exif, count: result.exif_length)))
        } else if let profile = result.exif_text_profile, let payload = Exif.payload(fromTextProfile: String(cString: profile)) {
            metadata = Exif.metadata(from: payload)
        }
        let width = Int(result.width), height = Int(result.height)
        let orientation: ImageOrientation
        let shownSize: (Int, Int)
        if format == .heic || format == .avif {
            // libheif applies the HEIF transforms (irot, imir) itself: the decoded size is the
            // size shown; the EXIF tag, which HEIF readers must ignore, only describes it.
            orientation = metadata.orientation ?? .up
            shownSize = (width, height)
        } else {
            orientation = metadata.orientation ?? ImageOrientation(rawValue: Int(result.orientation)) ?? .up
            shownSize = orientation.swapsWidthAndHeight ? (height, width) : (width, height)
        }
        var info = MediaInfo(
            format: format, pixelWidth: shownSize.0, pixelHeight: shownSize.1, orientation: orientation,
            creationDate: metadata.creationDate, location: metadata.location, isAnimated: result.frames > 1)
        let xmp = result.xmp.map { CaptureMetadata.xmpProperties(UnsafeBufferPointer(start: $0, count: result.xmp_length)) } ?? [:]
        info.capture = CaptureMetadata(exif: metadata, xmp: xmp)
        guard let handle = result.preview else { return (info, nil) }
        result.preview = nil  // the picture owns it now
        let picture = Picture(handle) { shown, other in (shown == width && other == height) || (shown == height && other == width) }
        return (info, picture)
    }

    /// Checks that every chunk of a PNG fits in the file, from the chunk headers alone (8 bytes
    /// each), before the decoder opens it: libpng allocates a chunk's declared length before it
    /// reads the chunk, so a kilobyte file that declares a 2 GB chunk would make a 2 GB
    /// allocation, and libvips gives no way to set libpng's limit. The end marker (IEND) may be
    /// cut, as every decoder reads such files.
    static func checkPNGChunkLengths(path: String) throws {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw InvalidMedia("unreadable (\(FileIO.lastError()))", .unreadable) }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw InvalidMedia("unreadable (\(FileIO.lastError()))", .unreadable) }
        var header = [UInt8](repeating: 0, count: 8)
        try checkPNGChunkLengths(size: Int64(status.st_size)) { offset in
            let count = header.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, 8, off_t(offset)) }
            guard count == 8 else { throw InvalidMedia("unreadable (\(FileIO.lastError()))", .unreadable) }
            return header
        }
    }

    /// `checkPNGChunkLengths(path:)` for a PNG in memory.
    static func checkPNGChunkLengths(_ bytes: Data) throws {
        try checkPNGChunkLengths(size: Int64(bytes.count)) { offset in
            let start = bytes.startIndex + Int(offset)
            return [UInt8](bytes[start..<start + 8])
        }
    }

    /// Walks the chunk headers of a PNG of `size` bytes; `readHeader` reads the 8 bytes at an offset.
    private static func checkPNGChunkLengths(size: Int64, readHeader: (Int64) throws -> [UInt8]) throws {
        var offset: Int64 = 8  // the signature
        while offset + 8 <= size {
            let header = try readHeader(offset)
            let length = header[0..<4].reduce(Int64(0)) { $0 << 8 | Int64($1) }
            let type = String(decoding: header[4..<8].map { (0x20...0x7E).contains($0) ? $0 : UInt8(ascii: "?") }, as: UTF8.self)
            if type == "IEND" { return }
            let left = size - offset - 12
            guard length <= left else {
                throw InvalidMedia(
                    "truncated PNG: its \(type) chunk at byte \(offset) declares \(length) bytes where the file holds \(max(0, left)) more; "
                        + "copy the file again from its source")
            }
            offset += 12 + length
        }
    }

    /// The reason for a decoder's refusal: truncation in the same words for every format, other
    /// damage with the decoder's own words.
    static func describeFailure(_ message: String, format: MediaFormat) -> String {
        let detail = message.split(whereSeparator: \.isNewline).map { String($0) }.joined(separator: "; ")
        let lowered = message.lowercased()
        let truncationWords = [
            "premature end", "truncated", "not enough data", "unexpected end", "end of file", "read error", "out of data",
        ]
        if truncationWords.contains(where: lowered.contains) {
            return "truncated \(format.name): the file ends before its image data does (\(detail)); copy the file again from its source"
        }
        if lowered.contains("not a known") || lowered.contains("unsupported") {
            return "unsupported \(format.name) variant: the decoder cannot read it (\(detail))"
        }
        return "damaged \(format.name): the decoder refused it (\(detail))"
    }
}

extension MediaFormat {
    /// The format's name in messages.
    var name: String {
        switch self {
        case .jpeg: "JPEG"
        case .png: "PNG"
        case .gif: "GIF"
        case .webp: "WebP"
        case .heic: "HEIC"
        case .avif: "AVIF"
        case .mp4: "MP4"
        case .quickTime: "QuickTime movie"
        }
    }
}
