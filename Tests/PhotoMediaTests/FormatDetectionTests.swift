import Foundation
import MediaSynthesis
import PhotoMedia
import Testing

@Suite("Format recognition and pixel size, from files made by libvips and ffmpeg")
struct FormatDetectionTests {
    @Test("every format is recognised from a generated file, with its size", arguments: MediaFormat.allCases)
    func detectsGeneratedFile(format: MediaFormat) throws {
        let directory = try TemporaryDirectory()
        let bytes = SyntheticMedia.sample(format, width: 124, height: 46, seed: 1)
        let url = try directory.write(bytes, to: "sample.\(format.preferredFilenameExtension)")
        let info = try MediaInspector.inspect(fileAt: url)
        #expect(info.format == format)
        #expect(info.mediaType == format.mediaType)
        #expect((info.pixelWidth, info.pixelHeight) == (124, 46))
        #expect(info.orientation == .up)
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
            .heic: ("public.heic", "heic", .image), .avif: ("public.avif", "avif", .image), .webp: ("org.webmproject.webp", "webp", .image),
            .mp4: ("public.mpeg-4", "mp4", .video), .quickTime: ("com.apple.quicktime-movie", "mov", .video),
        ]
        for format in MediaFormat.allCases {
            #expect(format.uniformTypeIdentifier == expected[format]?.0)
            #expect(format.preferredFilenameExtension == expected[format]?.1)
            #expect(format.mediaType == expected[format]?.2)
        }
    }

    @Test("ISO base media brands decide between HEIC, AVIF, MP4 and QuickTime; raw and audio brands are no media")
    func fileTypeBrands() {
        func fileType(_ major: String, _ compatible: [String]) -> [UInt8] {
            let payload = Array(major.utf8) + [0, 0, 0, 0] + compatible.flatMap { Array($0.utf8) }
            return [0, 0, 0, UInt8(payload.count + 8)] + Array("ftyp".utf8) + payload
        }
        #expect(MediaFormat.detect(header: fileType("heic", ["mif1", "heic"])) == .heic)
        #expect(MediaFormat.detect(header: fileType("mif1", ["heix"])) == .heic)
        #expect(MediaFormat.detect(header: fileType("avif", ["mif1", "avif"])) == .avif)
        #expect(MediaFormat.detect(header: fileType("mp42", ["isom"])) == .mp4)
        #expect(MediaFormat.detect(header: fileType("qt  ", ["qt  "])) == .quickTime)
        #expect(MediaFormat.detect(header: fileType("avis", ["avif", "msf1"])) == nil)
        #expect(MediaFormat.detect(header: fileType("crx ", ["isom"])) == nil)
        #expect(MediaFormat.detect(header: fileType("M4A ", ["isom", "mp42"])) == nil)
        #expect(MediaFormat.detect(header: fileType("abcd", [])) == nil)
        #expect(MediaFormat.detect(header: [0, 0, 0, 8] + Array("wide".utf8) + [0, 0, 0, 8] + Array("mdat".utf8)) == .quickTime)
    }

    @Test("GIFs and WebPs are animated only with more than one frame")
    func animation() throws {
        let frame = RGBImage.scene(width: 20, height: 10, seed: 3), next = RGBImage.scene(width: 20, height: 10, seed: 3, phase: 0.5)
        for format in ["gif", "webp"] {
            let still = try MediaInspector.inspect(try StillEncoder.encode([frame], as: format), name: "still.\(format)")
            let animated = try MediaInspector.inspect(try StillEncoder.encode([frame, next], as: format), name: "animated.\(format)")
            #expect(!still.isAnimated)
            #expect(animated.isAnimated)
            #expect(animated.pixelWidth == 20 && animated.pixelHeight == 10)
        }
    }

    @Test("a GIF whose frame overflows its logical screen reports the size the decoder shows")
    func gifFrameLargerThanScreen() throws {
        var bytes = try Samples.still("gif", width: 60, height: 40)
        bytes.replaceSubrange(6..<10, with: [30, 0, 20, 0])  // logical screen 30×20, frame 60×40
        let info = try MediaInspector.inspect(bytes, name: "overflow.gif")
        #expect((info.pixelWidth, info.pixelHeight) == (60, 40))
    }

    @Test("JPEG sizes for both chroma samplings and odd sizes")
    func jpegSizes() throws {
        for (width, height) in [(1, 1), (17, 9), (640, 480), (33, 100)] {
            for subsampled in [false, true] {
                let bytes = try Samples.still("jpeg", width: width, height: height, options: .init(quality: 75, subsampled: subsampled))
                let info = try MediaInspector.inspect(bytes, name: "a.jpg")
                #expect((info.pixelWidth, info.pixelHeight) == (width, height))
            }
        }
    }
}
