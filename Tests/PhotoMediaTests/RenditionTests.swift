import Foundation
import LedgerCore
import MediaSynthesis
import PhotoMedia
import Testing

@Suite("Renditions: the thumbnailer, poster frames, and the renditions an import's validation makes")
struct RenditionTests {
    private static let fit256 = RenditionScale(size: 256, mode: .fit)
    private static let fill256 = RenditionScale(size: 256, mode: .fill)

    @Test("every format gets a rendition that fits the box, upright; a movie's is its poster frame", arguments: MediaFormat.allCases)
    func everyFormat(format: MediaFormat) throws {
        let directory = try TemporaryDirectory()
        let file = try directory.write(
            SyntheticMedia.sample(format, width: 640, height: 400, seed: 2), to: "sample.\(format.preferredFilenameExtension)")
        let renditions = try Thumbnailer.renditions(
            ofFileAt: file, scales: [Self.fit256, Self.fill256, RenditionScale(size: nil, mode: .fill)])
        #expect(renditions.map { [$0.pixelWidth, $0.pixelHeight] } == [[256, 160], [410, 256], [640, 400]])
        for rendition in renditions {
            #expect(rendition.format == .jpeg)
            let decoded = try RGBImage.decode(rendition.bytes)
            #expect((decoded.width, decoded.height) == (rendition.pixelWidth, rendition.pixelHeight))
            let read = try Rendition(encoded: rendition.bytes, scale: rendition.scale)
            #expect(read == rendition)
        }
    }

    @Test("a rendition cut short is recognised when it is read back")
    func damagedRenditionIsRecognised() throws {
        let directory = try TemporaryDirectory()
        let file = try directory.write(try Samples.still("jpeg", width: 300, height: 200), to: "a.jpg")
        let rendition = try #require(try Thumbnailer.renditions(ofFileAt: file, scales: [Self.fit256]).first)
        for length in [0, 10, rendition.bytes.count / 2, rendition.bytes.count - 1] {
            #expect(throws: MediaError.self) { try Rendition(encoded: Array(rendition.bytes.prefix(length)), scale: Self.fit256) }
        }
    }

    @Test("a PNG whose chunk declares more bytes than it holds gets no rendition, refused before libpng allocates the chunk")
    func pngChunkBeyondTheBytes() throws {
        // Renditions are made of resources pulled from other devices, which no import here
        // validated: an eXIf chunk declaring 1.97 GB in a file of a kilobyte.
        let bytes = try Samples.still("png")
        var exif = Samples.pngChunk("eXIf", Array(repeating: 0, count: 16))
        exif.replaceSubrange(0..<4, with: [0x75, 0x6C, 0x2F, 0x00])
        let damaged = Data(Array(bytes[..<33]) + exif + Array(bytes[33...]))
        let error = Samples.mediaError { _ = try Thumbnailer.renditions(ofStill: damaged, name: "huge.png", scales: [Self.fit256]) }
        #expect(error?.kind == .invalidResource && error?.refusal == .damaged)
        #expect(
            error?.reason.hasPrefix("no rendition: truncated PNG: its eXIf chunk at byte 33 declares 1970024192 bytes where the file holds")
                == true, "\(String(describing: error))")
        let directory = try TemporaryDirectory()
        let file = try directory.write(Array(damaged), to: "huge.png")
        #expect(Samples.mediaError { _ = try Thumbnailer.renditions(ofFileAt: file, scales: [Self.fit256]) }?.refusal == .damaged)
        // The same file whole still gets its rendition.
        #expect(try Thumbnailer.renditions(ofStill: Data(bytes), name: "fine.png", scales: [Self.fit256]).count == 1)
    }

    @Test("the import's validation gives a JPEG's 256-pixel renditions, upright, from its own reduced decode")
    func validationRenditions() throws {
        let directory = try TemporaryDirectory()
        let options = StillEncoder.Options(quality: 90, orientation: 6)
        let turned = try directory.write(try Samples.still("jpeg", width: 1600, height: 1200, options: options), to: "turned.jpg")
        let small = try directory.write(try Samples.still("jpeg", width: 300, height: 200), to: "small.jpg")
        let png = try directory.write(try Samples.still("png", width: 600, height: 400), to: "flat.png")
        let webp = try directory.write(try Samples.still("webp", width: 1200, height: 800), to: "web.webp")
        let store = try ResourceStore(directory: directory.file("store"))
        let results = store.importMedia(filesAt: [turned, small, png, webp], renditions: [Self.fit256, Self.fill256])
        let imported = try results.map { try $0.get() }
        #expect(imported[0].renditions.map { [$0.pixelWidth, $0.pixelHeight] } == [[192, 256], [256, 341]])
        #expect(imported[1].renditions.map { [$0.pixelWidth, $0.pixelHeight] } == [[256, 171], [300, 200]])
        #expect(imported[2].renditions.isEmpty, "a PNG's validation decodes it whole, streaming: its renditions come later")
        #expect(imported[3].renditions.map { [$0.pixelWidth, $0.pixelHeight] } == [[256, 171], [384, 256]])
        #expect((imported[0].info.pixelWidth, imported[0].info.pixelHeight) == (1200, 1600))
    }

    @Test("asking for renditions refuses exactly the damaged JPEGs and WebPs the validation alone refuses")
    func renditionsDoNotWeakenValidation() throws {
        let directory = try TemporaryDirectory()
        var files: [URL] = []
        for format in ["jpeg", "webp"] {
            let bytes = try Samples.still(format, width: 640, height: 480, seed: 4)
            for length in stride(from: 0, to: bytes.count, by: max(1, bytes.count / 25)) {
                files.append(try directory.write(Array(bytes.prefix(length)), to: "cut-\(length).\(format)"))
            }
            files.append(try directory.write(bytes, to: "whole.\(format)"))
        }
        var table = try Samples.still("jpeg", width: 640, height: 480)
        let huffman = try #require(Samples.jpegSegments(table).first { $0.marker == 0xC4 })
        for index in huffman.offset + 5..<huffman.offset + 21 { table[index] = 0xFF }
        files.append(try directory.write(table, to: "table.jpg"))
        let plain = try ResourceStore(directory: directory.file("plain")).importMedia(filesAt: files)
        let previewing = try ResourceStore(directory: directory.file("previewing")).importMedia(filesAt: files, renditions: [Self.fit256])
        for (file, (alone, with)) in zip(files, zip(plain, previewing)) {
            switch (alone, with) {
            case (.success, .success(let imported)):
                #expect(imported.renditions.count == 1, "\(file.lastPathComponent)")
            case (.failure(let first), .failure(let second)):
                #expect(first.refusal == second.refusal && first.kind == second.kind, "\(file.lastPathComponent)")
            default:
                Issue.record("\(file.lastPathComponent): validation alone \(alone), with renditions \(with)")
            }
        }
        #expect(plain.filter { (try? $0.get()) == nil }.count > 20)
    }
}
