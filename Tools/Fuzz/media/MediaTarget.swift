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
        // The decoders read files: each input is written to one file of the process, in memory
        // (tmpfs) where the system has it, rather than to a new temporary file per input as
        // `inspect(_:name:)` does (seeds go through that path, in `accepts`).
        guard let info = try? MediaInspector.inspect(fileAt: InputFile.write(input)) else { return }
        require(info.pixelWidth > 0 && info.pixelHeight > 0, "inspected media of \(info.pixelWidth)×\(info.pixelHeight) pixels")
        ImportCheck.check(info)
    }
}

/// The file each input is written to: one per process, rewritten for every input, in
/// `/dev/shm` when it exists (no disk, no file created or removed per input), removed at a
/// normal exit. libFuzzer's exits on a crash or a signal skip that: the file (at most the
/// longest input) stays, named with the process id.
private enum InputFile {
    /// The file's path.
    static let path: String = {
        let directory = FileManager.default.fileExists(atPath: "/dev/shm") ? "/dev/shm" : NSTemporaryDirectory()
        let path = URL(fileURLWithPath: directory).appendingPathComponent("photoledger-fuzz-media-\(getpid())").path
        atexit { unlink(InputFile.path) }
        return path
    }()
    /// The file's location.
    static let url = URL(fileURLWithPath: path, isDirectory: false)

    /// Replaces the file's bytes with `bytes`; returns its location.
    static func write(_ bytes: [UInt8]) -> URL {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        require(descriptor >= 0, "cannot write the input to \(path): \(String(cString: strerror(errno)))")
        defer { close(descriptor) }
        var written = 0
        while written < bytes.count {
            let count = bytes.withUnsafeBytes { Foundation.write(descriptor, $0.baseAddress! + written, $0.count - written) }
            require(count > 0 || (count < 0 && errno == EINTR), "cannot write the input to \(path): \(String(cString: strerror(errno)))")
            written += max(0, count)
        }
        return url
    }
}
