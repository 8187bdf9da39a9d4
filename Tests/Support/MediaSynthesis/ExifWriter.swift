import CExif
import Foundation
import LedgerCore

/// EXIF payloads built and serialised by libexif, for media made in tests, the demo and the
/// benchmarks: a creation date and a location, or any entries a test needs (signed GPS
/// rationals, odd date texts, an orientation).
public enum ExifWriter {
    /// An entry to write: its IFD (0: IFD0, 2: Exif, 3: GPS), tag, libexif format, component
    /// count and bytes in Intel (little-endian) order.
    public struct Entry: Sendable {
        /// 0: IFD0, 1: IFD1 (thumbnail), 2: Exif, 3: GPS, 4: interoperability.
        public var ifd: Int
        /// The tag number, e.g. 0x9003 for DateTimeOriginal.
        public var tag: UInt32
        /// The EXIF type written, whatever the tag's usual type is.
        public var format: ExifFormat
        /// How many values of `format`.
        public var components: Int
        /// The values, in Intel byte order.
        public var bytes: [UInt8]

        /// An entry of raw bytes.
        public init(ifd: Int, tag: UInt32, format: ExifFormat, components: Int, bytes: [UInt8]) {
            self.ifd = ifd
            self.tag = tag
            self.format = format
            self.components = components
            self.bytes = bytes
        }

        /// An ASCII entry (NUL added).
        public static func text(ifd: Int, tag: UInt32, _ value: String) -> Entry {
            let bytes = Array(value.utf8) + [0]
            return Entry(ifd: ifd, tag: tag, format: EXIF_FORMAT_ASCII, components: bytes.count, bytes: bytes)
        }

        /// A SHORT entry.
        public static func short(ifd: Int, tag: UInt32, _ value: UInt16) -> Entry {
            Entry(ifd: ifd, tag: tag, format: EXIF_FORMAT_SHORT, components: 1, bytes: [UInt8(value & 0xFF), UInt8(value >> 8)])
        }

        /// A RATIONAL (`signed` false) or SRATIONAL entry of numerator/denominator pairs.
        public static func rationals(ifd: Int, tag: UInt32, signed: Bool, _ values: [(Int32, Int32)]) -> Entry {
            var bytes: [UInt8] = []
            for (numerator, denominator) in values {
                for value in [UInt32(bitPattern: numerator), UInt32(bitPattern: denominator)] {
                    bytes += [UInt8(value & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value >> 16 & 0xFF), UInt8(value >> 24)]
                }
            }
            return Entry(
                ifd: ifd, tag: tag, format: signed ? EXIF_FORMAT_SRATIONAL : EXIF_FORMAT_RATIONAL, components: values.count, bytes: bytes)
        }
    }

    /// An EXIF payload (starting with `Exif\0\0`) holding `entries`, serialised by libexif.
    public static func payload(entries: [Entry]) -> [UInt8] {
        guard let memory = exif_mem_new_default() else { return [] }
        defer { exif_mem_unref(memory) }
        guard let data = exif_data_new_mem(memory) else { return [] }
        defer { exif_data_unref(data) }
        exif_data_set_byte_order(data, EXIF_BYTE_ORDER_INTEL)
        exif_data_set_data_type(data, EXIF_DATA_TYPE_COMPRESSED)
        let ifds = data.pointee.ifd
        let contents = [ifds.0, ifds.1, ifds.2, ifds.3, ifds.4]
        for item in entries {
            guard let content = contents[item.ifd], let entry = exif_entry_new_mem(memory) else { continue }
            defer { exif_entry_unref(entry) }
            guard let storage = exif_mem_alloc(memory, ExifLong(item.bytes.count)) else { continue }
            let target = storage.assumingMemoryBound(to: UInt8.self)
            target.update(from: item.bytes, count: item.bytes.count)
            entry.pointee.tag = ExifTag(rawValue: item.tag)
            entry.pointee.format = item.format
            entry.pointee.components = UInt(item.components)
            entry.pointee.data = target
            entry.pointee.size = UInt32(item.bytes.count)
            exif_content_add_entry(content, entry)
        }
        var buffer: UnsafeMutablePointer<UInt8>?
        var size: UInt32 = 0
        exif_data_save_data(data, &buffer, &size)
        guard let buffer else { return [] }
        defer { exif_mem_free(memory, buffer) }
        return Array(UnsafeBufferPointer(start: buffer, count: Int(size)))
    }

    /// The entries that record `creationDate` as DateTimeOriginal (UTC, with OffsetTimeOriginal
    /// `+00:00`) and `location` as GPS tags.
    public static func entries(creationDate: Date?, location: Location?) -> [Entry] {
        var entries: [Entry] = []
        if let creationDate {
            var seconds = time_t(creationDate.timeIntervalSince1970.rounded(.down))
            var parts = tm()
            gmtime_r(&seconds, &parts)
            let stamp = String(
                format: "%04d:%02d:%02d %02d:%02d:%02d", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1, Int(parts.tm_mday),
                Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec))
            entries.append(.text(ifd: 2, tag: 0x9003, stamp))
            entries.append(.text(ifd: 2, tag: 0x9011, "+00:00"))
        }
        if let location {
            func sexagesimal(_ value: Double) -> [(Int32, Int32)] {
                let magnitude = abs(value)
                let degrees = magnitude.rounded(.down)
                let minutes = ((magnitude - degrees) * 60).rounded(.down)
                let seconds = (magnitude - degrees - minutes / 60) * 3600
                return [(Int32(degrees), 1), (Int32(minutes), 1), (Int32((seconds * 10_000).rounded()), 10_000)]
            }
            entries.append(Entry(ifd: 3, tag: 0x0000, format: EXIF_FORMAT_BYTE, components: 4, bytes: [2, 3, 0, 0]))
            entries.append(.text(ifd: 3, tag: 0x0001, location.latitude < 0 ? "S" : "N"))
            entries.append(.rationals(ifd: 3, tag: 0x0002, signed: false, sexagesimal(location.latitude)))
            entries.append(.text(ifd: 3, tag: 0x0003, location.longitude < 0 ? "W" : "E"))
            entries.append(.rationals(ifd: 3, tag: 0x0004, signed: false, sexagesimal(location.longitude)))
            if let altitude = location.altitude {
                entries.append(Entry(ifd: 3, tag: 0x0005, format: EXIF_FORMAT_BYTE, components: 1, bytes: [altitude < 0 ? 1 : 0]))
                entries.append(.rationals(ifd: 3, tag: 0x0006, signed: false, [(Int32((abs(altitude) * 100).rounded()), 100)]))
            }
        }
        return entries
    }
}
