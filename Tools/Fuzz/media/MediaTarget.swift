import Foundation
import FuzzSupport
import LedgerCore
import MediaSynthesis
import PhotoLedger
import PhotoMedia

/// The media code of our own that a user's file reaches: `MediaInspector` over whole files (the
/// format recognition, the dispatch to libvips or FFmpeg through the `CMediaDecoding` shim, and
/// what is read from their results), and the metadata readers on their own: the EXIF reader
/// (libexif, libexiv2's recovery of large blocks, our date and GPS reading), PNG text profiles,
/// the dates and ISO 6709 locations of movie metadata. libvips and FFmpeg themselves are not
/// fuzzed here (they are not built with the sanitizers): inputs reach them, but only our code
/// guides the mutations. Whatever they read must make an `asset.created` event that other devices
/// fold (judged by `InMemoryFold`), as an import writes it: a value beyond what an event may
/// record would show the asset on the importing device only.
///
/// The first byte of an input says what the rest is:
///
/// | first byte | the rest of the input |
/// |---|---|
/// | `E` | an EXIF payload |
/// | `T` | the text of a PNG `Raw profile type exif`, whose payload the EXIF reader then reads |
/// | `D` | a date text, then after a NUL byte the text of an EXIF offset tag |
/// | `L` | an ISO 6709 location text |
/// | anything else | a whole file, given to `MediaInspector.inspect` |
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
        let hex = exif.map { String(format: "%02x", $0) }.joined()
        let profile =
            "\nexif\n\(exif.count)\n"
            + stride(from: 0, to: hex.count, by: 72).map { start in
                let from = hex.index(hex.startIndex, offsetBy: start)
                return String(hex[from..<(hex.index(from, offsetBy: 72, limitedBy: hex.endIndex) ?? hex.endIndex)])
            }.joined(separator: "\n")
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
            ("exif.bin", Array("E".utf8) + exif),
            ("exif-tiff.bin", Array("E".utf8) + exif.dropFirst(6)),
            ("profile.txt", Array("T\(profile)".utf8)),
            ("date-exif.txt", Array("D2015:06:29 18:19:12\u{0}+01:00".utf8)),
            ("date-iso.txt", Array("D2015-06-29T18:19:12.250-07:30".utf8)),
            ("date-utc.txt", Array("D2025-11-30T06:23:10Z".utf8)),
            ("location.txt", Array("L+48.8583+002.2945+035.000/".utf8)),
            ("location-crs.txt", Array("L-33.8568+151.2153CRSWGS_84/".utf8)),
        ]
        return files.map { Seed(name: $0.0, bytes: $0.1) }
    }

    static func accepts(_ input: [UInt8]) -> Bool {
        switch Part(input) {
        case .exif(let payload): return MediaInspector.exifMetadata(payload) != (nil, nil)
        case .textProfile(let text):
            return MediaInspector.exifPayload(textProfile: text).map(MediaInspector.exifMetadata) ?? (nil, nil) != (nil, nil)
        case .date(let text, let offset): return MediaInspector.date(text: text, offset: offset) != nil
        case .location(let text): return MediaInspector.location(iso6709: text) != nil
        case .file(let file): return (try? MediaInspector.inspect(file, name: "input")) != nil
        }
    }

    static func run(_ input: [UInt8]) {
        switch Part(input) {
        case .exif(let payload):
            check(MediaInspector.exifMetadata(payload))
        case .textProfile(let text):
            guard let payload = MediaInspector.exifPayload(textProfile: text) else { return }
            check(MediaInspector.exifMetadata(payload))
        case .date(let text, let offset):
            check((MediaInspector.date(text: text, offset: offset), nil))
        case .location(let text):
            check((nil, MediaInspector.location(iso6709: text)))
        case .file(let file):
            guard let info = try? MediaInspector.inspect(file, name: "input") else { return }
            require(info.pixelWidth > 0 && info.pixelHeight > 0, "inspected media of \(info.pixelWidth)×\(info.pixelHeight) pixels")
            check(info)
        }
    }

    /// Metadata read on its own, as a photo of one pixel would carry it.
    private static func check(_ metadata: (creationDate: Date?, location: Location?)) {
        check(MediaInfo(format: .jpeg, pixelWidth: 1, pixelHeight: 1, creationDate: metadata.creationDate, location: metadata.location))
    }

    /// The `asset.created` event an import of `info` writes must fold.
    private static func check(_ info: MediaInfo) {
        var fold = InMemoryFold(library: nil)
        let event = Event(
            id: SampleEvents.identifier(1), device: "anna-phone", deviceSequence: 1, timestamp: HLCTimestamp(milliseconds: 1, counter: 0),
            changeBlock: SampleEvents.identifier(2), object: SampleEvents.identifier(3), type: EventType.assetCreated.rawValue,
            schemaVersion: 2, payload: InMemoryFold.assetCreatedPayload(primary: info))
        require(fold.add(event), "an import of \(info) writes an event other devices set aside: \(fold.reasonsSetAside)")
    }

    /// What an input is read as.
    enum Part {
        case file([UInt8])
        case exif([UInt8])
        case textProfile(String)
        case date(String, offset: String?)
        case location(String)

        init(_ input: [UInt8]) {
            let text = String(decoding: input.dropFirst(), as: UTF8.self)
            switch input.first {
            case UInt8(ascii: "E"): self = .exif(Array(input.dropFirst()))
            case UInt8(ascii: "T"): self = .textProfile(text)
            case UInt8(ascii: "D"):
                let parts = text.split(separator: "\u{0}", maxSplits: 1, omittingEmptySubsequences: false)
                self = .date(String(parts[0]), offset: parts.count > 1 ? String(parts[1]) : nil)
            case UInt8(ascii: "L"): self = .location(text)
            default: self = .file(input)
            }
        }
    }
}
