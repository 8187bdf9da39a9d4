import Foundation

/// A minimal, bounds-checked reader of ISO base media files (MP4, QuickTime, HEIF/HEIC).
///
/// Why not a library: the facts needed here (movie duration, the video track's size, the HEIF
/// primary item's `ispe`/`irot`, the location of an EXIF item) sit in a handful of fixed-layout
/// boxes. Debian has no maintained library that reads just these without pulling in a whole media
/// framework (FFmpeg's libavformat, GStreamer, libheif with its codecs), each a large attack
/// surface and dependency tree for a few dozen bytes of header. This reader walks the top-level
/// boxes by seeking (a 4 GB video costs a few small reads), loads only `moov` or `meta` (bounded
/// in size), and checks every length against its parent before use, so damaged files throw
/// `InvalidMedia` instead of trapping or reading out of bounds.
enum ISOBaseMedia {
    /// A box: its type and where its payload lies in the file or the parent buffer.
    struct Box {
        var type: String
        var payloadOffset: Int64
        var payloadLength: Int64
    }

    /// The largest `moov` or `meta` box loaded into memory.
    static let maximumHeaderBoxLength: Int64 = 64 << 20

    /// Seconds between 1904-01-01 (the QuickTime/MP4 epoch) and 1970-01-01.
    static let epochOffset: Double = 2_082_844_800

    /// The top-level boxes of a file, read by seeking from header to header.
    static func topLevelBoxes(_ source: ByteSource, kind: String) throws -> [Box] {
        var boxes: [Box] = []
        var offset: Int64 = 0
        while offset < source.count {
            guard source.count - offset >= 8 else { throw InvalidMedia("truncated \(kind) (a box header is cut off)") }
            let head = try source.read(exactly: 16 <= source.count - offset ? 16 : 8, at: offset, "truncated \(kind) box header")
            var size = Int64(head.bigEndian(at: 0, length: 4))
            let type = String(decoding: head[4..<8], as: UTF8.self)
            var headerLength: Int64 = 8
            if size == 1 {
                guard head.count == 16 else { throw InvalidMedia("truncated \(kind) (a box header is cut off)") }
                size = Int64(head.bigEndian(at: 8, length: 8))
                headerLength = 16
            } else if size == 0 {
                size = source.count - offset
            }
            guard size >= headerLength else { throw InvalidMedia("damaged \(kind) (box '\(type)' of \(size) bytes)") }
            guard size <= source.count - offset else {
                throw InvalidMedia("truncated \(kind) (box '\(type)' extends past the end of the file)")
            }
            boxes.append(Box(type: type, payloadOffset: offset + headerLength, payloadLength: size - headerLength))
            offset += size
            guard boxes.count <= 100_000 else { throw InvalidMedia("damaged \(kind) (too many boxes)") }
        }
        return boxes
    }

    /// The child boxes inside `bytes[range]` (a payload already in memory).
    static func children(of bytes: [UInt8], in range: Range<Int>, kind: String) throws -> [(type: String, payload: Range<Int>)] {
        var result: [(String, Range<Int>)] = []
        var offset = range.lowerBound
        while range.upperBound - offset >= 8 {
            var size = bytes.bigEndian(at: offset, length: 4)
            let type = String(decoding: bytes[offset + 4..<offset + 8], as: UTF8.self)
            var headerLength = 8
            if size == 1 {
                guard range.upperBound - offset >= 16 else { throw InvalidMedia("damaged \(kind) (box '\(type)' is cut off)") }
                size = bytes.bigEndian(at: offset + 8, length: 8)
                headerLength = 16
            } else if size == 0 {
                size = range.upperBound - offset
            }
            guard size >= headerLength, size <= range.upperBound - offset else {
                throw InvalidMedia("damaged \(kind) (box '\(type)' does not fit in its parent)")
            }
            result.append((type, offset + headerLength..<offset + size))
            offset += size
        }
        return result
    }

    /// Loads a top-level box's payload.
    static func load(_ box: Box, from source: ByteSource, kind: String) throws -> [UInt8] {
        guard box.payloadLength <= maximumHeaderBoxLength else {
            throw InvalidMedia("unsupported \(kind) ('\(box.type)' box of \(box.payloadLength) bytes)")
        }
        return try source.read(exactly: Int(box.payloadLength), at: box.payloadOffset, "truncated \(kind) '\(box.type)' box")
    }

    // MARK: Movies

