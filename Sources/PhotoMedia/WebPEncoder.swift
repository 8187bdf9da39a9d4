/// Writes lossless WebP (VP8L) images of one colour. Each channel is coded with a one-symbol
/// prefix code, so the pixels take no bits at all and any size costs a few dozen bytes, yet the
/// files decode in libwebp. Several frames make an animated WebP (VP8X + ANIM + ANMF).
public enum WebPEncoder {
    /// A WebP of `width × height` pixels (each 1…16,384) filled with one colour per frame.
    /// One frame gives a simple lossless file, or with `extended` the VP8X form; more than one
    /// frame gives an animation shown `frameDuration` milliseconds per frame.
    public static func encode(
        width: Int, height: Int, colors: [(red: UInt8, green: UInt8, blue: UInt8)], extended: Bool = false, frameDuration: Int = 100
    ) -> [UInt8] {
        precondition((1...16_384).contains(width) && (1...16_384).contains(height), "WebP sides are 1…16,384 pixels")
        precondition(!colors.isEmpty, "a WebP needs at least one frame")
        var body: [UInt8]
        if colors.count == 1 && !extended {
            body = chunk("VP8L", losslessBitstream(width: width, height: height, color: colors[0]))
        } else {
            var header: [UInt8] = [colors.count > 1 ? 0x02 : 0x00, 0, 0, 0]
            header.appendLittleEndian24(width - 1)
            header.appendLittleEndian24(height - 1)
            body = chunk("VP8X", header)
            if colors.count > 1 {
                body += chunk("ANIM", [0, 0, 0, 0, 0, 0])  // background colour, loop forever
                for color in colors {
                    var frame = [UInt8](repeating: 0, count: 6)  // offset 0, 0
                    frame.appendLittleEndian24(width - 1)
                    frame.appendLittleEndian24(height - 1)
                    frame.appendLittleEndian24(frameDuration)
                    frame.append(0)
                    body += chunk("ANMF", frame + chunk("VP8L", losslessBitstream(width: width, height: height, color: color)))
                }
            } else {
                body += chunk("VP8L", losslessBitstream(width: width, height: height, color: colors[0]))
            }
        }
        var file = Array("RIFF".utf8)
        file.appendLittleEndian(UInt32(body.count + 4))
        return file + Array("WEBP".utf8) + body
    }

    private static func chunk(_ type: String, _ payload: [UInt8]) -> [UInt8] {
        var bytes = Array(type.utf8)
        bytes.appendLittleEndian(UInt32(payload.count))
        bytes += payload
        if payload.count % 2 == 1 { bytes.append(0) }
        return bytes
    }

    /// A VP8L bitstream: header, no transforms, no colour cache, no meta prefix codes, then five
    /// "simple" prefix codes of one symbol each (green, red, blue, alpha, distance).
    private static func losslessBitstream(width: Int, height: Int, color: (red: UInt8, green: UInt8, blue: UInt8)) -> [UInt8] {
        var writer = LSBBitWriter()
        writer.write(0x2F, bits: 8)
        writer.write(width - 1, bits: 14)
        writer.write(height - 1, bits: 14)
        writer.write(0, bits: 1)  // alpha is not used
        writer.write(0, bits: 3)  // version 0
        writer.write(0, bits: 1)  // no transform
        writer.write(0, bits: 1)  // no colour cache
        writer.write(0, bits: 1)  // no meta prefix codes
        for symbol in [Int(color.green), Int(color.red), Int(color.blue), 255, 0] {
            writer.write(1, bits: 1)  // simple code
            writer.write(0, bits: 1)  // one symbol
            writer.write(1, bits: 1)  // eight-bit symbol
            writer.write(symbol, bits: 8)
        }
        return writer.finish()
    }
}

/// Packs bits least significant first, as VP8L reads them.
private struct LSBBitWriter {
    private var bytes: [UInt8] = []
    private var accumulator = 0
    private var count = 0

    mutating func write(_ value: Int, bits: Int) {
        accumulator |= (value & ((1 << bits) - 1)) << count
        count += bits
        while count >= 8 {
            bytes.append(UInt8(truncatingIfNeeded: accumulator))
            accumulator >>= 8
            count -= 8
        }
    }

    mutating func finish() -> [UInt8] {
        if count > 0 { bytes.append(UInt8(truncatingIfNeeded: accumulator)) }
        return bytes
    }
}

extension Array where Element == UInt8 {
    /// Appends the low 24 bits of `value`, little-endian.
    mutating func appendLittleEndian24(_ value: Int) {
        append(UInt8(truncatingIfNeeded: value))
        append(UInt8(truncatingIfNeeded: value >> 8))
        append(UInt8(truncatingIfNeeded: value >> 16))
    }
}
