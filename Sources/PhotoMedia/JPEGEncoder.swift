import Foundation
import LedgerCore

/// A baseline JPEG encoder (ITU T.81): YCbCr, 8×8 floating-point DCT, the standard quantization
/// tables of Annex K scaled by a quality factor as libjpeg does, the standard Huffman tables, and
/// an optional EXIF APP1 segment built by libexif. Output decodes in libjpeg-based decoders.
public struct JPEGEncoder: Sendable {
    /// How the colour (chroma) planes are sampled relative to brightness.
    public enum ChromaSubsampling: Sendable {
        /// Full-resolution colour.
        case none444
        /// Colour at half resolution in both directions (what cameras usually write).
        case half420
    }

    /// 1 (smallest, worst) … 100 (largest, best).
    public var quality: Int
    /// Chroma sampling.
    public var subsampling: ChromaSubsampling

    /// An encoder with `quality` (clamped to 1…100) and `subsampling`.
    public init(quality: Int = 85, subsampling: ChromaSubsampling = .half420) {
        self.quality = min(100, max(1, quality))
        self.subsampling = subsampling
    }

    /// The JPEG file bytes of `image` (sides of at most 65,535 pixels), with an EXIF segment recording `creationDate` (as
    /// DateTimeOriginal) and `location` (GPS latitude, longitude, altitude) when given.
    public func encode(_ image: RGBImage, creationDate: Date? = nil, location: Location? = nil) -> [UInt8] {
        precondition(image.width <= 65_535 && image.height <= 65_535, "a baseline JPEG has sides of at most 65,535 pixels")
        var output: [UInt8] = [0xFF, 0xD8]
        if creationDate != nil || location != nil {
            let exif = Exif.payload(creationDate: creationDate, location: location)
            if !exif.isEmpty, exif.count <= 65_533 { Self.appendSegment(0xE1, exif, to: &output) }
        } else {
            Self.appendSegment(0xE0, Array("JFIF".utf8) + [0, 1, 1, 0, 0, 1, 0, 1, 0, 0], to: &output)
        }
        let luminance = Self.scaledTable(Self.luminanceQuantization, quality: quality)
        let chrominance = Self.scaledTable(Self.chrominanceQuantization, quality: quality)
        Self.appendSegment(0xDB, [0] + Self.zigzag.map { luminance[$0] } + [1] + Self.zigzag.map { chrominance[$0] }, to: &output)
        let sampling: UInt8 = subsampling == .half420 ? 0x22 : 0x11
        var frame: [UInt8] = [8]
        frame.appendBigEndian(UInt16(image.height))
        frame.appendBigEndian(UInt16(image.width))
        frame += [3, 1, sampling, 0, 2, 0x11, 1, 3, 0x11, 1]
        Self.appendSegment(0xC0, frame, to: &output)
        var tables: [UInt8] = []
        for (index, table) in [HuffmanTable.luminanceDC, .chrominanceDC, .luminanceAC, .chrominanceAC].enumerated() {
            tables.append(UInt8(index / 2) << 4 | UInt8(index % 2))
            tables += table.counts + table.symbols
        }
        Self.appendSegment(0xC4, tables, to: &output)
        Self.appendSegment(0xDA, [3, 1, 0x00, 2, 0x11, 3, 0x11, 0, 63, 0], to: &output)
        output += scanData(image, luminance: luminance.map(Float.init), chrominance: chrominance.map(Float.init))
        output += [0xFF, 0xD9]
        return output
    }

    private static func appendSegment(_ marker: UInt8, _ payload: [UInt8], to output: inout [UInt8]) {
        output += [0xFF, marker]
        output.appendBigEndian(UInt16(payload.count + 2))
        output += payload
    }

    // MARK: Entropy-coded data

    private func scanData(_ image: RGBImage, luminance: [Float], chrominance: [Float]) -> [UInt8] {
        let factor = subsampling == .half420 ? 2 : 1
        let mcuSize = 8 * factor
        let columns = (image.width + mcuSize - 1) / mcuSize, rows = (image.height + mcuSize - 1) / mcuSize
        let planes = Planes(image, paddedWidth: columns * mcuSize, paddedHeight: rows * mcuSize, factor: factor)
        var writer = BitWriter()
        var previousDC: [Int] = [0, 0, 0]
        var block = [Float](repeating: 0, count: 64)
        for row in 0..<rows {
            for column in 0..<columns {
                for dy in 0..<factor {
                    for dx in 0..<factor {
                        planes.luma.block(x: column * mcuSize + dx * 8, y: row * mcuSize + dy * 8, into: &block)
                        encodeBlock(
                            &block, quantization: luminance, dc: .luminanceDC, ac: .luminanceAC, previous: &previousDC[0], writer: &writer)
                    }
                }
                for (index, plane) in [planes.blue, planes.red].enumerated() {
                    plane.block(x: column * 8, y: row * 8, into: &block)
                    encodeBlock(
                        &block, quantization: chrominance, dc: .chrominanceDC, ac: .chrominanceAC, previous: &previousDC[index + 1],
                        writer: &writer)
                }
            }
        }
        writer.flush()
        return writer.bytes
    }