    /// What the movie header and the first video track say.
    struct Movie {
        var duration: Double
        var width: Int
        var height: Int
        var creationDate: Date?
    }

    /// Duration from `moov/mvhd`; size from the first `trak` whose `mdia/hdlr` is `vide`, taken
    /// from `tkhd` (display size, 90° matrices swapped) or else from the `stsd` sample entry.
    static func movie(_ source: ByteSource, kind: String) throws -> Movie {
        let boxes = try topLevelBoxes(source, kind: kind)
        guard let moovBox = boxes.first(where: { $0.type == "moov" }) else {
            throw InvalidMedia("damaged \(kind) (no 'moov' box: the movie header is missing)")
        }
        guard boxes.contains(where: { $0.type == "mdat" }) else {
            throw InvalidMedia("truncated \(kind) (no media data: 'mdat' box missing)")
        }
        let moov = try load(moovBox, from: source, kind: kind)
        let children = try children(of: moov, in: 0..<moov.count, kind: kind)
        guard let header = children.first(where: { $0.type == "mvhd" }) else { throw InvalidMedia("damaged \(kind) (no 'mvhd' box)") }
        var cursor = ByteCursor(moov, offset: header.payload.lowerBound, what: "damaged \(kind) ('mvhd' box too short)")
        let version = try cursor.uint8()
        try cursor.skip(3)
        let fieldLength = version == 1 ? 8 : 4
        let created = try cursor.bigEndian(fieldLength)
        try cursor.skip(fieldLength)
        let timescale = try cursor.uint32()
        let duration = try cursor.bigEndian(fieldLength)
        guard cursor.offset <= header.payload.upperBound else { throw InvalidMedia("damaged \(kind) ('mvhd' box too short)") }
        guard timescale > 0 else { throw InvalidMedia("damaged \(kind) (movie timescale 0)") }
        let unknown: UInt64 = fieldLength == 4 ? UInt64(UInt32.max) : .max  // "duration not known"
        let seconds = duration == unknown ? 0 : Double(duration) / Double(timescale)
        var movie = Movie(duration: seconds, width: 0, height: 0, creationDate: nil)
        if created > 0 { movie.creationDate = Date(timeIntervalSince1970: Double(created) - epochOffset) }
        for track in children where track.type == "trak" {
            if let size = try videoTrackSize(moov, track.payload, kind: kind) {
                (movie.width, movie.height) = size
                return movie
            }
        }
        throw InvalidMedia("\(kind) without a video track")
    }

    private static func videoTrackSize(_ bytes: [UInt8], _ track: Range<Int>, kind: String) throws -> (Int, Int)? {
        let boxes = try children(of: bytes, in: track, kind: kind)
        guard let media = boxes.first(where: { $0.type == "mdia" }) else { return nil }
        let mediaBoxes = try children(of: bytes, in: media.payload, kind: kind)
        guard let handler = mediaBoxes.first(where: { $0.type == "hdlr" }), handler.payload.count >= 12,
            String(decoding: bytes[handler.payload.lowerBound + 8..<handler.payload.lowerBound + 12], as: UTF8.self) == "vide"
        else { return nil }
        if let header = boxes.first(where: { $0.type == "tkhd" }) {
            var cursor = ByteCursor(bytes, offset: header.payload.lowerBound, what: "damaged \(kind) ('tkhd' box too short)")
            let version = try cursor.uint8()
            try cursor.skip(3 + (version == 1 ? 32 : 20) + 16)
            let matrix = try (0..<9).map { _ in Int32(bitPattern: try cursor.uint32()) }
            let width = Int(try cursor.uint32() >> 16), height = Int(try cursor.uint32() >> 16)
            guard cursor.offset <= header.payload.upperBound else { throw InvalidMedia("damaged \(kind) ('tkhd' box too short)") }
            if width > 0, height > 0 { return matrix[0] == 0 && matrix[1] != 0 ? (height, width) : (width, height) }
        }
        return try sampleEntrySize(bytes, mediaBoxes, kind: kind)
    }

