import Foundation
import PhotoMedia
import Testing

@Suite("Format detection and pixel size")
struct FormatDetectionTests {
    @Test("every format is recognised from a generated file, with its size", arguments: MediaFormat.allCases)
    func detectsGeneratedFile(format: MediaFormat) throws {
        let directory = try TemporaryDirectory()
        let bytes = SyntheticMedia.sample(format, width: 123, height: 45, seed: 1)
        let url = try directory.write(bytes, to: "sample.\(format.preferredFilenameExtension)")
        let info = try MediaInspector.inspect(fileAt: url)
        #expect(info.format == format)
        #expect(info.mediaType == format.mediaType)
        #expect(info.pixelWidth == 123)
        #expect(info.pixelHeight == 45)
        #expect(MediaFormat.detect(header: bytes) == format)
    }

    @Test("the file name extension is ignored: a PNG named .jpg is a PNG")
    func extensionLies() throws {
        let directory = try TemporaryDirectory()
        let url = try directory.write(SyntheticMedia.sample(.png, width: 10, height: 8, seed: 2), to: "holiday.jpg")
        #expect(try MediaInspector.inspect(fileAt: url).format == .png)
        let movie = try directory.write(SyntheticMedia.sample(.quickTime, width: 10, height: 8, seed: 2), to: "clip.mp4")
        #expect(try MediaInspector.inspect(fileAt: movie).format == .quickTime)
    }

    @Test("type identifiers, extensions and media types follow PhotoKit")
    func formatProperties() {
        let expected: [MediaFormat: (String, String, MediaType)] = [
            .jpeg: ("public.jpeg", "jpg", .image), .png: ("public.png", "png", .image), .gif: ("com.compuserve.gif", "gif", .image),
            .heic: ("public.heic", "heic", .image), .webp: ("org.webmproject.webp", "webp", .image),
            .mp4: ("public.mpeg-4", "mp4", .video), .quickTime: ("com.apple.quicktime-movie", "mov", .video),
        ]
        for format in MediaFormat.allCases {
            #expect(format.uniformTypeIdentifier == expected[format]?.0)
            #expect(format.preferredFilenameExtension == expected[format]?.1)
            #expect(format.mediaType == expected[format]?.2)
        }
    }

    @Test("ISO base media brands decide between HEIC, MP4 and QuickTime")
    func fileTypeBrands() {
        func fileType(_ major: String, _ compatible: [String]) -> [UInt8] {
            let payload = Array(major.utf8) + [0, 0, 0, 0] + compatible.flatMap { Array($0.utf8) }
            return [0, 0, 0, UInt8(payload.count + 8)] + Array("ftyp".utf8) + payload
        }
        #expect(MediaFormat.detect(header: fileType("heic", ["mif1", "heic"])) == .heic)
        #expect(MediaFormat.detect(header: fileType("mif1", ["heix"])) == .heic)
        #expect(MediaFormat.detect(header: fileType("mp42", ["isom"])) == .mp4)
        #expect(MediaFormat.detect(header: fileType("avc1", [])) == .mp4)
        #expect(MediaFormat.detect(header: fileType("qt  ", ["qt  "])) == .quickTime)
        #expect(MediaFormat.detect(header: fileType("avif", ["mif1", "avif"])) == nil)
        #expect(MediaFormat.detect(header: fileType("abcd", [])) == nil)
        #expect(MediaFormat.detect(header: [0, 0, 0, 8] + Array("wide".utf8) + [0, 0, 0, 8] + Array("mdat".utf8)) == .quickTime)
    }

    @Test("GIFs are animated only with more than one frame")
    func gifAnimation() throws {
        let frame = RGBImage.scene(width: 20, height: 10, seed: 3)
        let still = try MediaInspector.inspect(GIFEncoder.encode([frame]), name: "still.gif")
        let animated = try MediaInspector.inspect(GIFEncoder.encode([frame, frame]), name: "animated.gif")
        #expect(!still.isAnimated)
        #expect(animated.isAnimated)
        #expect(animated.pixelWidth == 20 && animated.pixelHeight == 10)
    }

    @Test("WebP: lossless, extended (VP8X) and animated forms")
    func webpForms() throws {
        let simple = try MediaInspector.inspect(WebPEncoder.encode(width: 300, height: 200, colors: [(1, 2, 3)]), name: "a.webp")
        let extended = try MediaInspector.inspect(
            WebPEncoder.encode(width: 300, height: 200, colors: [(1, 2, 3)], extended: true), name: "b.webp")
        let animated = try MediaInspector.inspect(
            WebPEncoder.encode(width: 16_384, height: 1, colors: [(1, 2, 3), (4, 5, 6)]), name: "c.webp")
        #expect(simple == MediaInfo(format: .webp, pixelWidth: 300, pixelHeight: 200))
        #expect(extended == MediaInfo(format: .webp, pixelWidth: 300, pixelHeight: 200))
        #expect(animated == MediaInfo(format: .webp, pixelWidth: 16_384, pixelHeight: 1, isAnimated: true))
    }

    @Test("HEIC rotation (irot) of a quarter turn swaps width and height")
    func heicRotation() throws {
        let upright = try MediaInspector.inspect(ISOBaseMediaWriter.heic(width: 4032, height: 3024), name: "a.heic")
        let turned = try MediaInspector.inspect(ISOBaseMediaWriter.heic(width: 4032, height: 3024, quarterTurns: 1), name: "b.heic")
        let halfTurned = try MediaInspector.inspect(ISOBaseMediaWriter.heic(width: 4032, height: 3024, quarterTurns: 2), name: "c.heic")
        #expect((upright.pixelWidth, upright.pixelHeight) == (4032, 3024))
        #expect((turned.pixelWidth, turned.pixelHeight) == (3024, 4032))
        #expect((halfTurned.pixelWidth, halfTurned.pixelHeight) == (4032, 3024))
    }

    @Test("JPEG sizes are read from the frame header for both chroma samplings and odd sizes")
    func jpegSizes() throws {
        for (width, height) in [(1, 1), (8, 8), (17, 9), (640, 480), (33, 100)] {
            for subsampling in [JPEGEncoder.ChromaSubsampling.none444, .half420] {
                let bytes = JPEGEncoder(quality: 75, subsampling: subsampling).encode(RGBImage.scene(width: width, height: height, seed: 4))
                let info = try MediaInspector.inspect(bytes, name: "a.jpg")
                #expect((info.pixelWidth, info.pixelHeight) == (width, height))
                #expect(Array(bytes.suffix(2)) == [0xFF, 0xD9])
            }
        }
    }
}
