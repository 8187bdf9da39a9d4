import Foundation
import FuzzSupport
import LedgerCore
import MediaFuzzSupport
import MediaSynthesis
import PhotoMedia

/// The metadata readers of our own on their own, fast enough for long runs: the EXIF reader
/// (libexif, libexiv2's recovery of large blocks, our date and GPS reading), PNG text profiles,
/// the dates and ISO 6709 locations of movie metadata. What they read must make an
/// `asset.created` event that other devices fold (`ImportCheck`). Whole files go through the
/// `media` target.
///
/// The first byte of an input says what the rest is:
///
/// | first byte | the rest of the input |
/// |---|---|
/// | `T` | the text of a PNG `Raw profile type exif`, whose payload the EXIF reader then reads |
/// | `D` | a date text, then after a NUL byte the text of an EXIF offset tag |
/// | `L` | an ISO 6709 location text |
/// | `E` | an EXIF payload |
/// | anything else | the whole input as an EXIF payload |
@main
enum MetadataTarget: FuzzTarget {
    static func seeds() -> [Seed] {
        let date = Date(timeIntervalSince1970: 1_764_483_790)
        let place = Location(latitude: -33.8568, longitude: 151.2153, altitude: -4.5)
        // With its `Exif\0\0` header.
        let exif = ExifWriter.payload(entries: ExifWriter.entries(creationDate: date, location: place))
        let hex = exif.map { String(format: "%02x", $0) }.joined()
        let profile =
            "\nexif\n\(exif.count)\n"
            + stride(from: 0, to: hex.count, by: 72).map { start in
                let from = hex.index(hex.startIndex, offsetBy: start)
                return String(hex[from..<(hex.index(from, offsetBy: 72, limitedBy: hex.endIndex) ?? hex.endIndex)])
            }.joined(separator: "\n")
        let inputs: [(String, [UInt8])] = [
            ("exif.bin", Array("E".utf8) + exif),
            ("exif-tiff.bin", Array("E".utf8) + exif.dropFirst(6)),
            ("profile.txt", Array("T\(profile)".utf8)),
            ("date-exif.txt", Array("D2015:06:29 18:19:12\u{0}+01:00".utf8)),
            ("date-iso.txt", Array("D2015-06-29T18:19:12.250-07:30".utf8)),
            ("date-utc.txt", Array("D2025-11-30T06:23:10Z".utf8)),
            ("location.txt", Array("L+48.8583+002.2945+035.000/".utf8)),
            ("location-crs.txt", Array("L-33.8568+151.2153CRSWGS_84/".utf8)),
        ]
        return inputs.map { Seed(name: $0.0, bytes: $0.1) }
    }

    static func accepts(_ input: [UInt8]) -> Bool {
        switch Part(input) {
        case .exif(let payload): return MediaInspector.exifMetadata(payload) != (nil, nil)
        case .textProfile(let text):
            return MediaInspector.exifPayload(textProfile: text).map(MediaInspector.exifMetadata) ?? (nil, nil) != (nil, nil)
        case .date(let text, let offset): return MediaInspector.date(text: text, offset: offset) != nil
        case .location(let text): return MediaInspector.location(iso6709: text) != nil
        }
    }

    static func run(_ input: [UInt8]) {
        switch Part(input) {
        case .exif(let payload):
            let read = MediaInspector.exifMetadata(payload)
            ImportCheck.check(creationDate: read.0, location: read.1)
        case .textProfile(let text):
            guard let payload = MediaInspector.exifPayload(textProfile: text) else { return }
            let read = MediaInspector.exifMetadata(payload)
            ImportCheck.check(creationDate: read.0, location: read.1)
        case .date(let text, let offset):
            ImportCheck.check(creationDate: MediaInspector.date(text: text, offset: offset), location: nil)
        case .location(let text):
            ImportCheck.check(creationDate: nil, location: MediaInspector.location(iso6709: text))
        }
    }

    /// What an input is read as.
    enum Part {
        case exif([UInt8])
        case textProfile(String)
        case date(String, offset: String?)
        case location(String)

        init(_ input: [UInt8]) {
            let text = String(decoding: input.dropFirst(), as: UTF8.self)
            switch input.first {
            case UInt8(ascii: "T"): self = .textProfile(text)
            case UInt8(ascii: "D"):
                let parts = text.split(separator: "\u{0}", maxSplits: 1, omittingEmptySubsequences: false)
                self = .date(String(parts[0]), offset: parts.count > 1 ? String(parts[1]) : nil)
            case UInt8(ascii: "L"): self = .location(text)
            case UInt8(ascii: "E"): self = .exif(Array(input.dropFirst()))
            default: self = .exif(input)
            }
        }
    }
}
