import Foundation
import LedgerCore
import PhotoMedia
import Testing

@Suite("Validation: bad input is an invalidResource naming the file, never a crash")
struct ValidationTests {
    @Test("an empty file")
    func emptyFile() throws {
        let directory = try TemporaryDirectory()
        let url = try directory.write([], to: "IMG_1.jpg")
        let error = Samples.mediaError { _ = try MediaInspector.inspect(fileAt: url) }
        #expect(error == MediaError(.invalidResource, resource: "IMG_1.jpg", reason: "empty file"))
    }

    @Test("a JPEG cut after its header says so")
    func truncatedJPEG() throws {
        let bytes = JPEGEncoder().encode(RGBImage.scene(width: 32, height: 32, seed: 1))
        let scan = try #require((0..<bytes.count - 1).first { bytes[$0] == 0xFF && bytes[$0 + 1] == 0xDA })
        let directory = try TemporaryDirectory()
        let url = try directory.write(Array(bytes[..<(scan + 14)]), to: "IMG_1.jpg")
        let error = Samples.mediaError { _ = try MediaInspector.inspect(fileAt: url) }
        #expect(error?.description == "IMG_1.jpg: truncated JPEG (no image data after the header)")
        #expect(error?.kind == .invalidResource)
    }

    @Test("a missing file is a missingResource")
    func missingFile() throws {
        let directory = try TemporaryDirectory()
        let error = Samples.mediaError { _ = try MediaInspector.inspect(fileAt: directory.file("gone.png")) }
        #expect(error?.kind == .missingResource)
        #expect(error?.resource == "gone.png")
    }

    @Test("a directory is not a resource")
    func directoryIsInvalid() throws {
        let directory = try TemporaryDirectory()
        let error = Samples.mediaError { _ = try MediaInspector.inspect(fileAt: directory.url) }
        #expect(error?.kind == .invalidResource)
        #expect(error?.reason.contains("not a regular file") == true)
    }

    @Test("a FIFO is rejected at once, without waiting for a writer")
    func fifoIsInvalid() throws {
        let directory = try TemporaryDirectory()
        let fifo = directory.file("pipe.jpg")
        #expect(mkfifo(fifo.path, 0o600) == 0)
        let inspected = Samples.mediaError { _ = try MediaInspector.inspect(fileAt: fifo) }
        #expect(inspected?.kind == .invalidResource)
        let store = try ResourceStore(directory: directory.file("store"))
        let imported = Samples.mediaError { _ = try store.importMedia(fileAt: fifo) }
        #expect(imported?.kind == .invalidResource)
        #expect(imported?.reason.contains("not a regular file") == true)
    }

    @Test(
        "unsupported formats are named when recognisable",
        arguments: [
            (Array("BM".utf8) + [UInt8](repeating: 0, count: 60), "BMP"),
            ([0x1A, 0x45, 0xDF, 0xA3] + [UInt8](repeating: 0, count: 40), "Matroska"),
            (Array("%PDF-1.7\n".utf8), "PDF"),
            (Array("hello, world".utf8), "not JPEG, PNG, GIF, HEIC, WebP, MP4 or QuickTime"),
        ])
    func unsupported(bytes: [UInt8], mention: String) {
        let error = Samples.mediaError { _ = try MediaInspector.inspect(bytes, name: "file.bin") }
        #expect(error?.kind == .invalidResource)
        #expect(error?.reason.hasPrefix("unsupported format") == true)
        #expect(error?.reason.contains(mention) == true)
    }

