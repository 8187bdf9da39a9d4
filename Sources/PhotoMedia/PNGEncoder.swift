import CZlib

/// Encodes an `RGBImage` as a PNG: 8-bit RGB, no interlace, filter type 0 on every row, one
/// IDAT chunk compressed by zlib, CRC-32 from zlib.
public enum PNGEncoder {
    /// The PNG file bytes of `image`.
    public static func encode(_ image: RGBImage) -> [UInt8] {
        var raw = [UInt8]()
        raw.reserveCapacity((image.width * 3 + 1) * image.height)
        for row in 0..<image.height {
            raw.append(0)  // filter type 0: none
            raw += image.pixels[row * image.width * 3..<(row + 1) * image.width * 3]
        }
        var header = [UInt8]()
        header.appendBigEndian(UInt32(image.width))
        header.appendBigEndian(UInt32(image.height))
        header += [8, 2, 0, 0, 0]  // bit depth 8, colour type RGB, deflate, filter 0, no interlace
        var file: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        appendChunk("IHDR", header, to: &file)
        appendChunk("IDAT", Zlib.compress(raw), to: &file)
        appendChunk("IEND", [], to: &file)
        return file
    }

    private static func appendChunk(_ type: String, _ data: [UInt8], to file: inout [UInt8]) {
        file.appendBigEndian(UInt32(data.count))
        let typed = Array(type.utf8) + data
        file += typed
        file.appendBigEndian(Zlib.crc32(typed))
    }
}

/// zlib's deflate and CRC-32, as the PNG encoder needs them.
enum Zlib {
    /// The zlib stream (RFC 1950) of `bytes` at the default compression level.
    static func compress(_ bytes: [UInt8]) -> [UInt8] {
        var length = compressBound(uLong(bytes.count))
        var output = [UInt8](repeating: 0, count: Int(length))
        let status = output.withUnsafeMutableBufferPointer { target in
            bytes.withUnsafeBufferPointer { source in
                compress2(target.baseAddress, &length, source.baseAddress, uLong(source.count), Z_DEFAULT_COMPRESSION)
            }
        }
        // compress2 fails only without memory or with a too-small buffer, which compressBound rules out.
        precondition(status == Z_OK, "zlib compress2 failed with status \(status)")
        output.removeSubrange(Int(length)...)
        return output
    }

    /// The CRC-32 of `bytes`.
    static func crc32(_ bytes: [UInt8]) -> UInt32 {
        bytes.withUnsafeBufferPointer { UInt32(CZlib.crc32(0, $0.baseAddress, uInt($0.count))) }
    }
}

extension Array where Element == UInt8 {
    /// Appends `value` as big-endian bytes.
    mutating func appendBigEndian<T: FixedWidthInteger>(_ value: T) {
        for shift in stride(from: T.bitWidth - 8, through: 0, by: -8) { append(UInt8(truncatingIfNeeded: value >> shift)) }
    }

    /// Appends `value` as little-endian bytes.
    mutating func appendLittleEndian<T: FixedWidthInteger>(_ value: T) {
        for shift in stride(from: 0, to: T.bitWidth, by: 8) { append(UInt8(truncatingIfNeeded: value >> shift)) }
    }
}
