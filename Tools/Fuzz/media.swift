import Foundation
import LedgerCore
import PhotoMedia

/// The media parsing still written by hand in PhotoMedia, over files a peer could upload: the
/// container walkers `MediaInspector` selects by signature (JPEG markers, PNG chunks, GIF
/// blocks, WebP chunks, ISO base media boxes of MP4, QuickTime and HEIF) with the EXIF they
/// find, and the EXIF reader on its own.
///
/// When a format moves to a library, this target keeps fuzzing `MediaInspector` through it;
/// drop that format's seeds here if its parsing is no longer ours.
enum Target: FuzzTarget {
    static func seeds() -> [Seed] {
        let date = Date(timeIntervalSince1970: 1_764_483_790)
        let place = Location(latitude: -33.8568, longitude: 151.2153, altitude: -4.5)
        let image = RGBImage.scene(width: 16, height: 12, seed: 7)
        let jpeg = JPEGEncoder(quality: 50).encode(image, creationDate: date, location: place)
        let files: [(String, [UInt8])] = [
            ("photo.jpg", jpeg),
            ("photo-444.jpg", JPEGEncoder(quality: 90, subsampling: .none444).encode(image)),
            ("photo.png", PNGEncoder.encode(image)),
            ("animation.gif", GIFEncoder.encode([image, RGBImage.scene(width: 16, height: 12, seed: 8)])),
            ("photo.webp", WebPEncoder.encode(width: 16, height: 12, colors: [(200, 100, 50)])),
            ("extended.webp", WebPEncoder.encode(width: 16, height: 12, colors: [(200, 100, 50)], extended: true)),
            ("animation.webp", WebPEncoder.encode(width: 16, height: 12, colors: [(1, 2, 3), (4, 5, 6)])),
            ("photo.heic", ISOBaseMediaWriter.heic(width: 64, height: 48, quarterTurns: 1, creationDate: date, location: place)),
            ("plain.heic", ISOBaseMediaWriter.heic(width: 64, height: 48)),
            ("movie.mp4", ISOBaseMediaWriter.movie(width: 64, height: 48, duration: 0.2, frameRate: 10, creationDate: date, bytesPerFrame: 4)),
            ("movie.mov", ISOBaseMediaWriter.movie(width: 48, height: 64, duration: 0.1, frameRate: 10, quickTime: true, bytesPerFrame: 4)),
        ]
        return files.map { Seed(name: $0.0, bytes: $0.1) } + [Seed(name: "exif.bin", bytes: exifSegment(jpeg) ?? [])]
    }

    static func accepts(_ input: [UInt8]) -> Bool {
        (try? MediaInspector.inspect(input, name: "input")) != nil || MediaInspector.exifMetadata(input) != (nil, nil)
    }

    /// The payload of the first APP1 segment of a JPEG (its EXIF).
    private static func exifSegment(_ jpeg: [UInt8]) -> [UInt8]? {
        var offset = 2
        while offset + 4 <= jpeg.count, jpeg[offset] == 0xFF {
            let length = Int(jpeg[offset + 2]) << 8 | Int(jpeg[offset + 3])
            if jpeg[offset + 1] == 0xE1, offset + 2 + length <= jpeg.count { return Array(jpeg[offset + 4..<offset + 2 + length]) }
            offset += 2 + length
        }
        return nil
    }

    static func run(_ input: [UInt8]) {
        if let info = try? MediaInspector.inspect(input, name: "input") {
            require(info.pixelWidth > 0 && info.pixelHeight > 0, "inspected media of \(info.pixelWidth)×\(info.pixelHeight) pixels")
            require(info.duration.map { $0.isFinite && $0 >= 0 } ?? true, "inspected media of \(info.duration ?? 0) seconds")
            require(info.location?.isValid ?? true, "inspected media at an invalid location")
        }
        let exif = MediaInspector.exifMetadata(input)
        require(exif.location?.isValid ?? true, "EXIF location \(String(describing: exif.location)) is invalid")
    }
}
