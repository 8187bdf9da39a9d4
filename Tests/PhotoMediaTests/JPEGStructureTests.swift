import Foundation
import LedgerCore
import MediaSynthesis
import PhotoMedia
import Testing

/// A JPEG's validation reads its header and tables with libjpeg and walks its markers and
/// entropy-coded data without Huffman-decoding all of it: these tests damage JPEGs made by
/// libvips (sequential, progressive, with restart markers) where only that walk can see it.
@Suite("JPEG structure check: damage in the image data found without decoding all of it")
struct JPEGStructureTests {
    /// A 256 × 192 JPEG of a scene, saved again by the `vips` command with `options`
    /// (`--interlace` for a progressive JPEG, `--restart-interval N`).
    static func jpeg(_ options: [String] = [], seed: UInt64 = 3) throws -> [UInt8] {
        let directory = try TemporaryDirectory()
        let source = try directory.write(try Samples.still("jpeg", width: 256, height: 192, seed: seed), to: "in.jpg")
        let output = directory.file("out.jpg")
        try SyntheticMedia.run(tool: "vips", ["jpegsave", source.path, output.path, "--Q", "90"] + options)
        return Array(try Data(contentsOf: output))
    }

    /// The offsets of every `FF xx` marker with `marker`, in order.
    static func markers(_ marker: UInt8, in bytes: [UInt8]) -> [Int] {
        (0..<bytes.count - 1).filter { bytes[$0] == 0xFF && bytes[$0 + 1] == marker }
    }

    static func refusal(_ bytes: [UInt8], name: String = "photo.jpg") -> MediaError? {
        Samples.mediaError { _ = try MediaInspector.inspect(bytes, name: name) }
    }

    @Test("whole JPEGs pass: sequential, progressive, with restart markers, with junk between segments")
    func wholeFilesPass() throws {
        for options in [[], ["--interlace"], ["--restart-interval", "2"], ["--interlace", "--restart-interval", "1"]] {
            let info = try MediaInspector.inspect(try Self.jpeg(options), name: "whole.jpg")
            #expect((info.pixelWidth, info.pixelHeight) == (256, 192), "\(options)")
        }
    }

    @Test("restart markers out of order are refused: the image data between them was lost")
    func restartMarkersOutOfOrder() throws {
        var bytes = try Self.jpeg(["--restart-interval", "1"])
        let third = try #require(Self.markers(0xD2, in: bytes).first)
        bytes[third + 1] = 0xD3
        let error = Self.refusal(bytes)
        #expect(error?.refusal == .damaged)
        #expect(error?.reason.contains("restart markers out of order") == true, "\(String(describing: error))")
        #expect(error?.reason.contains("copy the file again from its source") == true)
    }

    @Test("a JPEG cut in its image data and closed by an end marker is refused when its restart markers are short")
    func cutWithEndMarker() throws {
        let bytes = try Self.jpeg(["--restart-interval", "2"])
        let cut = Array(bytes.prefix(bytes.count * 3 / 5)) + [0xFF, 0xD9]
        let error = Self.refusal(cut)
        #expect(error?.refusal == .damaged)
        #expect(error?.reason.contains("image data is missing") == true, "\(String(describing: error))")
    }

    @Test("a progressive JPEG cut in a later scan is refused as truncated")
    func progressiveCut() throws {
        let bytes = try Self.jpeg(["--interlace"])
        let scans = Self.markers(0xDA, in: bytes)
        #expect(scans.count > 3)
        let error = Self.refusal(Array(bytes.prefix(scans[scans.count - 1] - 10)))
        #expect(error?.reason.hasPrefix("truncated JPEG") == true, "\(String(describing: error))")
    }