    @Test("every truncation of every format either inspects or is an invalidResource naming the file")
    func truncationsNeverCrash() {
        for sample in Samples.all() {
            var rejected = 0
            for length in 0..<sample.bytes.count {
                do {
                    let info = try MediaInspector.inspect(sample.bytes[..<length], name: "cut.\(sample.format.preferredFilenameExtension)")
                    #expect(info.format == sample.format)
                } catch {
                    #expect(error.kind == .invalidResource)
                    #expect(error.resource == "cut.\(sample.format.preferredFilenameExtension)")
                    #expect(!error.reason.isEmpty)
                    rejected += 1
                }
            }
            // Every cut inside the headers is caught; only cuts inside JPEG scan data may pass.
            #expect(rejected >= min(sample.bytes.count, 20), "\(sample.format): \(rejected) of \(sample.bytes.count) cuts rejected")
            if sample.format != .jpeg { #expect(rejected == sample.bytes.count, "\(sample.format)") }
        }
    }

    @Test("random bytes, and random bytes behind every signature, never crash")
    func randomBytes() {
        var random = SeededRandomNumberGenerator(seed: 2026)
        let signatures = Samples.all().map { Array($0.bytes.prefix(16)) } + [[]]
        for round in 0..<3000 {
            let count = Int.random(in: 0...600, using: &random)
            var bytes = signatures[round % signatures.count]
            bytes += (0..<count).map { _ in UInt8.random(in: 0...255, using: &random) }
            do {
                _ = try MediaInspector.inspect(bytes, name: "noise")
            } catch {
                #expect(error.kind == .invalidResource && error.resource == "noise")
            }
        }
    }

    @Test("flipped bytes in the headers of valid files never crash")
    func damagedHeaders() {
        var random = SeededRandomNumberGenerator(seed: 7)
        for sample in Samples.all() {
            for _ in 0..<400 {
                var bytes = sample.bytes
                for _ in 0..<Int.random(in: 1...4, using: &random) {
                    bytes[Int.random(in: 0..<min(bytes.count, 700), using: &random)] = UInt8.random(in: 0...255, using: &random)
                }
                do {
                    _ = try MediaInspector.inspect(bytes, name: "damaged")
                } catch {
                    #expect(error.kind == .invalidResource)
                }
            }
        }
    }

    /// A HEIF file of a 64 × 48 primary image whose `meta` box holds `boxes` besides the handler,
    /// the primary item and the properties.
    static func heif(meta boxes: [UInt8]) -> [UInt8] {
        func box(_ type: String, _ payload: [UInt8]) -> [UInt8] { bigEndian(UInt32(payload.count + 8)) + Array(type.utf8) + payload }
        func fullBox(_ type: String, _ payload: [UInt8]) -> [UInt8] { box(type, [0, 0, 0, 0] + payload) }
        let properties = box("iprp", box("ipco", fullBox("ispe", bigEndian(64) + bigEndian(48))) + fullBox("ipma", bigEndian(1) + [0, 1, 1, 0x81]))
        let meta = fullBox("meta", fullBox("hdlr", [0, 0, 0, 0] + Array("pict".utf8) + [UInt8](repeating: 0, count: 13)) + fullBox("pitm", [0, 1]) + boxes + properties)
        return box("ftyp", Array("heic".utf8) + [0, 0, 0, 0] + Array("mif1heic".utf8)) + meta + box("mdat", [UInt8](repeating: 0, count: 16))
    }

    static func bigEndian(_ value: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: value >> (24 - 8 * $0)) } }

    @Test("a HEIF item information box shorter than its own header is damaged")
    func shortItemInformation() {
        let bytes = Self.heif(meta: [0, 0, 0, 10] + Array("iinf".utf8) + [0, 0] + [0, 0, 0, 16] + Array("iloc".utf8) + [0, 0, 0, 0, 0x44, 0, 0, 0])
        let error = Samples.mediaError { _ = try MediaInspector.inspect(bytes, name: "IMG_1.HEIC") }
        #expect(error?.description == "IMG_1.HEIC: damaged HEIF ('iinf' box too short)")
    }

    @Test("HEIF item locations with 65,535 extents of no bytes each are read at once", .timeLimit(.minutes(1)))
    func emptyExtents() throws {
        let items = 20_000
        var locations: [UInt8] = [1, 0, 0, 0, 0, 0] + [UInt8(items >> 8), UInt8(items & 0xFF)]
        for item in 0..<items { locations += [UInt8((item + 2) >> 8), UInt8((item + 2) & 0xFF), 0, 0, 0, 0, 0xFF, 0xFF] }
        let bytes = Self.heif(meta: Self.bigEndian(UInt32(locations.count + 8)) + Array("iloc".utf8) + locations)
        let info = try MediaInspector.inspect(bytes, name: "IMG_2.HEIC")
        #expect(info.pixelWidth == 64 && info.pixelHeight == 48)
    }
}
