import Foundation

/// Readers of the still-image containers: each validates the structure it walks and returns the
/// pixel size, animation and any EXIF payload. They seek with `ByteSource` and never load pixel
/// data, so a 50 MB photo costs a few small reads.
enum ImageParsers {
    /// What an image parser found.
    struct Result {
        var width: Int
        var height: Int
        var isAnimated = false
        var exif: [UInt8]?
    }

    /// The most EXIF bytes read from any container (a JPEG APP1 segment holds at most 64 KB).
    static let maximumExifLength = 1 << 20

    // MARK: JPEG

    /// Walks the JPEG markers up to the first scan: the frame header (SOFn) gives the size, an
    /// APP1 `Exif` segment the metadata. A file cut inside the entropy-coded data is accepted, as
    /// decoders display it partially, but there must be scan data after the headers.
    static func jpeg(_ source: ByteSource) throws -> Result {
        var offset: Int64 = 2
        var size: (width: Int, height: Int)?
        var exif: [UInt8]?
        while true {
            guard offset + 4 <= source.count else {
                throw InvalidMedia(size == nil ? "truncated JPEG (the header ends before the frame size)" : noScanData)
            }
            let head = try source.read(exactly: 4, at: offset, "truncated JPEG header")
            guard head[0] == 0xFF else { throw InvalidMedia("damaged JPEG (no marker where one is expected)") }
            let marker = head[1]
            if marker == 0xFF { offset += 1; continue }  // fill byte
            if marker == 0x01 || (0xD0...0xD7).contains(marker) { offset += 2; continue }  // no length
            if marker == 0xD9 { throw InvalidMedia(noScanData) }
            let length = Int(head[2]) << 8 | Int(head[3])
            guard length >= 2 else { throw InvalidMedia("damaged JPEG (segment length \(length))") }
            let payloadOffset = offset + 4
            let payloadLength = length - 2
            switch marker {
            case 0xC0...0xC3, 0xC5...0xC7, 0xC9...0xCB, 0xCD...0xCF:
                let frame = try source.read(exactly: min(payloadLength, 5), at: payloadOffset, "truncated JPEG frame header")
                guard frame.count == 5 else { throw InvalidMedia("damaged JPEG frame header") }
                let height = frame.bigEndian(at: 1, length: 2), width = frame.bigEndian(at: 3, length: 2)
                guard width > 0, height > 0 else { throw InvalidMedia("JPEG frame of \(width)×\(height) pixels") }
                size = (width, height)
            case 0xE1 where exif == nil && payloadLength > Exif.header.count:
                let prefix = try source.read(exactly: Exif.header.count, at: payloadOffset, "truncated JPEG APP1 segment")
                if prefix == Exif.header {
                    exif = try source.read(exactly: payloadLength, at: payloadOffset, "truncated JPEG EXIF segment")
                }
            case 0xDA:
                guard let size else { throw InvalidMedia("damaged JPEG (scan before the frame header)") }
                guard payloadOffset + Int64(payloadLength) < source.count else { throw InvalidMedia(noScanData) }
                return Result(width: size.width, height: size.height, exif: exif)
            default:
                break
            }
            offset = payloadOffset + Int64(payloadLength)
        }
    }

    private static let noScanData = "truncated JPEG (no image data after the header)"

    // MARK: PNG

    /// Walks the PNG chunks (lengths only, no CRC or pixel checks) from IHDR to IEND; APNG's
    /// `acTL` marks animation and `eXIf` holds EXIF.
    static func png(_ source: ByteSource) throws -> Result {
        var offset: Int64 = 8
        var result: Result?
        var sawImageData = false
        while true {
            guard offset + 8 <= source.count else { throw InvalidMedia("truncated PNG (the file ends before the IEND chunk)") }
            let head = try source.read(exactly: 8, at: offset, "truncated PNG chunk")
            let length = Int64(head.bigEndian(at: 0, length: 4))
            let type = String(decoding: head[4..<8], as: UTF8.self)
            guard offset + 12 + length <= source.count else {
                throw InvalidMedia("truncated PNG (chunk '\(type)' extends past the end of the file)")
            }
            let dataOffset = offset + 8
            if result == nil {
                guard type == "IHDR", length >= 13 else { throw InvalidMedia("damaged PNG (the first chunk is not IHDR)") }
                let header = try source.read(exactly: 8, at: dataOffset, "truncated PNG header")
                let width = header.bigEndian(at: 0, length: 4), height = header.bigEndian(at: 4, length: 4)
                guard width > 0, height > 0, width < 1 << 31, height < 1 << 31 else {
                    throw InvalidMedia("PNG of \(width)×\(height) pixels")
                }
                result = Result(width: width, height: height)
            }
            switch type {
            case "IDAT": sawImageData = true
            case "acTL" where length >= 8:
                let control = try source.read(exactly: 4, at: dataOffset, "truncated PNG acTL chunk")
                result?.isAnimated = control.bigEndian(at: 0, length: 4) > 1
            case "eXIf" where length > 8 && length <= maximumExifLength:
                result?.exif = try source.read(exactly: Int(length), at: dataOffset, "truncated PNG eXIf chunk")
            case "IEND":
                guard sawImageData, let result else { throw InvalidMedia("damaged PNG (no image data)") }
                return result
            default: break
            }
            offset += 12 + length
        }
    }

    // MARK: GIF

