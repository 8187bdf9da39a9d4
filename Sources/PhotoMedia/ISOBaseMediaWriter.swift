import Foundation
import LedgerCore

/// Writes small but structurally complete ISO base media files: MP4/QuickTime movies and HEIC
/// still images. The sample data is filler (no H.264/HEVC bitstream is encoded), so players show
/// no picture, but every box a demuxer or PhotoLedger's reader checks is present and consistent.
public enum ISOBaseMediaWriter {
    /// A movie of `duration` seconds at `frameRate` frames per second, with one video track of
    /// `width × height` pixels (`avc1` sample entry) and `bytesPerFrame` filler bytes per frame.
    /// `quickTime` writes the `qt  ` brand (a .mov) instead of `isom` (an .mp4). The layout is
    /// ftyp, mdat, moov, as cameras that write the index last do.
    public static func movie(
        width: Int, height: Int, duration: Double, frameRate: Int = 30, creationDate: Date? = nil, quickTime: Bool = false,
        bytesPerFrame: Int = 16, seed: UInt64 = 1
    ) -> [UInt8] {
        let timescale: UInt32 = 600
        let frames = max(1, Int((duration * Double(frameRate)).rounded()))
        let ticks = UInt32((duration * Double(timescale)).rounded())
        let created = UInt32(clamping: Int64((creationDate?.timeIntervalSince1970 ?? -ISOBaseMedia.epochOffset) + ISOBaseMedia.epochOffset))
        let fileType =
            quickTime
            ? box("ftyp", fourCC("qt  ") + u32(0x2005_0300) + fourCC("qt  "))
            : box("ftyp", fourCC("isom") + u32(512) + fourCC("isom") + fourCC("iso2") + fourCC("avc1") + fourCC("mp41"))
        var random = SeededBytes(seed: seed)
        let mediaData = box("mdat", random.next(frames * max(1, bytesPerFrame)))
        let chunkOffset = UInt32(fileType.count + 8)

        let identity = [0x0001_0000, 0, 0, 0, 0x0001_0000, 0, 0, 0, 0x4000_0000].flatMap { u32(UInt32($0)) }
        let movieHeader = fullBox(
            "mvhd", 0, 0,
            u32(created) + u32(created) + u32(timescale) + u32(ticks) + u32(0x0001_0000) + u16(0x0100) + zeros(10) + identity
                + zeros(24) + u32(2))
        let trackHeader = fullBox(
            "tkhd", 0, 3,
            u32(created) + u32(created) + u32(1) + zeros(4) + u32(ticks) + zeros(8) + u16(0) + u16(0) + u16(0) + zeros(2) + identity
                + u32(UInt32(clamping: width) << 16) + u32(UInt32(clamping: height) << 16))
        let mediaHeader = fullBox("mdhd", 0, 0, u32(created) + u32(created) + u32(timescale) + u32(ticks) + u16(0x55C4) + u16(0))
        let handler = fullBox("hdlr", 0, 0, u32(0) + fourCC("vide") + zeros(12) + Array("VideoHandler".utf8) + [0])
        let configuration = box("avcC", [1, 66, 0, 30, 0xFF, 0xE0, 0])
        let sampleEntry = box(
            "avc1",
            zeros(6) + u16(1) + zeros(16) + u16(UInt16(clamping: width)) + u16(UInt16(clamping: height)) + u32(0x0048_0000)
                + u32(0x0048_0000)
                + zeros(4) + u16(1) + zeros(32) + u16(0x18) + u16(0xFFFF) + configuration)
        let sampleTable = box(
            "stbl",
            fullBox("stsd", 0, 0, u32(1) + sampleEntry)
                + fullBox("stts", 0, 0, u32(1) + u32(UInt32(frames)) + u32(UInt32(max(1, Int(ticks) / frames))))
                + fullBox("stsc", 0, 0, u32(1) + u32(1) + u32(UInt32(frames)) + u32(1))
                + fullBox("stsz", 0, 0, u32(UInt32(max(1, bytesPerFrame))) + u32(UInt32(frames)))
                + fullBox("stco", 0, 0, u32(1) + u32(chunkOffset)))
        let information = box(
            "minf",
            fullBox("vmhd", 0, 1, zeros(8)) + box("dinf", fullBox("dref", 0, 0, u32(1) + fullBox("url ", 0, 1, []))) + sampleTable)
        let track = box("trak", trackHeader + box("mdia", mediaHeader + handler + information))
        return fileType + mediaData + box("moov", movieHeader + track)
    }

