import Foundation
import LedgerCore
import Testing

@testable import PhotoMedia

@Suite("Media synthesis")
struct EncoderTests {
    @Test("the same seed gives the same bytes; another seed other bytes", arguments: MediaFormat.allCases)
    func deterministic(format: MediaFormat) {
        let first = SyntheticMedia.sample(format, width: 24, height: 16, seed: 1)
        #expect(first == SyntheticMedia.sample(format, width: 24, height: 16, seed: 1))
        #expect(first != SyntheticMedia.sample(format, width: 24, height: 16, seed: 2))
    }

    @Test("GIF LZW codes decode to the palette indexes, across table resets")
    func lzwRoundTrip() {
        var random = SeededRandomNumberGenerator(seed: 3)
        let noise = (0..<20_000).map { _ in UInt8.random(in: 0...251, using: &random) }
        let runs = (0..<20_000).map { UInt8(($0 / 97) % 7) }
        for indexes in [noise, runs, [5], []] {
            #expect(decodeLZW(GIFEncoder.lzw(indexes)) == indexes)
        }
    }

    @Test("PNG chunks carry correct CRC-32s")
    func pngChunks() throws {
        let bytes = PNGEncoder.encode(RGBImage.scene(width: 20, height: 10, seed: 1))
        var offset = 8
        var types: [String] = []
        while offset < bytes.count {
            let length = bytes.bigEndian(at: offset, length: 4)
            let typed = Array(bytes[offset + 4..<offset + 8 + length])
            #expect(UInt32(bytes.bigEndian(at: offset + 8 + length, length: 4)) == Zlib.crc32(typed))
            types.append(String(decoding: typed.prefix(4), as: UTF8.self))
            offset += 12 + length
        }
        #expect(types == ["IHDR", "IDAT", "IEND"])
    }

    @Test("JPEG quality trades size for fidelity")
    func jpegQuality() {
        let image = RGBImage.scene(width: 128, height: 96, seed: 8)
        let small = JPEGEncoder(quality: 20).encode(image).count
        let large = JPEGEncoder(quality: 95).encode(image).count
        let full = JPEGEncoder(quality: 95, subsampling: .none444).encode(image).count
        #expect(small < large && large < full)
    }

    @Test("scenes have some variety of colour")
    func scenesLookLikeSomething() {
        let image = RGBImage.scene(width: 64, height: 64, seed: 10)
        let colours = Set(stride(from: 0, to: image.pixels.count, by: 3).map { image.pixels[$0..<$0 + 3].map(Int.init) })
        #expect(colours.count > 50)
    }

    /// GIF's LZW decoder, written independently of the encoder: 9–12-bit codes, least
    /// significant bit first, clear 256, end 257, code size growing when the table fills a width.
    private func decodeLZW(_ bytes: [UInt8]) -> [UInt8] {
        var table: [[UInt8]] = []
        func reset() { table = (0..<256).map { [UInt8($0)] } + [[], []] }
        reset()
        var output: [UInt8] = []
        var codeSize = 9, bitPosition = 0
        var previous: [UInt8]?
        while bitPosition + codeSize <= bytes.count * 8 {
            var code = 0
            for bit in 0..<codeSize where bytes[(bitPosition + bit) / 8] >> ((bitPosition + bit) % 8) & 1 == 1 { code |= 1 << bit }
            bitPosition += codeSize
            if code == 256 {
                reset()
                codeSize = 9
                previous = nil
                continue
            }
            if code == 257 { break }
            let entry: [UInt8]
            if code < table.count {
                entry = table[code]
            } else if let previous {
                entry = previous + [previous[0]]
            } else {
                return []
            }
            output += entry
            if let previous, table.count < 4096 { table.append(previous + [entry[0]]) }
            if table.count == 1 << codeSize && codeSize < 12 { codeSize += 1 }
            previous = entry
        }
        return output
    }
}