    private func encodeBlock(
        _ block: inout [Float], quantization: [Float], dc: HuffmanTable, ac: HuffmanTable, previous: inout Int, writer: inout BitWriter
    ) {
        Self.forwardDCT(&block)
        var coefficients = [Int](repeating: 0, count: 64)
        for position in 0..<64 {
            let natural = Self.zigzag[position]
            coefficients[position] = Int((block[natural] / quantization[natural]).rounded())
        }
        let difference = coefficients[0] - previous
        previous = coefficients[0]
        let category = Self.category(difference)
        writer.write(dc.codes[category])
        writer.write(Self.magnitudeBits(difference, category: category))
        var zeros = 0
        for position in 1..<64 {
            let value = coefficients[position]
            if value == 0 { zeros += 1; continue }
            while zeros >= 16 {
                writer.write(ac.codes[0xF0])
                zeros -= 16
            }
            let size = Self.category(value)
            writer.write(ac.codes[zeros << 4 | size])
            writer.write(Self.magnitudeBits(value, category: size))
            zeros = 0
        }
        if zeros > 0 { writer.write(ac.codes[0x00]) }
    }

    /// The number of bits of |value| (the JPEG "SSSS" category).
    private static func category(_ value: Int) -> Int {
        value == 0 ? 0 : Int.bitWidth - abs(value).leadingZeroBitCount
    }

    /// The additional bits after a category code: the value, or its ones' complement when negative.
    private static func magnitudeBits(_ value: Int, category: Int) -> (code: UInt32, length: Int) {
        (UInt32(truncatingIfNeeded: value < 0 ? value + (1 << category) - 1 : value), category)
    }

    /// An in-place 2-D DCT-II of a level-shifted 8×8 block, as the separable product of 1-D DCTs.
    private static func forwardDCT(_ block: inout [Float]) {
        var temporary = [Float](repeating: 0, count: 64)
        for y in 0..<8 {
            for u in 0..<8 {
                var sum: Float = 0
                for x in 0..<8 { sum += block[y * 8 + x] * cosines[u * 8 + x] }
                temporary[y * 8 + u] = sum
            }
        }
        for u in 0..<8 {
            for v in 0..<8 {
                var sum: Float = 0
                for y in 0..<8 { sum += temporary[y * 8 + u] * cosines[v * 8 + y] }
                block[v * 8 + u] = sum
            }
        }
    }

    /// `C(u)/2 · cos((2x+1)uπ/16)`, row u, column x.
    private static let cosines: [Float] = (0..<64).map { index in
        let u = index / 8, x = index % 8
        let scale = u == 0 ? 1 / Float(2).squareRoot() : 1
        return scale / 2 * Float(cos(Double(2 * x + 1) * Double(u) * Double.pi / 16))
    }

    // MARK: Tables

    /// libjpeg's quality scaling of a base table.
    private static func scaledTable(_ base: [Int], quality: Int) -> [UInt8] {
        let scale = quality < 50 ? 5000 / quality : 200 - 2 * quality
        return base.map { UInt8(min(255, max(1, ($0 * scale + 50) / 100))) }
    }

    /// The natural-order index of each zigzag position.
    static let zigzag: [Int] = [
        0, 1, 8, 16, 9, 2, 3, 10, 17, 24, 32, 25, 18, 11, 4, 5, 12, 19, 26, 33, 40, 48, 41, 34, 27, 20, 13, 6, 7, 14, 21, 28,
        35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23, 30, 37, 44, 51, 58, 59, 52, 45, 38, 31, 39, 46, 53, 60, 61, 54, 47, 55, 62, 63,
    ]

    private static let luminanceQuantization = [
        16, 11, 10, 16, 24, 40, 51, 61, 12, 12, 14, 19, 26, 58, 60, 55, 14, 13, 16, 24, 40, 57, 69, 56, 14, 17, 22, 29, 51, 87, 80, 62,
        18, 22, 37, 56, 68, 109, 103, 77, 24, 35, 55, 64, 81, 104, 113, 92, 49, 64, 78, 87, 103, 121, 120, 101, 72, 92, 95, 98, 112, 100,
        103, 99,
    ]

