import CExif
import Foundation
import LedgerCore

/// EXIF through libexif (Debian's libexif): the creation date and GPS location read from a photo,
/// and the APP1 payload written into synthesized JPEGs. No EXIF parsing is done by hand.
enum Exif {
    /// `Exif\0\0`, the header that starts an EXIF APP1 payload.
    static let header: [UInt8] = Array("Exif".utf8) + [0, 0]

    private enum Tag {
        static let dateTime: UInt32 = 0x0132
        static let dateTimeOriginal: UInt32 = 0x9003
        static let offsetTime: UInt32 = 0x9010
        static let offsetTimeOriginal: UInt32 = 0x9011
        static let gpsVersionID: UInt32 = 0x0000
        static let gpsLatitudeRef: UInt32 = 0x0001
        static let gpsLatitude: UInt32 = 0x0002
        static let gpsLongitudeRef: UInt32 = 0x0003
        static let gpsLongitude: UInt32 = 0x0004
        static let gpsAltitudeRef: UInt32 = 0x0005
        static let gpsAltitude: UInt32 = 0x0006
    }

    // MARK: Reading

    /// The creation date and location in an EXIF payload (APP1 contents, with or without the
    /// `Exif\0\0` header); nil fields when the payload lacks them or libexif cannot read it.
    static func metadata(from payload: [UInt8]) -> (creationDate: Date?, location: Location?) {
        let bytes = payload.starts(with: header) ? payload : header + payload
        guard bytes.count > header.count + 8, let data = exif_data_new() else { return (nil, nil) }
        defer { exif_data_unref(data) }
        // Reading must not invent values: FOLLOW_SPECIFICATION would add missing mandatory tags.
        exif_data_unset_option(data, EXIF_DATA_OPTION_FOLLOW_SPECIFICATION)
        bytes.withUnsafeBufferPointer { exif_data_load_data(data, $0.baseAddress, UInt32($0.count)) }
        let order = exif_data_get_byte_order(data)
        let ifds = data.pointee.ifd
        let date =
            date(text: ascii(ifds.2, Tag.dateTimeOriginal), offset: ascii(ifds.2, Tag.offsetTimeOriginal))
            ?? date(text: ascii(ifds.0, Tag.dateTime), offset: ascii(ifds.2, Tag.offsetTime))
        return (date, location(ifds.3, order: order))
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

    private static func rationals(_ content: UnsafeMutablePointer<ExifContent>?, _ tag: UInt32, order: ExifByteOrder) -> [Double]? {
        guard let entry = entry(content, tag), entry.format == EXIF_FORMAT_RATIONAL else { return nil }
        let count = min(Int(entry.components), Int(entry.size) / 8)
        guard count > 0 else { return nil }
        return (0..<count).map { index in
            let value = exif_get_rational(entry.data + 8 * index, order)
            return value.denominator == 0 ? .nan : Double(value.numerator) / Double(value.denominator)
        }
    }

    /// A date from EXIF text `YYYY:MM:DD HH:MM:SS` and an optional offset `±HH:MM`. Without an
    /// offset the time is read as UTC, so that every device derives the same instant.
    static func date(text: String?, offset: String?) -> Date? {
        guard let text else { return nil }
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
        let seconds = timegm(&time)
        return Date(timeIntervalSince1970: TimeInterval(seconds - offsetSeconds(offset)))
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

    // MARK: Writing

    /// An EXIF payload (starting with `Exif\0\0`, ready for a JPEG APP1 segment) that records
    /// `creationDate` as DateTimeOriginal (UTC, with OffsetTimeOriginal `+00:00`) and `location`
    /// as GPS tags, built and serialised by libexif.
    static func payload(creationDate: Date?, location: Location?) -> [UInt8] {
        guard let memory = exif_mem_new_default() else { return [] }
        defer { exif_mem_unref(memory) }
        guard let data = exif_data_new_mem(memory) else { return [] }
        defer { exif_data_unref(data) }
        exif_data_set_byte_order(data, EXIF_BYTE_ORDER_INTEL)
        exif_data_set_data_type(data, EXIF_DATA_TYPE_COMPRESSED)
        let order = EXIF_BYTE_ORDER_INTEL
        let ifds = data.pointee.ifd

        func add(_ content: UnsafeMutablePointer<ExifContent>?, _ tag: UInt32, _ format: ExifFormat, components: Int, _ bytes: [UInt8]) {
            guard let content, let entry = exif_entry_new_mem(memory) else { return }
            defer { exif_entry_unref(entry) }
            guard let storage = exif_mem_alloc(memory, ExifLong(bytes.count)) else { return }
            let target = storage.assumingMemoryBound(to: UInt8.self)
            target.update(from: bytes, count: bytes.count)
            entry.pointee.tag = ExifTag(rawValue: tag)
            entry.pointee.format = format
            entry.pointee.components = UInt(components)
            entry.pointee.data = target
            entry.pointee.size = UInt32(bytes.count)
            exif_content_add_entry(content, entry)
        }
        func text(_ value: String) -> [UInt8] { Array(value.utf8) + [0] }
        func rationals(_ values: [(UInt32, UInt32)]) -> [UInt8] {
            var bytes = [UInt8](repeating: 0, count: 8 * values.count)
            bytes.withUnsafeMutableBufferPointer { buffer in
                for (index, value) in values.enumerated() {
                    exif_set_rational(buffer.baseAddress! + 8 * index, order, ExifRational(numerator: value.0, denominator: value.1))
                }
            }
            return bytes
        }
        func sexagesimal(_ value: Double) -> [(UInt32, UInt32)] {
            let magnitude = abs(value)
            let degrees = magnitude.rounded(.down)
            let minutes = ((magnitude - degrees) * 60).rounded(.down)
            let seconds = (magnitude - degrees - minutes / 60) * 3600
            return [(UInt32(degrees), 1), (UInt32(minutes), 1), (UInt32((seconds * 10_000).rounded()), 10_000)]
        }

        if let creationDate {
            var seconds = time_t(creationDate.timeIntervalSince1970.rounded(.down))
            var parts = tm()
            gmtime_r(&seconds, &parts)
            let stamp = String(
                format: "%04d:%02d:%02d %02d:%02d:%02d", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1, Int(parts.tm_mday),
                Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec))
            add(ifds.2, Tag.dateTimeOriginal, EXIF_FORMAT_ASCII, components: 20, text(stamp))
            add(ifds.2, Tag.offsetTimeOriginal, EXIF_FORMAT_ASCII, components: 7, text("+00:00"))
        }
        if let location {
            add(ifds.3, Tag.gpsVersionID, EXIF_FORMAT_BYTE, components: 4, [2, 3, 0, 0])
            add(ifds.3, Tag.gpsLatitudeRef, EXIF_FORMAT_ASCII, components: 2, text(location.latitude < 0 ? "S" : "N"))
            add(ifds.3, Tag.gpsLatitude, EXIF_FORMAT_RATIONAL, components: 3, rationals(sexagesimal(location.latitude)))
            add(ifds.3, Tag.gpsLongitudeRef, EXIF_FORMAT_ASCII, components: 2, text(location.longitude < 0 ? "W" : "E"))
            add(ifds.3, Tag.gpsLongitude, EXIF_FORMAT_RATIONAL, components: 3, rationals(sexagesimal(location.longitude)))
            if let altitude = location.altitude {
                add(ifds.3, Tag.gpsAltitudeRef, EXIF_FORMAT_BYTE, components: 1, [altitude < 0 ? 1 : 0])
                add(
                    ifds.3, Tag.gpsAltitude, EXIF_FORMAT_RATIONAL, components: 1,
                    rationals([(UInt32((abs(altitude) * 100).rounded()), 100)]))
            }
        }

        var buffer: UnsafeMutablePointer<UInt8>?
        var size: UInt32 = 0
        exif_data_save_data(data, &buffer, &size)
        guard let buffer else { return [] }
        defer { exif_mem_free(memory, buffer) }
        return Array(UnsafeBufferPointer(start: buffer, count: Int(size)))
    }
}
