import Foundation
import LedgerCore
import MediaSynthesis
import PhotoMedia
import Testing

@Suite("Validation by decoding: broken files are refused with a reason, valid oddities accepted, nothing crashes or blocks")
struct ValidationTests {
    @Test("an empty file is damaged")
    func emptyFile() throws {
        let directory = try TemporaryDirectory()
        let error = Samples.mediaError { _ = try MediaInspector.inspect(fileAt: try directory.write([], to: "IMG_1.jpg")) }
        #expect(error?.kind == .invalidResource && error?.refusal == .damaged)
        #expect(error?.reason.hasPrefix("empty file") == true)
    }

    @Test("a missing file is a missingResource")
    func missingFile() throws {
        let directory = try TemporaryDirectory()
        let error = Samples.mediaError { _ = try MediaInspector.inspect(fileAt: directory.file("gone.png")) }
        #expect(error?.kind == .missingResource)
        #expect(error?.resource == "gone.png")
    }

    @Test("a folder is not a regular file")
    func directoryIsInvalid() throws {
        let directory = try TemporaryDirectory()
        let error = Samples.mediaError { _ = try MediaInspector.inspect(fileAt: directory.url) }
        #expect(error?.refusal == .notRegularFile)
        #expect(error?.reason == "not a regular file (a folder)")
    }

    @Test("a FIFO is refused at once, without waiting for a writer, by the inspector and the store")
    func fifoIsInvalid() throws {
        let directory = try TemporaryDirectory()
        let fifo = directory.file("pipe.jpg")
        #expect(mkfifo(fifo.path, 0o600) == 0)
        let inspected = Samples.mediaError { _ = try MediaInspector.inspect(fileAt: fifo) }
        #expect(inspected?.refusal == .notRegularFile)
        let store = try ResourceStore(directory: directory.file("store"))
        let imported = Samples.mediaError { _ = try store.importMedia(fileAt: fifo) }
        #expect(imported?.refusal == .notRegularFile)
        #expect(imported?.reason.contains("not a regular file") == true)
        let batch = store.importMedia(filesAt: [fifo])
        #expect(Samples.mediaError { _ = try batch[0].get() }?.refusal == .notRegularFile)
    }

    @Test(
        "files that are not media say what they look like",
        arguments: [
            (Array("BM".utf8) + [UInt8](repeating: 0, count: 60), "a BMP image is not supported"),
            ([0x1A, 0x45, 0xDF, 0xA3] + [UInt8](repeating: 0, count: 40), "a Matroska or WebM video is not supported"),
            (Array("%PDF-1.7\n".utf8), "a PDF document is not supported"),
            (Array("hello, world".utf8), "not a photo or video"),
        ])
    func unsupported(bytes: [UInt8], mention: String) {
        let error = Samples.mediaError { _ = try MediaInspector.inspect(bytes, name: "file.bin") }
        #expect(error?.kind == .invalidResource && error?.refusal == .notMedia)
        #expect(error?.reason.hasPrefix(mention) == true, "\(String(describing: error))")
        #expect(error?.reason.contains("supported: JPEG, PNG, GIF, WebP, HEIC, AVIF, MP4 and QuickTime") == true)
    }

    @Test("an audio-only M4A made by ffmpeg is an audio file, not a video")
    func audioOnly() throws {
        let error = Samples.mediaError { _ = try MediaInspector.inspect(try SyntheticMedia.audio(duration: 1), name: "podcast.m4a") }
        #expect(error?.refusal == .notMedia)
        #expect(error?.reason.hasPrefix("an M4A audio file is not supported") == true, "\(String(describing: error))")
        // The same audio with an MP4 brand: FFmpeg finds no video stream.
        let mp4 = try SyntheticMedia.ffmpeg(
            ["-f", "lavfi", "-i", "sine=duration=1", "-c:a", "aac", "-brand", "isom", "-fflags", "+bitexact"], extension: "mp4")
        let byStream = Samples.mediaError { _ = try MediaInspector.inspect(mp4, name: "podcast.mp4") }
        #expect(byStream?.refusal == .notMedia)
        #expect(byStream?.reason == "an audio file (no video stream) is not a photo or video", "\(String(describing: byStream))")
    }

    @Test("a Canon CR3 raw image is not media, and says so")
    func canonRaw() {
        let header = [0, 0, 0, 24] + Array("ftypcrx ".utf8) + [0, 0, 0, 1] + Array("crx isom".utf8)
        let error = Samples.mediaError { _ = try MediaInspector.inspect(header + [UInt8](repeating: 0, count: 64), name: "IMG_1.CR3") }
        #expect(error?.refusal == .notMedia)
        #expect(error?.reason.hasPrefix("a Canon CR3 raw image is not supported") == true)
    }