    private static let chrominanceQuantization =
        [
            17, 18, 24, 47, 99, 99, 99, 99, 18, 21, 26, 66, 99, 99, 99, 99, 24, 26, 56, 99, 99, 99, 99, 99, 47, 66, 99, 99, 99, 99, 99, 99,
        ] + [Int](repeating: 99, count: 32)
}

/// The three colour planes of an image in YCbCr, level-shifted by −128 and padded by repeating
/// the last row and column; the chroma planes averaged over `factor × factor` pixels.
private struct Planes {
    struct Plane {
        let width: Int
        var samples: [Float]

        func block(x: Int, y: Int, into block: inout [Float]) {
            for row in 0..<8 {
                let start = (y + row) * width + x
                for column in 0..<8 { block[row * 8 + column] = samples[start + column] }
            }
        }
    }

    var luma: Plane
    var blue: Plane
    var red: Plane

    init(_ image: RGBImage, paddedWidth: Int, paddedHeight: Int, factor: Int) {
        var y = [Float](repeating: 0, count: paddedWidth * paddedHeight)
        var cb = y, cr = y
        for row in 0..<paddedHeight {
            let sourceRow = min(row, image.height - 1)
            for column in 0..<paddedWidth {
                let pixel = image[min(column, image.width - 1), sourceRow]
                let r = Float(pixel.red), g = Float(pixel.green), b = Float(pixel.blue)
                let index = row * paddedWidth + column
                y[index] = 0.299 * r + 0.587 * g + 0.114 * b - 128
                cb[index] = -0.168736 * r - 0.331264 * g + 0.5 * b
                cr[index] = 0.5 * r - 0.418688 * g - 0.081312 * b
            }
        }
        luma = Plane(width: paddedWidth, samples: y)
        blue = Self.downsample(cb, width: paddedWidth, height: paddedHeight, factor: factor)
        red = Self.downsample(cr, width: paddedWidth, height: paddedHeight, factor: factor)
    }

    private static func downsample(_ samples: [Float], width: Int, height: Int, factor: Int) -> Plane {
        guard factor > 1 else { return Plane(width: width, samples: samples) }
        let outputWidth = width / factor, outputHeight = height / factor
        var output = [Float](repeating: 0, count: outputWidth * outputHeight)
        let area = Float(factor * factor)
        for row in 0..<outputHeight {
            for column in 0..<outputWidth {
                var sum: Float = 0
                for dy in 0..<factor {
                    for dx in 0..<factor { sum += samples[(row * factor + dy) * width + column * factor + dx] }
                }
                output[row * outputWidth + column] = sum / area
            }
        }
        return Plane(width: outputWidth, samples: output)
    }
}

/// A Huffman table as stored in DHT (code counts per length, symbols) and the code of each symbol.
private struct HuffmanTable {
    let counts: [UInt8]
    let symbols: [UInt8]
    let codes: [(code: UInt32, length: Int)]

    init(counts: [UInt8], symbols: [UInt8]) {
        self.counts = counts
        self.symbols = symbols
        var codes = [(code: UInt32, length: Int)](repeating: (0, 0), count: 256)
        var code: UInt32 = 0, index = 0
        for length in 1...16 {
            for _ in 0..<Int(counts[length - 1]) {
                codes[Int(symbols[index])] = (code, length)
                code += 1
                index += 1
            }
            code <<= 1
        }
        self.codes = codes
    }

