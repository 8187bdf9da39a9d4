import Foundation
import LedgerCore
import MediaSynthesis
import PhotoMedia
@_exported import TestSupportKit

/// Small files made by the real encoders, and ways to damage them.
enum Samples {
    static let creationDate = Date(timeIntervalSince1970: 1_764_483_790)
    static let location = Location(latitude: -33.856784, longitude: 151.215297, altitude: 42.5)

    /// One small file of every supported format.
    static func all() -> [(format: MediaFormat, bytes: [UInt8], width: Int, height: Int)] {
        MediaFormat.allCases.map { format in (format, SyntheticMedia.sample(format, width: 38, height: 22, seed: 9), 38, 22) }
    }

    /// A still of `format` ("jpeg", "png", …) showing the scene for `seed`.
    static func still(_ format: String, width: Int = 64, height: Int = 48, seed: UInt64 = 1, options: StillEncoder.Options = .init())
        throws -> [UInt8]
    {
        try StillEncoder.encode([RGBImage.scene(width: width, height: height, seed: seed)], as: format, options: options)
    }

    /// `bytes` rewritten by `exiftool` with `arguments` (such as `-Orientation#=6`), as a file
    /// named with `extension`.
    static func exiftool(_ bytes: [UInt8], extension: String, _ arguments: [String]) throws -> [UInt8] {
        let directory = try TemporaryDirectory()
        let url = try directory.write(bytes, to: "file.\(`extension`)")
        try SyntheticMedia.run(tool: "exiftool", ["-q", "-q", "-overwrite_original"] + arguments + [url.path])
        return Array(try Data(contentsOf: url))
    }

    /// The error `body` throws, when it is a `MediaError`.
    static func mediaError(_ body: () throws -> Void) -> MediaError? {
        do {
            try body()
            return nil
        } catch let error as MediaError {
            return error
        } catch {
            return MediaError(.fileSystem, resource: "unexpected", reason: "\(error)")
        }
    }

    /// The offsets and markers of a JPEG's segments up to the first scan.
    static func jpegSegments(_ bytes: [UInt8]) -> [(offset: Int, marker: UInt8, length: Int)] {
        var segments: [(Int, UInt8, Int)] = []
        var offset = 2
        while offset + 4 <= bytes.count, bytes[offset] == 0xFF {
            let marker = bytes[offset + 1]
            let length = Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])
            segments.append((offset, marker, length))
            if marker == 0xDA { break }
            offset += 2 + length
        }
        return segments
    }

    /// A PNG chunk with its CRC (wrong when `damaged`).
    static func pngChunk(_ type: String, _ data: [UInt8], damaged: Bool = false) -> [UInt8] {
        let body = Array(type.utf8) + data
        var crc = UInt32(0xFFFF_FFFF)
        for byte in body {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        crc = ~crc ^ (damaged ? 1 : 0)
        return bigEndian(UInt32(data.count)) + body + bigEndian(crc)
    }

    static func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }
}
