import Foundation
import LedgerCore
import PhotoMedia

/// The media parsing still written by hand in PhotoMedia, over files a user imports: the
/// container walkers `MediaInspector` selects by signature (JPEG markers, PNG chunks, GIF
/// blocks, WebP chunks, ISO base media boxes of MP4, QuickTime and HEIF) with the EXIF they
/// find, and the EXIF reader on its own.
///
/// An input is a whole file, except when its first byte names a part that the target wraps in
/// a valid file, so that mutations reach deep into the box walkers:
///
/// | first byte | the rest of the input |
/// |---|---|
/// | `H` | the length (2 bytes, big-endian) and the boxes of a HEIF `meta` box (after its version and flags), then what its `mdat` box holds |
/// | `M` | the length (2 bytes, big-endian) and the boxes of a movie's `moov` box, then what its `mdat` box holds |
/// | `E` | an EXIF payload, read by the EXIF reader alone |
///
/// When a format moves to a library, this target keeps fuzzing `MediaInspector` through it;
/// drop that format's seeds here if its parsing is no longer ours.
enum Target: FuzzTarget {
    static func seeds() -> [Seed] {
        let date = Date(timeIntervalSince1970: 1_764_483_790)
        let place = Location(latitude: -33.8568, longitude: 151.2153, altitude: -4.5)
        let image = RGBImage.scene(width: 16, height: 12, seed: 7)
        let jpeg = JPEGEncoder(quality: 50).encode(image, creationDate: date, location: place)
        let heic = ISOBaseMediaWriter.heic(width: 64, height: 48, quarterTurns: 1, creationDate: date, location: place)
        let movie = ISOBaseMediaWriter.movie(width: 64, height: 48, duration: 0.2, frameRate: 10, creationDate: date, bytesPerFrame: 4)
        let files: [(String, [UInt8])] = [
            ("photo.jpg", jpeg),
            ("photo-444.jpg", JPEGEncoder(quality: 90, subsampling: .none444).encode(image)),
            ("photo.png", PNGEncoder.encode(image)),
            ("animation.gif", GIFEncoder.encode([image, RGBImage.scene(width: 16, height: 12, seed: 8)])),
            ("photo.webp", WebPEncoder.encode(width: 16, height: 12, colors: [(200, 100, 50)])),
            ("extended.webp", WebPEncoder.encode(width: 16, height: 12, colors: [(200, 100, 50)], extended: true)),
            ("animation.webp", WebPEncoder.encode(width: 16, height: 12, colors: [(1, 2, 3), (4, 5, 6)])),
            ("photo.heic", heic),
            ("plain.heic", ISOBaseMediaWriter.heic(width: 64, height: 48)),
            ("movie.mp4", movie),
            ("movie.mov", ISOBaseMediaWriter.movie(width: 48, height: 64, duration: 0.1, frameRate: 10, quickTime: true, bytesPerFrame: 4)),
            ("meta.boxes", wrapped("H", Array(payload(of: "meta", in: heic).dropFirst(4)), payload(of: "mdat", in: heic))),
            ("moov.boxes", wrapped("M", payload(of: "moov", in: movie), payload(of: "mdat", in: movie))),
            ("exif.bin", Array("E".utf8) + exifSegment(jpeg)),
        ]
        return files.map { Seed(name: $0.0, bytes: $0.1) }
    }

    static func accepts(_ input: [UInt8]) -> Bool {
        switch Part(input) {
        case .exif(let payload): return MediaInspector.exifMetadata(payload) != (nil, nil)
        case .file(let file): return (try? MediaInspector.inspect(file, name: "input")) != nil
        }
    }

    static func run(_ input: [UInt8]) {
        switch Part(input) {
        case .exif(let payload):
            let exif = MediaInspector.exifMetadata(payload)
            require(exif.location?.isValid ?? true, "EXIF location \(String(describing: exif.location)) is invalid")
        case .file(let file):
            guard let info = try? MediaInspector.inspect(file, name: "input") else { return }
            require(info.pixelWidth > 0 && info.pixelHeight > 0, "inspected media of \(info.pixelWidth)×\(info.pixelHeight) pixels")
            require(info.duration.map { $0.isFinite && $0 >= 0 } ?? true, "inspected media of \(info.duration ?? 0) seconds")
            require(info.location?.isValid ?? true, "inspected media at an invalid location")
        }
    }

    /// What an input is read as.
    enum Part {
        /// A file for `MediaInspector`.
        case file([UInt8])
        /// An EXIF payload.
        case exif([UInt8])

        init(_ input: [UInt8]) {
            var reader = FuzzInput(input)
            switch reader.byte() {
            case UInt8(ascii: "H"):
                // The file type box the encoder writes, so that item locations stay where they were.
                let meta = reader.bytes(upTo: Int(reader.uint16()))
                self = .file(
                    box("ftyp", Array("heic".utf8) + [0, 0, 0, 0] + Array("mif1heic".utf8)) + box("meta", [0, 0, 0, 0] + meta)
                        + box("mdat", reader.bytes(upTo: input.count)))
            case UInt8(ascii: "M"):
                let movie = reader.bytes(upTo: Int(reader.uint16()))
                self = .file(box("ftyp", Array("isom".utf8) + [0, 0, 2, 0] + Array("isomavc1".utf8)) + box("mdat", reader.bytes(upTo: input.count)) + box("moov", movie))
            case UInt8(ascii: "E"): self = .exif(Array(input.dropFirst()))
            default: self = .file(input)
            }
        }
    }

    /// An input of the part `kind` (`H` or `M`): the boxes of the header box, then the media data.
    private static func wrapped(_ kind: String, _ boxes: [UInt8], _ data: [UInt8]) -> [UInt8] {
        var writer = FuzzInputWriter()
        writer.byte(Array(kind.utf8)[0])
        writer.counted(boxes)
        return writer.bytes + data
    }

    /// An ISO base media box.
    static func box(_ type: String, _ payload: [UInt8]) -> [UInt8] {
        let size = UInt32(clamping: payload.count + 8)
        return [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: size >> $0) } + Array(type.utf8) + payload
    }

    /// The payload of the first top-level box of `type` in an ISO base media file.
    private static func payload(of type: String, in file: [UInt8]) -> [UInt8] {
        var offset = 0
        while offset + 8 <= file.count {
            let size = file[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
            guard size >= 8, offset + size <= file.count else { break }
            if file[offset + 4..<offset + 8].elementsEqual(type.utf8) { return Array(file[offset + 8..<offset + size]) }
            offset += size
        }
        return []
    }

    /// The payload of the first APP1 segment of a JPEG (its EXIF).
    private static func exifSegment(_ jpeg: [UInt8]) -> [UInt8] {
        var offset = 2
        while offset + 4 <= jpeg.count, jpeg[offset] == 0xFF {
            let length = Int(jpeg[offset + 2]) << 8 | Int(jpeg[offset + 3])
            if jpeg[offset + 1] == 0xE1, offset + 2 + length <= jpeg.count { return Array(jpeg[offset + 4..<offset + 2 + length]) }
            offset += 2 + length
        }
        return []
    }
}