    static let luminanceDC = HuffmanTable(counts: [0, 1, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0], symbols: Array(0...11))
    static let chrominanceDC = HuffmanTable(counts: [0, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0], symbols: Array(0...11))
    static let luminanceAC = HuffmanTable(
        counts: [0, 2, 1, 3, 3, 2, 4, 3, 5, 5, 4, 4, 0, 0, 1, 0x7D],
        symbols: [
            0x01, 0x02, 0x03, 0x00, 0x04, 0x11, 0x05, 0x12, 0x21, 0x31, 0x41, 0x06, 0x13, 0x51, 0x61, 0x07, 0x22, 0x71, 0x14, 0x32,
            0x81, 0x91, 0xA1, 0x08, 0x23, 0x42, 0xB1, 0xC1, 0x15, 0x52, 0xD1, 0xF0, 0x24, 0x33, 0x62, 0x72, 0x82, 0x09, 0x0A, 0x16,
            0x17, 0x18, 0x19, 0x1A, 0x25, 0x26, 0x27, 0x28, 0x29, 0x2A, 0x34, 0x35, 0x36, 0x37, 0x38, 0x39, 0x3A, 0x43, 0x44, 0x45,
            0x46, 0x47, 0x48, 0x49, 0x4A, 0x53, 0x54, 0x55, 0x56, 0x57, 0x58, 0x59, 0x5A, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68, 0x69,
            0x6A, 0x73, 0x74, 0x75, 0x76, 0x77, 0x78, 0x79, 0x7A, 0x83, 0x84, 0x85, 0x86, 0x87, 0x88, 0x89, 0x8A, 0x92, 0x93, 0x94,
            0x95, 0x96, 0x97, 0x98, 0x99, 0x9A, 0xA2, 0xA3, 0xA4, 0xA5, 0xA6, 0xA7, 0xA8, 0xA9, 0xAA, 0xB2, 0xB3, 0xB4, 0xB5, 0xB6,
            0xB7, 0xB8, 0xB9, 0xBA, 0xC2, 0xC3, 0xC4, 0xC5, 0xC6, 0xC7, 0xC8, 0xC9, 0xCA, 0xD2, 0xD3, 0xD4, 0xD5, 0xD6, 0xD7, 0xD8,
            0xD9, 0xDA, 0xE1, 0xE2, 0xE3, 0xE4, 0xE5, 0xE6, 0xE7, 0xE8, 0xE9, 0xEA, 0xF1, 0xF2, 0xF3, 0xF4, 0xF5, 0xF6, 0xF7, 0xF8,
            0xF9, 0xFA,
        ])
    static let chrominanceAC = HuffmanTable(
        counts: [0, 2, 1, 2, 4, 4, 3, 4, 7, 5, 4, 4, 0, 1, 2, 0x77],
        symbols: [
            0x00, 0x01, 0x02, 0x03, 0x11, 0x04, 0x05, 0x21, 0x31, 0x06, 0x12, 0x41, 0x51, 0x07, 0x61, 0x71, 0x13, 0x22, 0x32, 0x81,
            0x08, 0x14, 0x42, 0x91, 0xA1, 0xB1, 0xC1, 0x09, 0x23, 0x33, 0x52, 0xF0, 0x15, 0x62, 0x72, 0xD1, 0x0A, 0x16, 0x24, 0x34,
            0xE1, 0x25, 0xF1, 0x17, 0x18, 0x19, 0x1A, 0x26, 0x27, 0x28, 0x29, 0x2A, 0x35, 0x36, 0x37, 0x38, 0x39, 0x3A, 0x43, 0x44,
            0x45, 0x46, 0x47, 0x48, 0x49, 0x4A, 0x53, 0x54, 0x55, 0x56, 0x57, 0x58, 0x59, 0x5A, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68,
            0x69, 0x6A, 0x73, 0x74, 0x75, 0x76, 0x77, 0x78, 0x79, 0x7A, 0x82, 0x83, 0x84, 0x85, 0x86, 0x87, 0x88, 0x89, 0x8A, 0x92,
            0x93, 0x94, 0x95, 0x96, 0x97, 0x98, 0x99, 0x9A, 0xA2, 0xA3, 0xA4, 0xA5, 0xA6, 0xA7, 0xA8, 0xA9, 0xAA, 0xB2, 0xB3, 0xB4,
            0xB5, 0xB6, 0xB7, 0xB8, 0xB9, 0xBA, 0xC2, 0xC3, 0xC4, 0xC5, 0xC6, 0xC7, 0xC8, 0xC9, 0xCA, 0xD2, 0xD3, 0xD4, 0xD5, 0xD6,
            0xD7, 0xD8, 0xD9, 0xDA, 0xE2, 0xE3, 0xE4, 0xE5, 0xE6, 0xE7, 0xE8, 0xE9, 0xEA, 0xF2, 0xF3, 0xF4, 0xF5, 0xF6, 0xF7, 0xF8,
            0xF9, 0xFA,
        ])
}

/// Packs variable-length codes most significant bit first, stuffing a zero byte after each 0xFF.
private struct BitWriter {
    var bytes: [UInt8] = []
    private var accumulator: UInt64 = 0
    private var count = 0

    mutating func write(_ bits: (code: UInt32, length: Int)) {
        guard bits.length > 0 else { return }
        accumulator = accumulator << UInt64(bits.length) | UInt64(bits.code & ((1 << UInt32(bits.length)) - 1))
        count += bits.length
        while count >= 8 {
            count -= 8
            let byte = UInt8(truncatingIfNeeded: accumulator >> UInt64(count))
            bytes.append(byte)
            if byte == 0xFF { bytes.append(0) }
        }
    }

    /// Pads the last byte with one-bits.
    mutating func flush() {
        if count > 0 { write((code: (1 << UInt32(8 - count)) - 1, length: 8 - count)) }
    }
}
