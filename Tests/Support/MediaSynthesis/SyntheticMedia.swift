import CMediaEncoding
import Foundation
import LedgerCore
import PhotoMedia
import TestSupportKit

/// Why media could not be made: the encoder or the tool that makes it failed or is missing.
public struct MediaSynthesisError: Error, CustomStringConvertible {
    /// What failed, and what to install when a tool is missing.
    public let description: String

    init(_ description: String) { self.description = description }
}

/// Stills encoded by libvips (libjpeg-turbo, libpng, cgif, libwebp, libheif with x265 and aom),
/// in process.
public enum StillEncoder {
    /// How a still is written.
    public struct Options: Sendable {
        /// 1-100, for JPEG, WebP, HEIC and AVIF.
        public var quality = 85
        /// JPEG colour at half resolution (4:2:0), as cameras write it.
        public var subsampled = true
        /// An EXIF payload (from ``ExifWriter``) to embed.
        public var exif: [UInt8]?
        /// An EXIF orientation (1-8) for libvips to record in the EXIF it writes.
        public var orientation: Int?

        /// Default options: quality 85, 4:2:0, no EXIF.
        public init(quality: Int = 85, subsampled: Bool = true, exif: [UInt8]? = nil, orientation: Int? = nil) {
            self.quality = quality
            self.subsampled = subsampled
            self.exif = exif
            self.orientation = orientation
        }
    }

    /// The bytes of `frames` (all of one size; more than one makes an animation) as `format`:
    /// "jpeg", "png", "gif", "webp", "heic", "avif" or "tiff".
    public static func encode(_ frames: [RGBImage], as format: String, options: Options = Options()) throws -> [UInt8] {
        guard let first = frames.first, frames.allSatisfy({ $0.width == first.width && $0.height == first.height }) else {
            throw MediaSynthesisError("frames must be given, all of one size")
        }
        let pixels = frames.flatMap(\.pixels)
        var bytes: UnsafeMutablePointer<UInt8>?
        var length = 0
        var error = [CChar](repeating: 0, count: 512)
        let status = format.withCString { formatName in
            (options.exif ?? []).withUnsafeBufferPointer { exif in
                var encoding = photoledger_encoding(
                    format: formatName, quality: Int32(options.quality), subsample: options.subsampled ? 1 : 0,
                    exif: options.exif == nil ? nil : exif.baseAddress, exif_length: exif.count,
                    orientation: Int32(options.orientation ?? 0))
                return photoledger_encode(
                    pixels, Int32(first.width), Int32(first.height), Int32(frames.count), &encoding, &bytes, &length, &error, error.count)
            }
        }
        guard status == 0, let bytes else {
            let message = String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            throw MediaSynthesisError("libvips could not write \(format): \(message) (is libvips-dev installed?)")
        }
        defer { photoledger_encoded_free(bytes) }
        return Array(UnsafeBufferPointer(start: bytes, count: length))
    }
}

/// A JPEG encoder with EXIF, for tests, the demo and benchmarks: libjpeg through libvips.
public struct JPEGEncoder: Sendable {
    /// 1 (smallest, worst) … 100 (largest, best).
    public var quality: Int

    /// An encoder with `quality` (clamped to 1…100).
    public init(quality: Int = 85) { self.quality = min(100, max(1, quality)) }

    /// The JPEG bytes of `image`, with EXIF recording `creationDate` (DateTimeOriginal) and
    /// `location` (GPS) when given, and `orientation` (1-8) when given. Stops the program when
    /// libvips is missing: this is test and demo support.
    public func encode(_ image: RGBImage, creationDate: Date? = nil, location: Location? = nil, orientation: Int? = nil) -> [UInt8] {
        let entries = ExifWriter.entries(creationDate: creationDate, location: location)
        let exif = entries.isEmpty ? nil : ExifWriter.payload(entries: entries)
        do {
            return try StillEncoder.encode([image], as: "jpeg", options: .init(quality: quality, exif: exif, orientation: orientation))
        } catch {
            preconditionFailure("\(error)")
        }
    }
}

