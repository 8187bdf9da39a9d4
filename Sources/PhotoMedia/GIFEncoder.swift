/// Encodes `RGBImage` frames as a GIF89a: a fixed 252-colour palette (6 red × 7 green × 6 blue
/// levels, nearest level per channel), LZW-compressed frames, and the NETSCAPE2.0 looping
/// extension when there is more than one frame.
public enum GIFEncoder {
    /// The GIF file bytes of `frames` (all the size of the first, sides of at most 65,535 pixels), each shown for `delay`
    /// hundredths of a second; more than one frame makes an animation that loops forever.
    public static func encode(_ frames: [RGBImage], delay: Int = 10) -> [UInt8] {
        precondition(!frames.isEmpty, "a GIF needs at least one frame")
        let width = frames[0].width, height = frames[0].height
        precondition(width <= 65_535 && height <= 65_535, "a GIF has sides of at most 65,535 pixels")
        var output = Array("GIF89a".utf8)
        output.appendLittleEndian(UInt16(width))
        output.appendLittleEndian(UInt16(height))
        output += [0xF7, 0, 0]  // global colour table of 256 entries, 8-bit colour resolution
        output += palette
        if frames.count > 1 {
            output += [0x21, 0xFF, 11] + Array("NETSCAPE2.0".utf8) + [3, 1, 0, 0, 0]  // loop forever
        }
        for frame in frames {
            precondition(frame.width == width && frame.height == height, "every GIF frame must have the size of the first")
            output += [0x21, 0xF9, 4, 0x04]  // graphic control: dispose "do not dispose", no transparency
            output.appendLittleEndian(UInt16(clamping: delay))
            output += [0, 0]
            output += [0x2C, 0, 0, 0, 0]
            output.appendLittleEndian(UInt16(width))
            output.appendLittleEndian(UInt16(height))
            output += [0, 8]  // no local colour table; LZW minimum code size 8
            let compressed = lzw(indexes(of: frame))
            var start = 0
            while start < compressed.count {
                let length = min(255, compressed.count - start)
                output.append(UInt8(length))
                output += compressed[start..<start + length]
                start += length
            }
            output.append(0)
        }
        output.append(0x3B)
        return output
    }

    private static let redLevels = 6, greenLevels = 7, blueLevels = 6

    /// 256 RGB entries: the 252 palette colours, then black.
    private static let palette: [UInt8] = {
        var colours: [UInt8] = []
        for red in 0..<redLevels {
            for green in 0..<greenLevels {
                for blue in 0..<blueLevels {
                    colours += [level(red, of: redLevels), level(green, of: greenLevels), level(blue, of: blueLevels)]
                }
            }
        }
        return colours + [UInt8](repeating: 0, count: 768 - colours.count)
    }()

    private static func level(_ index: Int, of count: Int) -> UInt8 { UInt8(index * 255 / (count - 1)) }

    private static func nearest(_ value: UInt8, of count: Int) -> Int { (Int(value) * (count - 1) + 127) / 255 }

    private static func indexes(of image: RGBImage) -> [UInt8] {
        stride(from: 0, to: image.pixels.count, by: 3).map { index in
            let red = nearest(image.pixels[index], of: redLevels)
            let green = nearest(image.pixels[index + 1], of: greenLevels)
            let blue = nearest(image.pixels[index + 2], of: blueLevels)
            return UInt8((red * greenLevels + green) * blueLevels + blue)
        }
    }

    /// GIF's variable-width LZW (codes of 9 to 12 bits, least significant bit first), starting
    /// with a clear code and emitting another whenever the 4,096-entry table is full.
    static func lzw(_ indexes: [UInt8]) -> [UInt8] {
        let clear = 256, end = 257
        var table: [Int: Int] = [:]
        var nextCode = 258, codeSize = 9
        var output: [UInt8] = []
        var accumulator = 0, bitCount = 0
        func emit(_ code: Int) {
            accumulator |= code << bitCount
            bitCount += codeSize
            while bitCount >= 8 {
                output.append(UInt8(truncatingIfNeeded: accumulator))
                accumulator >>= 8
                bitCount -= 8
            }
        }
        emit(clear)
        guard var prefix = indexes.first.map(Int.init) else {
            emit(end)
            if bitCount > 0 { output.append(UInt8(truncatingIfNeeded: accumulator)) }
            return output
        }
        for index in indexes.dropFirst() {
            let key = prefix << 8 | Int(index)
            if let code = table[key] {
                prefix = code
                continue
            }
            emit(prefix)
            if nextCode < 4096 {
                table[key] = nextCode
                nextCode += 1
                if nextCode > 1 << codeSize && codeSize < 12 { codeSize += 1 }
            } else {
                emit(clear)
                table.removeAll(keepingCapacity: true)
                nextCode = 258
                codeSize = 9
            }
            prefix = Int(index)
        }
        emit(prefix)
        emit(end)
        if bitCount > 0 { output.append(UInt8(truncatingIfNeeded: accumulator)) }
        return output
    }
}