    /// Reads the logical screen descriptor and walks every block to the trailer, counting the
    /// images: more than one is an animation. The image data sub-blocks are skipped unread.
    static func gif(_ source: ByteSource) throws -> Result {
        var reader = SequentialReader(source, offset: 6, truncated: "truncated GIF (the file ends before its trailer)")
        let screen = try reader.bytes(7)
        let width = screen.littleEndian(at: 0, length: 2), height = screen.littleEndian(at: 2, length: 2)
        guard width > 0, height > 0 else { throw InvalidMedia("GIF of \(width)×\(height) pixels") }
        if screen[4] & 0x80 != 0 { try reader.skip(3 << (Int(screen[4] & 7) + 1)) }
        var images = 0
        while true {
            switch try reader.byte() {
            case 0x2C:
                let descriptor = try reader.bytes(9)
                if descriptor[8] & 0x80 != 0 { try reader.skip(3 << (Int(descriptor[8] & 7) + 1)) }
                _ = try reader.byte()  // LZW minimum code size
                try reader.skipSubBlocks()
                images += 1
            case 0x21:
                _ = try reader.byte()  // extension label
                try reader.skipSubBlocks()
            case 0x3B:
                guard images > 0 else { throw InvalidMedia("damaged GIF (no image)") }
                return Result(width: width, height: height, isAnimated: images > 1)
            case let other:
                throw InvalidMedia("damaged GIF (unknown block 0x\(String(other, radix: 16)))")
            }
        }
    }

    // MARK: WebP

    /// Reads the RIFF header and the first chunk: VP8 (lossy) and VP8L (lossless) carry the size
    /// in their headers, VP8X (extended) the canvas size, the animation flag and an EXIF chunk.
    static func webp(_ source: ByteSource) throws -> Result {
        let riff = try source.read(exactly: 12, at: 0, "truncated WebP header")
        let end = 8 + Int64(riff.littleEndian(at: 4, length: 4))
        guard end <= source.count else { throw InvalidMedia("truncated WebP (the file is shorter than its RIFF size)") }
        var offset: Int64 = 12
        var result: Result?
        var sawImage = false
        while offset + 8 <= end {
            let head = try source.read(exactly: 8, at: offset, "truncated WebP chunk")
            let type = String(decoding: head[0..<4], as: UTF8.self)
            let length = Int64(head.littleEndian(at: 4, length: 4))
            guard offset + 8 + length <= end else { throw InvalidMedia("truncated WebP (chunk '\(type)' extends past the end)") }
            let dataOffset = offset + 8
            switch type {
            case "VP8 ":
                let frame = try source.read(exactly: 10, at: dataOffset, "truncated WebP VP8 header")
                guard frame[3] == 0x9D, frame[4] == 0x01, frame[5] == 0x2A else { throw InvalidMedia("damaged WebP (bad VP8 start code)") }
                let size = (frame.littleEndian(at: 6, length: 2) & 0x3FFF, frame.littleEndian(at: 8, length: 2) & 0x3FFF)
                if result == nil { result = Result(width: size.0, height: size.1) }
                sawImage = true
            case "VP8L":
                let header = try source.read(exactly: 5, at: dataOffset, "truncated WebP VP8L header")
                guard header[0] == 0x2F else { throw InvalidMedia("damaged WebP (bad VP8L signature)") }
                let bits = header.littleEndian(at: 1, length: 4)
                if result == nil { result = Result(width: (bits & 0x3FFF) + 1, height: ((bits >> 14) & 0x3FFF) + 1) }
                sawImage = true
            case "VP8X":
                guard result == nil else { throw InvalidMedia("damaged WebP (VP8X after the image)") }
                let header = try source.read(exactly: 10, at: dataOffset, "truncated WebP VP8X header")
                result = Result(
                    width: header.littleEndian(at: 4, length: 3) + 1, height: header.littleEndian(at: 7, length: 3) + 1,
                    isAnimated: header[0] & 0x02 != 0)
            case "ANMF": sawImage = true
            case "EXIF" where length > 8 && length <= maximumExifLength:
                result?.exif = try source.read(exactly: Int(length), at: dataOffset, "truncated WebP EXIF chunk")
            default: break
            }
            offset = dataOffset + length + (length & 1)
        }
        guard let result, sawImage else { throw InvalidMedia("damaged WebP (no image data)") }
        guard result.width > 0, result.height > 0 else { throw InvalidMedia("WebP of \(result.width)×\(result.height) pixels") }
        return result
    }
}

/// A forward reader over a `ByteSource` with a 64 KB buffer, for formats such as GIF whose
/// blocks are small and must be walked in order.
struct SequentialReader {
    private let source: ByteSource
    private var buffer: [UInt8] = []
    private var bufferStart: Int64
    private var position: Int64
    private let truncated: String

    init(_ source: ByteSource, offset: Int64, truncated: String) {
        self.source = source
        self.bufferStart = offset
        self.position = offset
        self.truncated = truncated
    }

    mutating func byte() throws -> UInt8 { try bytes(1)[0] }

    mutating func bytes(_ count: Int) throws -> [UInt8] {
        var result: [UInt8] = []
        result.reserveCapacity(count)
        while result.count < count {
            let index = Int(position - bufferStart)
            if index >= buffer.count {
                bufferStart = position
                buffer = try source.read(at: position, length: 1 << 16)
                guard !buffer.isEmpty else { throw InvalidMedia(truncated) }
                continue
            }
            let taken = min(count - result.count, buffer.count - index)
            result += buffer[index..<index + taken]
            position += Int64(taken)
        }
        return result
    }

    mutating func skip(_ count: Int) throws {
        guard position + Int64(count) <= source.count else { throw InvalidMedia(truncated) }
        position += Int64(count)
    }

    /// Skips a chain of sub-blocks (length byte, data) up to the zero-length terminator.
    mutating func skipSubBlocks() throws {
        while case let length = try byte(), length != 0 { try skip(Int(length)) }
    }
}
