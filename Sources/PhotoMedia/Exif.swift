import CExif
import CExifRecovery
import Foundation
import LedgerCore

/// EXIF through libexif (Debian's libexif): the creation date, GPS location and orientation read
/// from a photo. No EXIF parsing is done by hand.
enum Exif {
    /// What an EXIF payload says.
    struct Metadata: Equatable {
        var creationDate: Date?
        var location: Location?
        var orientation: ImageOrientation?
        /// The EXIF UserComment (iOS and macOS write `Screenshot` in a screenshot's).
        var userComment: String?
        /// The EXIF LensModel (an iPhone's names its camera: `iPhone 12 front camera 2.71mm f/2.2`).
        var lensModel: String?
    }

    /// `Exif\0\0`, the header that starts an EXIF APP1 payload.
    static let header: [UInt8] = Array("Exif".utf8) + [0, 0]

    private enum Tag {
        static let orientation: UInt32 = 0x0112
        static let dateTime: UInt32 = 0x0132
        static let dateTimeOriginal: UInt32 = 0x9003
        static let dateTimeDigitized: UInt32 = 0x9004
        static let offsetTimeDigitized: UInt32 = 0x9012
        static let offsetTime: UInt32 = 0x9010
        static let offsetTimeOriginal: UInt32 = 0x9011
        static let gpsVersionID: UInt32 = 0x0000
        static let gpsLatitudeRef: UInt32 = 0x0001
        static let gpsLatitude: UInt32 = 0x0002
        static let gpsLongitudeRef: UInt32 = 0x0003
        static let gpsLongitude: UInt32 = 0x0004
        static let gpsAltitudeRef: UInt32 = 0x0005
        static let gpsAltitude: UInt32 = 0x0006
        static let userComment: UInt32 = 0x9286
        static let lensModel: UInt32 = 0xA434
    }

    // MARK: Reading

    /// The creation date, location and orientation in an EXIF payload (APP1 contents, with or
    /// without the `Exif\0\0` header); nil fields when the payload lacks them or it cannot be
    /// read. libexif reads it; a block it cannot read whole (its reader stops at 64 KB, which
    /// HEIC, PNG and WebP blocks can pass) is first re-encoded by libexiv2 without its maker
    /// notes and thumbnail.
    static func metadata(from payload: [UInt8]) -> Metadata {
        let tiff = payload.starts(with: header) ? Array(payload.dropFirst(header.count)) : payload
        guard tiff.count > 8 else { return Metadata() }
        if tiff.count > libexifLimit, let recovered = recover(tiff), let metadata = read(recovered) { return metadata }
        if let metadata = read(tiff) { return metadata }
        return recover(tiff).flatMap(read) ?? Metadata()
    }

    /// The most bytes of a block libexif reads.
    static let libexifLimit = 0xFFFE - 6

    /// What libexif reads from a TIFF block, or nil when it finds no entry at all.
    private static func read(_ tiff: [UInt8]) -> Metadata? {
        guard let data = exif_data_new() else { return nil }
        defer { exif_data_unref(data) }
        // Reading must not invent values: FOLLOW_SPECIFICATION would add missing mandatory tags.
        exif_data_unset_option(data, EXIF_DATA_OPTION_FOLLOW_SPECIFICATION)
        let bytes = header + tiff
        bytes.withUnsafeBufferPointer { exif_data_load_data(data, $0.baseAddress, UInt32($0.count)) }
        let ifds = data.pointee.ifd
        guard [ifds.0, ifds.1, ifds.2, ifds.3, ifds.4].contains(where: { ($0?.pointee.count ?? 0) > 0 }) else { return nil }
        let order = exif_data_get_byte_order(data)
        let date =
            date(text: ascii(ifds.2, Tag.dateTimeOriginal), offset: ascii(ifds.2, Tag.offsetTimeOriginal))
            ?? date(text: ascii(ifds.2, Tag.dateTimeDigitized), offset: ascii(ifds.2, Tag.offsetTimeDigitized))
            ?? date(text: ascii(ifds.0, Tag.dateTime), offset: ascii(ifds.2, Tag.offsetTime))
        return Metadata(
            creationDate: date, location: location(ifds.3, order: order), orientation: orientation(ifds.0, order: order),
            userComment: userComment(ifds.2, order: order), lensModel: ascii(ifds.2, Tag.lensModel))
    }