    /// The width and height of the first visual sample entry in `minf/stbl/stsd`.
    private static func sampleEntrySize(_ bytes: [UInt8], _ mediaBoxes: [(type: String, payload: Range<Int>)], kind: String) throws -> (
        Int, Int
    )? {
        guard let information = mediaBoxes.first(where: { $0.type == "minf" }),
            let table = try children(of: bytes, in: information.payload, kind: kind).first(where: { $0.type == "stbl" }),
            let description = try children(of: bytes, in: table.payload, kind: kind).first(where: { $0.type == "stsd" }),
            description.payload.count >= 8
        else { return nil }
        let entries = try children(of: bytes, in: description.payload.lowerBound + 8..<description.payload.upperBound, kind: kind)
        guard let entry = entries.first, entry.payload.count >= 28 else { return nil }
        let width = bytes.bigEndian(at: entry.payload.lowerBound + 24, length: 2)
        let height = bytes.bigEndian(at: entry.payload.lowerBound + 26, length: 2)
        return width > 0 && height > 0 ? (width, height) : nil
    }

    // MARK: HEIF

    /// What the `meta` box of a HEIF file says about its primary image.
    struct Image {
        var width: Int
        var height: Int
        var exif: [UInt8]?
    }

    /// The primary item's size from its `ispe` property (rotated by `irot`), and the EXIF item's
    /// payload when the file has one stored in the file (construction method 0).
    static func heif(_ source: ByteSource) throws -> Image {
        let kind = "HEIF"
        let boxes = try topLevelBoxes(source, kind: kind)
        guard let metaBox = boxes.first(where: { $0.type == "meta" }) else { throw InvalidMedia("damaged HEIF (no 'meta' box)") }
        let meta = try load(metaBox, from: source, kind: kind)
        guard meta.count >= 4 else { throw InvalidMedia("damaged HEIF ('meta' box too short)") }
        let children = try children(of: meta, in: 4..<meta.count, kind: kind)
        func child(_ type: String) -> Range<Int>? { children.first { $0.type == type }?.payload }
        guard let handler = child("hdlr"), handler.count >= 12,
            String(decoding: meta[handler.lowerBound + 8..<handler.lowerBound + 12], as: UTF8.self) == "pict"
        else { throw InvalidMedia("damaged HEIF (the 'meta' handler is not 'pict')") }
        let primary = try child("pitm").map { range -> Int in
            var cursor = ByteCursor(meta, offset: range.lowerBound, what: "damaged HEIF ('pitm' box too short)")
            let version = try cursor.uint8()
            try cursor.skip(3)
            return Int(try cursor.bigEndian(version == 0 ? 2 : 4))
        }
        guard let properties = child("iprp") else { throw InvalidMedia("damaged HEIF (no item properties)") }
        let propertyBoxes = try self.children(of: meta, in: properties, kind: kind)
        guard let container = propertyBoxes.first(where: { $0.type == "ipco" }) else { throw InvalidMedia("damaged HEIF (no 'ipco' box)") }
        let items = try self.children(of: meta, in: container.payload, kind: kind)
        var associated = Set<Int>()
        if let primary, let association = propertyBoxes.first(where: { $0.type == "ipma" }) {
            associated = try associations(meta, association.payload, item: primary)
        }
        var width = 0, height = 0, quarterTurns = 0
        for (index, item) in items.enumerated() where associated.isEmpty || associated.contains(index + 1) {
            if item.type == "ispe", item.payload.count >= 12, width == 0 {
                width = meta.bigEndian(at: item.payload.lowerBound + 4, length: 4)
                height = meta.bigEndian(at: item.payload.lowerBound + 8, length: 4)
            } else if item.type == "irot", item.payload.count >= 1 {
                quarterTurns = Int(meta[item.payload.lowerBound] & 3)
            }
        }
        guard width > 0, height > 0 else { throw InvalidMedia("damaged HEIF (the primary image has no size ('ispe') property)") }
        if quarterTurns % 2 == 1 { swap(&width, &height) }
        if let primary, let locations = child("iloc"), let extent = try location(of: primary, meta, locations),
            extent.offset < 0 || extent.length < 0 || extent.offset > source.count - extent.length
        {
            throw InvalidMedia("truncated HEIF (the image data lies past the end of the file)")
        }
        let exif = try exifItem(meta, children, source: source)
        return Image(width: width, height: height, exif: exif)
    }