    @Test("a later scan of a progressive JPEG with impossible parameters, a broken table between scans, or an undefined table, is refused")
    func progressiveScanHeaders() throws {
        let bytes = try Self.jpeg(["--interlace"])
        let scans = Self.markers(0xDA, in: bytes)
        var parameters = bytes
        let last = scans[scans.count - 1]
        let count = Int(parameters[last + 4])
        parameters[last + 4 + 1 + 2 * count + 1] = 0xF0  // Se, the spectral selection's end, past 63
        let error = Self.refusal(parameters)
        #expect(error?.refusal == .damaged)
        #expect(error?.reason.contains("invalid progressive parameters") == true, "\(String(describing: error))")

        // A Huffman table defined between scans, over-subscribed: three codes of one bit.
        let tables = Self.markers(0xC4, in: bytes).filter { $0 > scans[0] }
        let table = try #require(tables.first)
        var huffman = bytes
        huffman[table + 5] = 3
        let broken = Self.refusal(huffman)
        #expect(broken?.refusal == .damaged)
        #expect(broken?.reason.contains("bogus Huffman table") == true, "\(String(describing: broken))")

        // The last scan selects Huffman tables 3, which no segment defines.
        var selector = bytes
        selector[last + 6] = 0x33
        let undefined = Self.refusal(selector)
        #expect(undefined?.reason.contains("selects a Huffman table that is not defined") == true, "\(String(describing: undefined))")
    }

    @Test("a frame header or a second scan after a sequential JPEG's only scan is refused")
    func segmentsAfterTheScan() throws {
        let bytes = try Self.jpeg()
        let end = bytes.count - 2
        #expect(Array(bytes[end...]) == [0xFF, 0xD9])
        let frame = try #require(Samples.jpegSegments(bytes).first { $0.marker == 0xC0 })
        let frameSegment = Array(bytes[frame.offset..<frame.offset + 2 + frame.length])
        let twoFrames = Self.refusal(Array(bytes[..<end]) + frameSegment + [0xFF, 0xD9])
        #expect(twoFrames?.reason.contains("two frame headers") == true, "\(String(describing: twoFrames))")

        let scan = try #require(Samples.jpegSegments(bytes).first { $0.marker == 0xDA })
        let scanHeader = Array(bytes[scan.offset..<scan.offset + 2 + scan.length])
        let twoScans = Self.refusal(Array(bytes[..<end]) + scanHeader + [0x12, 0x34, 0xFF, 0xD9])
        #expect(twoScans?.reason.contains("a second scan") == true, "\(String(describing: twoScans))")

        let image = Self.refusal(Array(bytes[..<end]) + [0xFF, 0xD8, 0xFF, 0xD9])
        #expect(image?.reason.contains("a second start-of-image marker") == true, "\(String(describing: image))")
    }

    @Test("bytes after the end marker are accepted, as cameras append data there")
    func trailingData() throws {
        let bytes = try Self.jpeg() + Array(repeating: 0xAB, count: 100)
        #expect(try MediaInspector.inspect(bytes, name: "trailer.jpg").pixelWidth == 256)
    }

    @Test("every damaged JPEG a full decode refuses, the structure check refuses too (seeded byte changes and cuts)")
    func noWeakerThanAFullDecode() throws {
        let directory = try TemporaryDirectory()
        var random = SeededRandomNumberGenerator(seed: 17)
        var files: [URL] = []
        for (index, options) in [[], ["--restart-interval", "1"]].enumerated() {
            let bytes = try Self.jpeg(options, seed: UInt64(index + 5))
            for round in 0..<60 {
                var changed = bytes
                if round % 3 == 0 {
                    changed = Array(changed.prefix(Int.random(in: 2..<changed.count, using: &random)))
                } else {
                    for _ in 0..<Int.random(in: 1...3, using: &random) {
                        changed[Int.random(in: 2..<changed.count, using: &random)] = UInt8.random(in: 0...255, using: &random)
                    }
                }
                files.append(try directory.write(changed, to: "changed-\(index)-\(round).jpg"))
            }
        }
        // With renditions asked for, the store decodes each JPEG (reduced) to validate it.
        let decoded = try ResourceStore(directory: directory.file("decoded"))
            .importMedia(filesAt: files, renditions: [RenditionScale(size: 16, mode: .fit)])
        let checked = try ResourceStore(directory: directory.file("checked")).importMedia(filesAt: files)
        var refusedByDecodeOnly: [String] = []
        var refusedByCheckOnly = 0
        for (file, (decode, check)) in zip(files, zip(decoded, checked)) {
            switch (decode, check) {
            case (.failure, .success): refusedByDecodeOnly.append(file.lastPathComponent)
            case (.success, .failure): refusedByCheckOnly += 1
            default: break
            }
        }
        #expect(refusedByDecodeOnly == [])
        #expect(refusedByCheckOnly > 0, "restart markers and markers in the image data are checked where a decode only warns")
    }
}