    /// The block re-encoded by libexiv2 (main, Exif, GPS and interoperability IFDs only), or nil.
    private static func recover(_ tiff: [UInt8]) -> [UInt8]? {
        var result: UnsafeMutablePointer<UInt8>?
        var length = 0
        guard tiff.withUnsafeBufferPointer({ photoledger_exif_recover($0.baseAddress, $0.count, &result, &length) }) == 0, let result
        else { return nil }
        defer { photoledger_exif_recovered_free(result) }
        return Array(UnsafeBufferPointer(start: result, count: length))
    }

    /// The text of a UserComment: 8 bytes naming its character code (`ASCII`, `UNICODE` for
    /// UTF-16 in the block's byte order, or zeros, read as UTF-8), then the text.
    private static func userComment(_ content: UnsafeMutablePointer<ExifContent>?, order: ExifByteOrder) -> String? {
        guard let entry = entry(content, Tag.userComment), entry.size > 8 else { return nil }
        let bytes = Array(UnsafeBufferPointer(start: entry.data, count: Int(entry.size)))
        let code = bytes.prefix(8), body = Array(bytes.dropFirst(8))
        let text: String
        if code.elementsEqual(Array("UNICODE".utf8) + [0]) {
            let bigEndian = order == EXIF_BYTE_ORDER_MOTOROLA
            var units: [UInt16] = []
            for index in stride(from: 0, to: body.count - 1, by: 2) {
                let (first, second) = (UInt16(body[index]), UInt16(body[index + 1]))
                units.append(bigEndian ? first << 8 | second : second << 8 | first)
            }
            text = String(decoding: units, as: UTF16.self)
        } else {
            text = String(decoding: body, as: UTF8.self)
        }
        let trimmed = text.trimmingCharacters(in: CharacterSet.whitespacesAndNewlines.union(CharacterSet(charactersIn: "\0")))
        return trimmed.isEmpty ? nil : trimmed
    }

    private static func orientation(_ content: UnsafeMutablePointer<ExifContent>?, order: ExifByteOrder) -> ImageOrientation? {
        guard let entry = entry(content, Tag.orientation), entry.format == EXIF_FORMAT_SHORT, entry.size >= 2 else { return nil }
        return ImageOrientation(rawValue: Int(exif_get_short(entry.data, order)))
    }

    /// The EXIF payload in the text of a PNG `Raw profile type exif` chunk (ImageMagick's and
    /// exiftool's way of keeping EXIF in a PNG before `eXIf`): a line with the profile name, a
    /// line with its length, then the bytes in hexadecimal.
    static func payload(fromTextProfile text: String) -> [UInt8]? {
        let lines = text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        guard lines.count >= 3, let length = Int(lines[1]), length > 0, length <= 1 << 24 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(length)
        var high: UInt8?
        for character in lines[2...].joined().utf8 {
            guard let value = hexValue(character) else { return nil }
            if let first = high {
                bytes.append(first << 4 | value)
                high = nil
            } else {
                high = value
            }
        }
        guard bytes.count >= length else { return nil }
        return Array(bytes.prefix(length))
    }

