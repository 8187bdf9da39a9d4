import Foundation
import FuzzSupport
import LedgerCore
import MediaFuzzSupport
import MediaSynthesis
import PhotoLedger
import PhotoMedia

/// The media code of our own that a user's file reaches: `MediaInspector` over whole files (the
/// format recognition, the dispatch to libvips or FFmpeg through the `CMediaDecoding` shim, and
/// what is read from their results, metadata included). libvips and FFmpeg themselves are not
/// fuzzed here (they are not built with the sanitizers): inputs reach them, but only our code
/// guides the mutations. What is read must make an `asset.created` event that other devices fold
/// (`ImportCheck`). The metadata readers alone, much faster, are the `metadata` target.
@main
enum MediaTarget: FuzzTarget {
    static func seeds() -> [Seed] {
        let date = Date(timeIntervalSince1970: 1_764_483_790)
        let place = Location(latitude: -33.8568, longitude: 151.2153, altitude: -4.5)
        let scene = RGBImage.scene(width: 32, height: 24, seed: 7)
        // With its `Exif\0\0` header.
        let exif = ExifWriter.payload(entries: ExifWriter.entries(creationDate: date, location: place))
        func still(_ format: String, frames: [RGBImage] = [scene], exif: [UInt8]? = nil) -> [UInt8] {
            do {
                return try StillEncoder.encode(frames, as: format, options: .init(quality: 40, exif: exif))
            } catch {
                preconditionFailure("\(error)")
            }
        }
        func movie(quickTime: Bool, metadata: [String: String], arguments: [String] = []) -> [UInt8] {
            do {
                return try SyntheticMedia.movie(
                    width: 32, height: 24, duration: 0.2, quickTime: quickTime, metadata: metadata, arguments: arguments)
            } catch {
                preconditionFailure("\(error)")
            }
        }
        let files: [(String, [UInt8])] = [
            ("photo.jpg", JPEGEncoder(quality: 40).encode(scene, creationDate: date, location: place, orientation: 6)),
            ("photo.png", still("png", exif: exif)),
            ("animation.gif", still("gif", frames: [scene, RGBImage.scene(width: 32, height: 24, seed: 8)])),
            ("photo.webp", still("webp", exif: exif)),
            ("photo.heic", still("heic", exif: exif)),
            ("photo.avif", still("avif")),
            ("movie.mp4", movie(quickTime: false, metadata: ["creation_time": "2025-11-30T06:23:10Z"])),
            (
                "movie.mov",
                movie(
                    quickTime: true, metadata: ["com.apple.quicktime.location.ISO6709": "+35.6586+139.7454+040.000/"],
                    arguments: ["-movflags", "use_metadata_tags"])
            ),
        ]
        return files.map { Seed(name: $0.0, bytes: $0.1) }
    }

    static func accepts(_ input: [UInt8]) -> Bool {
        (try? MediaInspector.inspect(input, name: "input")) != nil
    }

    static func run(_ input: [UInt8]) {
        guard let info = try? MediaInspector.inspect(input, name: "input") else { return }
        require(info.pixelWidth > 0 && info.pixelHeight > 0, "inspected media of \(info.pixelWidth)×\(info.pixelHeight) pixels")
        ImportCheck.check(info)
    }
}