    @Test("an animated AVIF is refused as not supported, with the reason")
    func avifSequence() throws {
        let header = [0, 0, 0, 24] + Array("ftypavis".utf8) + [0, 0, 0, 0] + Array("avifmsf1".utf8)
        let error = Samples.mediaError { _ = try MediaInspector.inspect(header + [UInt8](repeating: 0, count: 64), name: "a.avif") }
        #expect(error?.refusal == .notMedia)
        #expect(error?.reason.hasPrefix("an AVIF image sequence (animated AVIF) is not supported") == true)
    }

    @Test("junk bytes between JPEG segments are accepted, as every decoder reads them")
    func jpegJunkBetweenSegments() throws {
        let bytes = try Samples.still("jpeg")
        let segments = Samples.jpegSegments(bytes)
        let second = segments[1].offset
        let junk = Array(bytes[..<second]) + [0x00, 0x12, 0x34] + Array(bytes[second...])
        let info = try MediaInspector.inspect(junk, name: "junk.jpg")
        #expect((info.pixelWidth, info.pixelHeight) == (64, 48))
    }

    @Test("a JPEG with two frame headers (SOF) is refused")
    func jpegTwoFrameHeaders() throws {
        let bytes = try Samples.still("jpeg")
        let frame = try #require(Samples.jpegSegments(bytes).first { $0.marker == 0xC0 })
        let segment = Array(bytes[frame.offset..<frame.offset + 2 + frame.length])
        let twice = Array(bytes[..<frame.offset]) + segment + segment + Array(bytes[(frame.offset + segment.count)...])
        let error = Samples.mediaError { _ = try MediaInspector.inspect(twice, name: "two.jpg") }
        #expect(error?.refusal == .damaged)
        #expect(error?.reason.hasPrefix("damaged JPEG: the decoder refused it") == true, "\(String(describing: error))")
    }

    @Test("a JPEG with a broken Huffman table is refused")
    func jpegBrokenTable() throws {
        var bytes = try Samples.still("jpeg")
        let table = try #require(Samples.jpegSegments(bytes).first { $0.marker == 0xC4 })
        for index in table.offset + 5..<table.offset + 21 { bytes[index] = 0xFF }
        #expect(Samples.mediaError { _ = try MediaInspector.inspect(bytes, name: "table.jpg") }?.refusal == .damaged)
    }