/// Real media files generated from a seed, for demos, tests and benchmarks: the same arguments
/// give the same bytes on every machine with the same encoders. Stills are made by libvips,
/// movies by the `ffmpeg` tool (libx264).
public enum SyntheticMedia {
    /// A file of `format` showing `RGBImage.scene` for `seed` (GIFs get three frames, so they
    /// are animated), or a 3-second movie (MP4, QuickTime). Stops the program when an encoder
    /// is missing: this is test and demo support.
    public static func sample(_ format: MediaFormat, width: Int, height: Int, seed: UInt64) -> [UInt8] {
        do {
            switch format {
            case .jpeg: return try StillEncoder.encode([RGBImage.scene(width: width, height: height, seed: seed)], as: "jpeg")
            case .png: return try StillEncoder.encode([RGBImage.scene(width: width, height: height, seed: seed)], as: "png")
            case .webp: return try StillEncoder.encode([RGBImage.scene(width: width, height: height, seed: seed)], as: "webp")
            case .heic: return try StillEncoder.encode([RGBImage.scene(width: width, height: height, seed: seed)], as: "heic")
            case .avif: return try StillEncoder.encode([RGBImage.scene(width: width, height: height, seed: seed)], as: "avif")
            case .gif:
                let frames = (0..<3).map { RGBImage.scene(width: width, height: height, seed: seed, phase: Double($0) / 3) }
                return try StillEncoder.encode(frames, as: "gif")
            case .mp4, .quickTime:
                return try movie(width: width, height: height, duration: 3, quickTime: format == .quickTime, seed: seed)
            }
        } catch {
            preconditionFailure("\(error)")
        }
    }

    /// A movie made by `ffmpeg` from its `testsrc` pattern, hue-shifted by `seed`: H.264 in an
    /// MP4 (or a QuickTime movie), 10 frames a second, without audio. `metadata` adds container
    /// tags (`creation_time`, `location`, …), `filters` more video filters (`setsar=4/3`),
    /// `arguments` more output options.
    public static func movie(
        width: Int, height: Int, duration: Double, quickTime: Bool = false, seed: UInt64 = 1, metadata: [String: String] = [:],
        filters: [String] = [], arguments: [String] = []
    ) throws -> [UInt8] {
        let pattern = "testsrc=size=\(width)x\(height):rate=10:duration=\(duration)"
        var options = ["-f", "lavfi", "-i", pattern, "-vf", (["hue=h=\(seed % 360)"] + filters).joined(separator: ",")]
        options += ["-c:v", "libx264", "-pix_fmt", width % 2 == 0 && height % 2 == 0 ? "yuv420p" : "yuv444p", "-threads", "1"]
        options += ["-fflags", "+bitexact", "-flags:v", "+bitexact", "-map_metadata", "-1"]
        for (key, value) in metadata.sorted(by: { $0.key < $1.key }) { options += ["-metadata", "\(key)=\(value)"] }
        return try ffmpeg(options + arguments, extension: quickTime ? "mov" : "mp4")
    }

    /// An audio-only file (AAC in MP4, an .m4a) made by `ffmpeg`: a sine tone.
    public static func audio(duration: Double, seed: UInt64 = 1) throws -> [UInt8] {
        try ffmpeg(
            [
                "-f", "lavfi", "-i", "sine=frequency=\(220 + seed % 660):duration=\(duration)", "-c:a", "aac", "-fflags", "+bitexact",
                "-flags:a", "+bitexact", "-map_metadata", "-1",
            ], extension: "m4a")
    }

    /// Runs `ffmpeg` with `options` writing a file of `extension`, and returns its bytes.
    public static func ffmpeg(_ options: [String], extension: String) throws -> [UInt8] {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("synthetic-\(UUID().uuidString).\(`extension`)")
        defer { try? FileManager.default.removeItem(at: output) }
        try run(tool: "ffmpeg", ["-v", "error", "-nostdin"] + options + ["-y", output.path])
        return Array(try Data(contentsOf: output))
    }

    /// Runs one of the media tools (`ffmpeg`, `vips`, `exiftool`) installed by
    /// `Tools/install-dependencies.sh`, failing with its standard error when it fails.
    public static func run(tool: String, _ arguments: [String]) throws {
        guard let executable = ["/usr/bin/\(tool)", "/usr/local/bin/\(tool)"].first(where: FileManager.default.isExecutableFile) else {
            throw MediaSynthesisError("\(tool) is not installed; run Tools/install-dependencies.sh")
        }
        let process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let message = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw MediaSynthesisError("\(tool) \(arguments.joined(separator: " ")) failed: \(String(decoding: message, as: UTF8.self))")
        }
    }

    /// The mean red, green and blue of an image.
    public static func averageColor(_ image: RGBImage) -> (red: UInt8, green: UInt8, blue: UInt8) {
        var sums = [0, 0, 0]
        for (index, value) in image.pixels.enumerated() { sums[index % 3] += Int(value) }
        let count = image.width * image.height
        return (UInt8(sums[0] / count), UInt8(sums[1] / count), UInt8(sums[2] / count))
    }
}