    /// A HEIC still image of `width × height` pixels: ftyp `heic`, a `meta` box with handler
    /// `pict`, primary item (`pitm`), item info and locations, and properties `hvcC`, `ispe` and
    /// (for `quarterTurns` ≠ 0) `irot`; plus an EXIF item linked to the image by an `iref`
    /// `cdsc` reference when `creationDate` or `location` is given.
    /// `width × height` is the stored (unrotated) size; the item's data is filler.
    public static func heic(
        width: Int, height: Int, quarterTurns: Int = 0, creationDate: Date? = nil, location: Location? = nil, seed: UInt64 = 1
    ) -> [UInt8] {
        let fileType = box("ftyp", fourCC("heic") + u32(0) + fourCC("mif1") + fourCC("heic"))
        var random = SeededBytes(seed: seed)
        let imageData = random.next(64)
        let exif = creationDate != nil || location != nil ? Exif.payload(creationDate: creationDate, location: location) : []
        let exifItem = exif.isEmpty ? [] : u32(6) + exif  // the TIFF header follows `Exif\0\0`

        func meta(dataOffset: Int) -> [UInt8] {
            var infos = fullBox("infe", 2, 0, u16(1) + u16(0) + fourCC("hvc1") + [0])
            var locations = u16(1) + u16(0) + u16(1) + u32(UInt32(dataOffset)) + u32(UInt32(imageData.count))
            if !exifItem.isEmpty {
                infos += fullBox("infe", 2, 0, u16(2) + u16(0) + fourCC("Exif") + [0])
                locations += u16(2) + u16(0) + u16(1) + u32(UInt32(dataOffset + imageData.count)) + u32(UInt32(exifItem.count))
            }
            // The EXIF item describes ("cdsc") the primary image, as cameras write it.
            let references = exifItem.isEmpty ? [] : fullBox("iref", 0, 0, box("cdsc", u16(2) + u16(1) + u16(1)))
            var properties = box("hvcC", [1] + zeros(22)) + fullBox("ispe", 0, 0, u32(UInt32(width)) + u32(UInt32(height)))
            var associations: [UInt8] = [0x81, 0x02]  // hvcC (essential), ispe
            if quarterTurns % 4 != 0 {
                properties += box("irot", [UInt8(quarterTurns & 3)])
                associations.append(0x83)
            }
            return fullBox(
                "meta", 0, 0,
                fullBox("hdlr", 0, 0, u32(0) + fourCC("pict") + zeros(12) + [0])
                    + fullBox("pitm", 0, 0, u16(1))
                    + fullBox("iinf", 0, 0, u16(exifItem.isEmpty ? 1 : 2) + infos)
                    + fullBox("iloc", 0, 0, [0x44, 0x00] + u16(exifItem.isEmpty ? 1 : 2) + locations)
                    + references
                    + box(
                        "iprp",
                        box("ipco", properties)
                            + fullBox("ipma", 0, 0, u32(1) + u16(1) + [UInt8(associations.count)] + associations)))
        }
        let metaLength = meta(dataOffset: 0).count
        let dataOffset = fileType.count + metaLength + 8
        return fileType + meta(dataOffset: dataOffset) + box("mdat", imageData + exifItem)
    }

    // MARK: Box building

    static func box(_ type: String, _ payload: [UInt8]) -> [UInt8] { u32(UInt32(payload.count + 8)) + fourCC(type) + payload }

    static func fullBox(_ type: String, _ version: UInt8, _ flags: UInt32, _ payload: [UInt8]) -> [UInt8] {
        box(
            type,
            [version, UInt8(truncatingIfNeeded: flags >> 16), UInt8(truncatingIfNeeded: flags >> 8), UInt8(truncatingIfNeeded: flags)]
                + payload)
    }

    static func fourCC(_ text: String) -> [UInt8] { Array(text.utf8.prefix(4)) }
    static func u16(_ value: UInt16) -> [UInt8] { [UInt8(value >> 8), UInt8(value & 0xFF)] }
    static func u32(_ value: UInt32) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.appendBigEndian(value)
        return bytes
    }
    static func zeros(_ count: Int) -> [UInt8] { [UInt8](repeating: 0, count: count) }
}

/// Deterministic filler bytes from a seed.
struct SeededBytes {
    private var generator: SeededRandomNumberGenerator

    init(seed: UInt64) { generator = SeededRandomNumberGenerator(seed: seed) }

    /// The next `count` bytes.
    mutating func next(_ count: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var index = 0
        while index < count {
            var word = generator.next()
            for _ in 0..<min(8, count - index) {
                bytes[index] = UInt8(truncatingIfNeeded: word)
                word >>= 8
                index += 1
            }
        }
        return bytes
    }
}