    @Test("a PNG whose image data CRC is wrong, or an ancillary chunk's, is refused")
    func pngBadChecksums() throws {
        let bytes = try Samples.still("png")
        // IDAT's CRC: libpng stops.
        var badData = bytes
        let dataStart = try #require((8..<bytes.count - 4).first { Array(bytes[$0..<$0 + 4]) == Array("IDAT".utf8) }) - 4
        let dataLength =
            Int(bytes[dataStart]) << 24 | Int(bytes[dataStart + 1]) << 16 | Int(bytes[dataStart + 2]) << 8 | Int(bytes[dataStart + 3])
        badData[dataStart + 8 + dataLength] ^= 0xFF
        let dataError = Samples.mediaError { _ = try MediaInspector.inspect(badData, name: "data.png") }
        #expect(dataError?.refusal == .damaged, "\(String(describing: dataError))")
        // A text chunk's CRC before the image data: libpng warns and skips it; the warning refuses the file.
        let text = Samples.pngChunk("tEXt", Array("Comment".utf8) + [0] + Array("hello".utf8), damaged: true)
        let badText = Array(bytes[..<33]) + text + Array(bytes[33...])
        let textError = Samples.mediaError { _ = try MediaInspector.inspect(badText, name: "text.png") }
        #expect(
            textError?.reason.hasPrefix("damaged PNG: a chunk's checksum (CRC) does not match") == true, "\(String(describing: textError))")
        // The same chunk with a correct CRC is fine.
        let goodText =
            Array(bytes[..<33]) + Samples.pngChunk("tEXt", Array("Comment".utf8) + [0] + Array("hello".utf8)) + Array(bytes[33...])
        #expect(try MediaInspector.inspect(goodText, name: "fine.png").pixelWidth == 64)
    }

    @Test("a PNG chunk that declares more bytes than the file holds is refused from its header, before anything is allocated for it")
    func pngChunkBeyondTheFile() throws {
        let bytes = try Samples.still("png")
        // An eXIf chunk declaring 1.97 GB, followed by the rest of a valid file.
        var exif = Samples.pngChunk("eXIf", Array(repeating: 0, count: 16))
        exif.replaceSubrange(0..<4, with: [0x75, 0x6C, 0x2F, 0x00])
        let damaged = Array(bytes[..<33]) + exif + Array(bytes[33...])
        let error = Samples.mediaError { _ = try MediaInspector.inspect(damaged, name: "huge.png") }
        #expect(error?.refusal == .damaged)
        #expect(
            error?.reason.hasPrefix("truncated PNG: its eXIf chunk at byte 33 declares 1970024192 bytes where the file holds") == true,
            "\(String(describing: error))")
        #expect(error?.reason.hasSuffix("copy the file again from its source") == true)
    }

    @Test("a PNG with an impossible colour type is refused")
    func pngBadColourType() throws {
        let bytes = try Samples.still("png")
        var header = Array(bytes[16..<29])
        header[9] = 1  // colour types are 0, 2, 3, 4 and 6
        let damaged = Array(bytes[..<8]) + Samples.pngChunk("IHDR", header) + Array(bytes[33...])
        #expect(Samples.mediaError { _ = try MediaInspector.inspect(damaged, name: "colour.png") }?.refusal == .damaged)
    }

    @Test("a GIF without its trailer byte is accepted, as every decoder reads it")
    func gifWithoutTrailer() throws {
        let bytes = SyntheticMedia.sample(.gif, width: 30, height: 20, seed: 4)
        #expect(bytes.last == 0x3B)
        let info = try MediaInspector.inspect(Array(bytes.dropLast()), name: "open.gif")
        #expect((info.pixelWidth, info.pixelHeight, info.isAnimated) == (30, 20, true))
    }

    @Test("a HEIC whose image data is missing is refused")
    func heicWithoutImageData() throws {
        let bytes = SyntheticMedia.sample(.heic, width: 64, height: 48, seed: 5)
        let media = try #require((0..<bytes.count - 8).last { Array(bytes[$0 + 4..<$0 + 8]) == Array("mdat".utf8) })
        let empty = Array(bytes[..<media]) + [0, 0, 0, 8] + Array("mdat".utf8)
        let error = Samples.mediaError { _ = try MediaInspector.inspect(empty, name: "empty.heic") }
        #expect(error?.refusal == .damaged, "\(String(describing: error))")
    }

    @Test("a QuickTime movie whose media data is empty is refused")
    func movieWithEmptyMediaData() throws {
        let bytes = try SyntheticMedia.movie(width: 64, height: 48, duration: 1, quickTime: true, arguments: ["-movflags", "+faststart"])
        let media = try #require((0..<bytes.count - 8).last { Array(bytes[$0 + 4..<$0 + 8]) == Array("mdat".utf8) })
        let empty = Array(bytes[..<media]) + [0, 0, 0, 8] + Array("mdat".utf8)
        let error = Samples.mediaError { _ = try MediaInspector.inspect(empty, name: "empty.mov") }
        #expect(error?.refusal == .damaged, "\(String(describing: error))")
    }

    @Test("a QuickTime movie whose metadata declares 185 million keys is refused without FFmpeg allocating for them")
    func movieDeclaringHugeAllocation() throws {
        // ftyp, then moov > meta > hdlr (mdta) and keys with a count of 0x0B0B0B0B: FFmpeg's
        // demuxer allocates 8 bytes a key (1.5 GB) before it reads the first one.
        func atom(_ type: String, _ body: [UInt8]) -> [UInt8] { Samples.bigEndian(UInt32(8 + body.count)) + Array(type.utf8) + body }
        let handler = atom("hdlr", [UInt8](repeating: 0, count: 8) + Array("mdta".utf8) + [UInt8](repeating: 0, count: 13))
        let keys = atom("keys", [0, 0, 0, 0] + Samples.bigEndian(0x0B0B_0B0B))
        let bytes =
            atom("ftyp", Array("qt  ".utf8) + [0, 0, 2, 0] + Array("qt  ".utf8)) + atom("moov", atom("meta", handler + keys))
            + atom("mdat", [UInt8](repeating: 0, count: 64))
        let error = Samples.mediaError { _ = try MediaInspector.inspect(bytes, name: "keys.mov") }
        #expect(error?.refusal == .damaged)
        // Refused because FFmpeg's allocation was (without the limit, after it, as invalid data).
        #expect(error?.reason.contains("declares more than a movie needs") == true, "\(String(describing: error))")
    }

    @Test("a truncated file is refused in every format, with the same advice", arguments: MediaFormat.allCases)
    func truncated(format: MediaFormat) throws {
        let bytes = try Self.singleFrame(format, width: 96, height: 64)
        let error = Samples.mediaError { _ = try MediaInspector.inspect(bytes.prefix(bytes.count * 3 / 5), name: "cut") }
        #expect(error?.refusal == .damaged)
        #expect(error?.reason.contains("copy the file again from its source") == true, "\(format): \(String(describing: error))")
    }

    /// A sample of `format`; GIFs with one frame, since a GIF cut between two frames is a
    /// shorter animation to every decoder.
    static func singleFrame(_ format: MediaFormat, width: Int, height: Int) throws -> [UInt8] {
        format == .gif
            ? try Samples.still("gif", width: width, height: height) : SyntheticMedia.sample(format, width: width, height: height, seed: 6)
    }

    @Test("cuts at many lengths are refused, except where only an end marker or trailing metadata is lost")
    func truncationsNeverCrash() throws {
        for format in MediaFormat.allCases {
            let sample = (format: format, bytes: try Self.singleFrame(format, width: 38, height: 22))
            let count = sample.bytes.count
            for length in Set(stride(from: 0, to: count, by: max(1, count / 40)).map { $0 } + [count - 1]) {
                let name = "cut.\(sample.format.preferredFilenameExtension)"
                // A GIF without its trailer, a PNG without IEND, a movie without the metadata box
                // (udta) after its index: every decoder shows them whole, and so they pass.
                let metadata = (0..<count - 8).last { Array(sample.bytes[$0 + 4..<$0 + 8]) == Array("udta".utf8) } ?? count
                let missingOnlyTheEnd =
                    (sample.format == .gif && length == count - 1) || (sample.format == .png && length >= count - 12)
                    || (sample.format.mediaType == .video && length > metadata)
                let error = Samples.mediaError { _ = try MediaInspector.inspect(sample.bytes[..<length], name: name) }
                if missingOnlyTheEnd {
                    #expect(error == nil, "\(sample.format) cut to \(length) of \(count): \(String(describing: error))")
                } else {
                    #expect(error?.kind == .invalidResource && error?.resource == name, "\(sample.format) cut to \(length) of \(count)")
                }
            }
        }
    }

    @Test("random bytes behind every signature, and flipped bytes in valid files, never crash")
    func randomBytes() {
        var random = SeededRandomNumberGenerator(seed: 2026)
        let samples = Samples.all()
        for round in 0..<400 {
            var bytes = samples[round % samples.count].bytes
            if round % 2 == 0 {
                bytes =
                    Array(bytes.prefix(16))
                    + (0..<Int.random(in: 0...600, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            } else {
                for _ in 0..<Int.random(in: 1...4, using: &random) {
                    bytes[Int.random(in: 0..<bytes.count, using: &random)] = UInt8.random(in: 0...255, using: &random)
                }
            }
            do {
                _ = try MediaInspector.inspect(bytes, name: "noise")
            } catch {
                #expect(error.kind == .invalidResource && error.resource == "noise")
            }
        }
    }

    @Test("a still whose header claims more than 268 megapixels is refused before its pixels are decoded")
    func pixelBomb() throws {
        // A 16 × 12 GIF whose frame claims 65535 × 65484 pixels: decoding it would fill a 17 GB canvas.
        var bytes = try Samples.still("gif", width: 16, height: 12)
        let descriptor = try #require(Self.gifImageDescriptor(bytes))
        bytes.replaceSubrange(descriptor + 5..<descriptor + 9, with: [0xFF, 0xFF, 0xCC, 0xFF])
        let error = Samples.mediaError { _ = try MediaInspector.inspect(bytes, name: "bomb.gif") }
        #expect(error?.kind == .invalidResource && error?.refusal == .notMedia)
        #expect(
            error?.description
                == "bomb.gif: a GIF of 65535 × 65484 pixels is larger than supported (at most 268 megapixels a frame, 1048576 pixels a side); "
                + "scale it down to import it")
    }

    /// The offset of the first image descriptor of a GIF, after its screen, colour table and
    /// extensions.
    static func gifImageDescriptor(_ bytes: [UInt8]) -> Int? {
        var offset = 13 + (bytes[10] & 0x80 != 0 ? 3 << (Int(bytes[10] & 7) + 1) : 0)
        while offset < bytes.count {
            switch bytes[offset] {
            case 0x2C: return offset
            case 0x21:
                offset += 2
                while offset < bytes.count, bytes[offset] != 0 { offset += Int(bytes[offset]) + 1 }
                offset += 1
            default: return nil
            }
        }
        return nil
    }
}