    /// The 1-based property indexes associated with `item` in an `ipma` box.
    private static func associations(_ bytes: [UInt8], _ range: Range<Int>, item: Int) throws -> Set<Int> {
        var cursor = ByteCursor(bytes, offset: range.lowerBound, what: "damaged HEIF ('ipma' box too short)")
        let version = try cursor.uint8()
        let flags = try cursor.bigEndian(3)
        let count = try cursor.uint32()
        for _ in 0..<count {
            let identifier = Int(try cursor.bigEndian(version < 1 ? 2 : 4))
            let associationCount = Int(try cursor.uint8())
            var indexes = Set<Int>()
            for _ in 0..<associationCount {
                indexes.insert(flags & 1 == 1 ? Int(try cursor.bigEndian(2) & 0x7FFF) : Int(try cursor.uint8() & 0x7F))
            }
            guard cursor.offset <= range.upperBound else { throw InvalidMedia("damaged HEIF ('ipma' box too short)") }
            if identifier == item { return indexes }
        }
        return []
    }

    /// The payload of the `Exif` item, past its 4-byte TIFF header offset.
    private static func exifItem(_ meta: [UInt8], _ children: [(type: String, payload: Range<Int>)], source: ByteSource) throws -> [UInt8]?
    {
        guard let information = children.first(where: { $0.type == "iinf" })?.payload,
            let locations = children.first(where: { $0.type == "iloc" })?.payload
        else { return nil }
        var cursor = ByteCursor(meta, offset: information.lowerBound, what: "damaged HEIF ('iinf' box too short)")
        let version = try cursor.uint8()
        try cursor.skip(3)
        _ = try cursor.bigEndian(version == 0 ? 2 : 4)
        guard cursor.offset <= information.upperBound else { throw InvalidMedia("damaged HEIF ('iinf' box too short)") }
        let entries = try Self.children(of: meta, in: cursor.offset..<information.upperBound, kind: "HEIF")
        var exifIdentifier: Int?
        for entry in entries where entry.type == "infe" {
            var fields = ByteCursor(meta, offset: entry.payload.lowerBound, what: "damaged HEIF ('infe' box too short)")
            let entryVersion = try fields.uint8()
            guard entryVersion >= 2 else { continue }
            try fields.skip(3)
            let identifier = Int(try fields.bigEndian(entryVersion == 2 ? 2 : 4))
            try fields.skip(2)
            if try fields.fourCC() == "Exif" { exifIdentifier = identifier }
        }
        guard let exifIdentifier, let extent = try location(of: exifIdentifier, meta, locations), extent.length > 4,
            extent.length <= Int64(ImageParsers.maximumExifLength)
        else { return nil }
        let payload = try source.read(exactly: Int(extent.length), at: extent.offset, "truncated HEIF (the EXIF item is cut off)")
        let tiffOffset = payload.bigEndian(at: 0, length: 4)
        guard tiffOffset < payload.count - 4 else { return nil }
        return Array(payload[(4 + tiffOffset)...])
    }

    /// The file offset and length of an item's single extent in an `iloc` box (method 0 only).
    private static func location(of item: Int, _ bytes: [UInt8], _ range: Range<Int>) throws -> (offset: Int64, length: Int64)? {
        var cursor = ByteCursor(bytes, offset: range.lowerBound, what: "damaged HEIF ('iloc' box too short)")
        let version = try cursor.uint8()
        try cursor.skip(3)
        let sizes = try cursor.uint8(), more = try cursor.uint8()
        let offsetSize = Int(sizes >> 4), lengthSize = Int(sizes & 15), baseSize = Int(more >> 4)
        let indexSize = version >= 1 ? Int(more & 15) : 0
        let count = Int(try cursor.bigEndian(version < 2 ? 2 : 4))
        for _ in 0..<count {
            let identifier = Int(try cursor.bigEndian(version < 2 ? 2 : 4))
            let method = version >= 1 ? Int(try cursor.uint16() & 15) : 0
            try cursor.skip(2)
            let base = try cursor.bigEndian(baseSize)
            let extents = try cursor.uint16()
            var first: (Int64, Int64)?
            if extents > 0 {
                try cursor.skip(indexSize)
                let offset = try cursor.bigEndian(offsetSize), length = try cursor.bigEndian(lengthSize)
                first = (Int64(truncatingIfNeeded: base &+ offset), Int64(truncatingIfNeeded: length))
                // The other extents are skipped at once: their fields may take no bytes at all.
                try cursor.skip((extents - 1) * (indexSize + offsetSize + lengthSize))
            }
            guard cursor.offset <= range.upperBound else { throw InvalidMedia("damaged HEIF ('iloc' box too short)") }
            if identifier == item { return method == 0 && extents == 1 ? first : nil }
        }
        return nil
    }
}