    private static func hexValue(_ character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): character - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): character - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): character - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    private static func entry(_ content: UnsafeMutablePointer<ExifContent>?, _ tag: UInt32) -> ExifEntry? {
        guard let content, let entry = exif_content_get_entry(content, ExifTag(rawValue: tag)),
            entry.pointee.data != nil
        else { return nil }
        return entry.pointee
    }

    private static func ascii(_ content: UnsafeMutablePointer<ExifContent>?, _ tag: UInt32) -> String? {
        guard let entry = entry(content, tag), entry.format == EXIF_FORMAT_ASCII else { return nil }
        let bytes = UnsafeBufferPointer(start: entry.data, count: Int(entry.size))
        return String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self).trimmingCharacters(in: .whitespaces)
    }

    /// The values of a RATIONAL or SRATIONAL entry (some phones write GPS coordinates signed).
    private static func rationals(_ content: UnsafeMutablePointer<ExifContent>?, _ tag: UInt32, order: ExifByteOrder) -> [Double]? {
        guard let entry = entry(content, tag), entry.format == EXIF_FORMAT_RATIONAL || entry.format == EXIF_FORMAT_SRATIONAL else {
            return nil
        }
        let count = min(Int(entry.components), Int(entry.size) / 8)
        guard count > 0 else { return nil }
        return (0..<count).map { index in
            if entry.format == EXIF_FORMAT_SRATIONAL {
                let value = exif_get_srational(entry.data + 8 * index, order)
                return value.denominator == 0 ? .nan : Double(value.numerator) / Double(value.denominator)
            }
            let value = exif_get_rational(entry.data + 8 * index, order)
            return value.denominator == 0 ? .nan : Double(value.numerator) / Double(value.denominator)
        }
    }

    /// A date from EXIF text `YYYY:MM:DD HH:MM:SS` and an optional offset `±HH:MM`. Without an
    /// offset the time is read as UTC, so that every device derives the same instant. Text that
    /// some writers put there instead, ISO 8601 (`2015-06-29T18:19:12+01:00`, `…Z`, fractions of
    /// a second), is read too; an offset in the text wins over the separate tag. Nil when the
    /// instant falls outside the years 1 to 9999 (`MediaInfo.dateRange`).
    static func date(text: String?, offset: String?) -> Date? {
        guard var text else { return nil }
        var offset = offset
        if text.hasSuffix("Z") {
            text.removeLast()
            offset = "+00:00"
        } else if let start = text.index(text.startIndex, offsetBy: 19, limitedBy: text.endIndex),
            let sign = text[start...].firstIndex(where: { $0 == "+" || $0 == "-" })
        {
            let zone = text[text.index(after: sign)...].replacingOccurrences(of: ":", with: "")
            if zone.count == 4, zone.allSatisfy(\.isNumber) {
                offset = "\(text[sign])\(zone.prefix(2)):\(zone.suffix(2))"
                text = String(text[..<sign])
            }
        }
        if let dot = text.firstIndex(of: "."), text.distance(from: text.startIndex, to: dot) >= 19 { text = String(text[..<dot]) }
        let digits = text.split { $0 == ":" || $0 == " " || $0 == "-" || $0 == "T" }.map { Int($0) }
        guard digits.count >= 6, let year = digits[0], let month = digits[1], let day = digits[2], let hour = digits[3],
            let minute = digits[4], let second = digits[5], (1...9999).contains(year), (1...12).contains(month),
            (1...31).contains(day), (0...23).contains(hour), (0...59).contains(minute), (0...60).contains(second)
        else { return nil }
        var time = tm()
        time.tm_year = Int32(year - 1900)
        time.tm_mon = Int32(month - 1)
        time.tm_mday = Int32(day)
        time.tm_hour = Int32(hour)
        time.tm_min = Int32(minute)
        time.tm_sec = Int32(second)
        let seconds = TimeInterval(timegm(&time) - offsetSeconds(offset))
        // The offset can carry the first and last seconds out of the years 1 to 9999.
        guard MediaInfo.dateRange.contains(seconds) else { return nil }
        return Date(timeIntervalSince1970: seconds)
    }

    private static func offsetSeconds(_ text: String?) -> Int {
        guard let text, text.count == 6, let sign = text.first, sign == "+" || sign == "-" else { return 0 }
        let parts = text.dropFirst().split(separator: ":").compactMap { Int($0) }
        guard parts.count == 2 else { return 0 }
        return (sign == "-" ? -1 : 1) * (parts[0] * 3600 + parts[1] * 60)
    }

    private static func location(_ gps: UnsafeMutablePointer<ExifContent>?, order: ExifByteOrder) -> Location? {
        func degrees(_ tag: UInt32, reference: UInt32, negative: String) -> Double? {
            guard let parts = rationals(gps, tag, order: order), parts.count >= 3 else { return nil }
            let value = parts[0] + parts[1] / 60 + parts[2] / 3600
            guard value.isFinite else { return nil }
            return ascii(gps, reference)?.uppercased() == negative ? -value : value
        }
        guard let latitude = degrees(Tag.gpsLatitude, reference: Tag.gpsLatitudeRef, negative: "S"),
            let longitude = degrees(Tag.gpsLongitude, reference: Tag.gpsLongitudeRef, negative: "W"),
            abs(latitude) <= 90, abs(longitude) <= 180
        else { return nil }
        var altitude = rationals(gps, Tag.gpsAltitude, order: order)?.first
        if altitude?.isFinite != true { altitude = nil }
        if let reference = entry(gps, Tag.gpsAltitudeRef), reference.format == EXIF_FORMAT_BYTE, reference.size >= 1,
            reference.data[0] == 1
        {
            altitude = altitude.map { -$0 }
        }
        return Location(latitude: latitude, longitude: longitude, altitude: altitude)
    }
}
