import CMediaDecoding
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
    static func jpeg(_ options: [String] = [], seed: UInt64 = 3, width: Int = 256, height: Int = 192, quality: Int = 90) throws -> [UInt8] {
        let directory = try TemporaryDirectory()
        let source = try directory.write(try Samples.still("jpeg", width: width, height: height, seed: seed), to: "in.jpg")
        let output = directory.file("out.jpg")
        try SyntheticMedia.run(tool: "vips", ["jpegsave", source.path, output.path, "--Q", "\(quality)"] + options)
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

    @Test("a file larger than the check reads into memory is mapped, with the same verdicts")
    func largeFilesMapped() throws {
        let large = try Self.jpeg(["--restart-interval", "1"], width: 1600, height: 1200, quality: 100)
        #expect(large.count > 256 * 1024, "\(large.count) bytes: not larger than the files read into memory")
        let info = try MediaInspector.inspect(large, name: "large.jpg")
        #expect((info.pixelWidth, info.pixelHeight) == (1600, 1200))
        var damaged = large
        let third = try #require(Self.markers(0xD2, in: damaged).first)
        damaged[third + 1] = 0xD3
        #expect(Self.refusal(damaged)?.reason.contains("restart markers out of order") == true)
        let cut = Self.refusal(Array(large.prefix(large.count / 2)))
        #expect(cut?.reason.hasPrefix("truncated JPEG") == true, "\(String(describing: cut))")
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

/// A JPEG checked for its structure is read by libjpeg alone, not by libvips' loader: its size,
/// frames, EXIF and XMP must be what libvips' header load gives for the same file.
@Suite("JPEG structure check: libjpeg reads what libvips' loader reads")
struct JPEGHeaderEquivalenceTests {
    /// What `photoledger_still_check` gives at `level` for the file at `path`.
    static func read(_ path: String, level: Int32) throws -> (width: Int32, height: Int32, frames: Int32, exif: [UInt8], xmp: [UInt8]) {
        var result = photoledger_still()
        defer { photoledger_still_free(&result) }
        let status = photoledger_still_check(path, "jpegload", level, 1, 0, &result)
        let message = withUnsafeBytes(of: result.message) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        try #require(status == 0, "level \(level): \(message)")
        let exif = result.exif.map { Array(UnsafeBufferPointer(start: $0, count: result.exif_length)) } ?? []
        let xmp = result.xmp.map { Array(UnsafeRawBufferPointer(start: $0, count: result.xmp_length)) } ?? []
        return (result.width, result.height, result.frames, exif, xmp)
    }

    /// An APP1 segment holding `payload`.
    static func app1(_ payload: [UInt8]) -> [UInt8] {
        let length = payload.count + 2
        return [0xFF, 0xE1, UInt8(length >> 8), UInt8(length & 0xFF)] + payload
    }

    @Test("size, EXIF and XMP match libvips' header load, with repeated and misleading APP1 segments")
    func sameAsLibvips() throws {
        let plain = try Samples.still("jpeg", width: 96, height: 40)
        let tagged = try Samples.exiftool(
            JPEGEncoder(quality: 80).encode(
                RGBImage.scene(width: 40, height: 96, seed: 5), creationDate: Samples.creationDate, location: Samples.location,
                orientation: 6),
            extension: "jpg", ["-XMP-dc:Title=Harbour at dawn", "-XMP-GCamera:BurstID=7c1f0d2a-burst"])
        // After the start-of-image marker: a second EXIF segment, an "http" segment without a
        // NUL in its first 80 bytes, one with a namespace and a packet, and an APP1 of 4 bytes.
        let extra =
            Self.app1(Array("Exif\0\0second".utf8)) + Self.app1(Array(("http" + String(repeating: "x", count: 90)).utf8))
            + Self.app1(Array("http://ns.example/\0<x:xmpmeta/>".utf8)) + Self.app1(Array("Exif".utf8))
        let crowded = Array(tagged.prefix(2)) + extra + Array(tagged.dropFirst(2))
        let leading =
            Array(plain.prefix(2)) + Self.app1(Array("http://ns.adobe.com/xap/1.0/\0<x:first/>".utf8)) + extra
            + Array(plain.dropFirst(2))
        let directory = try TemporaryDirectory()
        for (name, bytes) in [("plain", plain), ("tagged", tagged), ("crowded", crowded), ("leading", leading)] {
            let path = try directory.write(bytes, to: "\(name).jpg").path
            let libvips = try Self.read(path, level: Int32(PHOTOLEDGER_DECODE_HEADER))
            let libjpeg = try Self.read(path, level: Int32(PHOTOLEDGER_DECODE_STRUCTURE))
            #expect(libjpeg.width == libvips.width && libjpeg.height == libvips.height && libjpeg.frames == libvips.frames, "\(name)")
            #expect(libjpeg.exif == libvips.exif, "\(name): EXIF")
            #expect(libjpeg.xmp == libvips.xmp, "\(name): XMP")
        }
        // The files hold what the comparison is about.
        let tagPath = try directory.write(tagged, to: "check.jpg").path
        let read = try Self.read(tagPath, level: Int32(PHOTOLEDGER_DECODE_STRUCTURE))
        #expect((read.width, read.height) == (40, 96))
        #expect(read.exif.starts(with: Array("Exif\0\0".utf8)))
        #expect(String(decoding: read.xmp, as: UTF8.self).contains("Harbour at dawn"))
        let leadingRead = try Self.read(
            try directory.write(leading, to: "leading-check.jpg").path, level: Int32(PHOTOLEDGER_DECODE_STRUCTURE))
        #expect(leadingRead.xmp == Array("<x:first/>".utf8))
        #expect(leadingRead.exif == Array("Exif\0\0second".utf8))
    }

    @Test("a JPEG larger than the decoders take is marked too large from its header, as libvips' header marks it")
    func tooLarge() throws {
        var bytes = try Samples.still("jpeg", width: 64, height: 48)
        let frame = try #require(Samples.jpegSegments(bytes).first { $0.marker == 0xC0 || $0.marker == 0xC2 })
        // 65,000 × 65,000 pixels: more than PHOTOLEDGER_MAX_PIXELS.
        for (offset, value) in [(5, 65_000), (7, 65_000)] {
            bytes[frame.offset + offset] = UInt8(value >> 8)
            bytes[frame.offset + offset + 1] = UInt8(value & 0xFF)
        }
        let directory = try TemporaryDirectory()
        let path = try directory.write(bytes, to: "huge.jpg").path
        for level in [PHOTOLEDGER_DECODE_HEADER, PHOTOLEDGER_DECODE_STRUCTURE] {
            var result = photoledger_still()
            defer { photoledger_still_free(&result) }
            let status = photoledger_still_check(path, "jpegload", Int32(level), 1, 0, &result)
            let message = withUnsafeBytes(of: result.message) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            #expect(status == 0, "level \(level): \(message)")
            #expect(result.too_large == 1 && result.width == 65_000 && result.height == 65_000, "level \(level)")
        }
        let error = Samples.mediaError { _ = try MediaInspector.inspect(bytes, name: "huge.jpg") }
        #expect(error?.reason.contains("65000") == true || error?.reason.contains("65,000") == true, "\(String(describing: error))")
    }
}
