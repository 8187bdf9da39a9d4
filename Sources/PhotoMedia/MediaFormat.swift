/// Whether a resource is a still (or animated) image or a video, as PhotoKit's media type.
public enum MediaType: String, Sendable, Equatable, CaseIterable {
    /// A photo, including animated GIF and WebP.
    case image
    /// A movie.
    case video
}

/// A container format PhotoLedger accepts, recognised from the bytes, never from the file name.
public enum MediaFormat: String, Sendable, Equatable, CaseIterable {
    /// JPEG/JFIF/EXIF (`FF D8 FF`).
    case jpeg
    /// PNG (`89 50 4E 47 0D 0A 1A 0A`).
    case png
    /// GIF87a or GIF89a, still or animated.
    case gif
    /// HEIC/HEIF: an ISO base media file whose `ftyp` names an image brand (heic, heix, mif1, …).
    case heic
    /// AVIF: a HEIF still image coded with AV1 (`ftyp` brand `avif`). Image sequences (`avis`)
    /// are not supported.
    case avif
    /// WebP: a RIFF file of form `WEBP` (VP8, VP8L or VP8X).
    case webp
    /// MPEG-4 video: an ISO base media file with brands such as isom, mp41, mp42, avc1.
    case mp4
    /// QuickTime movie: `ftyp` brand `qt  `, or a file that starts with a moov/mdat/wide box.
    case quickTime

    /// Whether the format holds images or videos.
    public var mediaType: MediaType {
        switch self {
        case .jpeg, .png, .gif, .heic, .avif, .webp: .image
        case .mp4, .quickTime: .video
        }
    }

    /// The uniform type identifier, as PhotoKit reports it for a resource.
    public var uniformTypeIdentifier: String {
        switch self {
        case .jpeg: "public.jpeg"
        case .png: "public.png"
        case .gif: "com.compuserve.gif"
        case .heic: "public.heic"
        case .avif: "public.avif"
        case .webp: "org.webmproject.webp"
        case .mp4: "public.mpeg-4"
        case .quickTime: "com.apple.quicktime-movie"
        }
    }

    /// The usual file name extension, without the dot.
    public var preferredFilenameExtension: String {
        switch self {
        case .jpeg: "jpg"
        case .png: "png"
        case .gif: "gif"
        case .heic: "heic"
        case .avif: "avif"
        case .webp: "webp"
        case .mp4: "mp4"
        case .quickTime: "mov"
        }
    }

    /// The number of leading bytes `detect(header:)` needs to decide (it accepts fewer).
    public static let headerLength = 64

    /// The format of bytes that start with `header`, or nil when they are none of the supported
    /// formats. Only the signature (and an ISO base media file's brands) is read: the decoders
    /// judge the rest when `MediaInspector` validates the file.
    public static func detect(header: some Collection<UInt8>) -> MediaFormat? {
        if case .supported(let format) = identify(header: Array(header.prefix(headerLength))) { return format }
        return nil
    }

    /// What a file's first bytes say it is.
    enum Identity: Equatable {
        /// A supported format.
        case supported(MediaFormat)
        /// Something recognised but not supported, described for the user ("an AVIF image
        /// sequence (animated AVIF)").
        case recognised(String)
        /// Nothing recognised.
        case unknown
    }

    static func identify(header bytes: [UInt8]) -> Identity {
        func starts(with signature: [UInt8], at offset: Int = 0) -> Bool {
            bytes.count >= offset + signature.count && Array(bytes[offset..<offset + signature.count]) == signature
        }
        if starts(with: [0xFF, 0xD8, 0xFF]) { return .supported(.jpeg) }
        if starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return .supported(.png) }
        if starts(with: Array("GIF87a".utf8)) || starts(with: Array("GIF89a".utf8)) { return .supported(.gif) }
        if starts(with: Array("RIFF".utf8)) && starts(with: Array("WEBP".utf8), at: 8) { return .supported(.webp) }
        for (signature, offset, description) in lookAlikes where starts(with: signature, at: offset) { return .recognised(description) }
        guard bytes.count >= 8 else { return .unknown }
        let boxType = String(decoding: bytes[4..<8], as: UTF8.self)
        if boxType == "ftyp" { return identifyFileType(bytes) }
        if ["moov", "mdat", "wide", "free", "skip", "pnot"].contains(boxType) { return .supported(.quickTime) }
        return .unknown
    }

    /// Signatures of common files that are not supported, with words for them.
    private static let lookAlikes: [([UInt8], Int, String)] = [
        ([0x1A, 0x45, 0xDF, 0xA3], 0, "a Matroska or WebM video"),
        (Array("II*".utf8) + [0], 0, "a TIFF or raw camera image"),
        (Array("MM".utf8) + [0, 0x2A], 0, "a TIFF or raw camera image"),
        (Array("BM".utf8), 0, "a BMP image"),
        (Array("%PDF".utf8), 0, "a PDF document"),
        (Array("PK".utf8) + [3, 4], 0, "a ZIP archive"),
        (Array("RIFF".utf8), 0, "a RIFF file that is not WebP (AVI or WAV)"),
        (Array("ID3".utf8), 0, "an MP3 audio file"),
        ([0xFF, 0xFB], 0, "an MP3 audio file"),
        (Array("fLaC".utf8), 0, "a FLAC audio file"),
        (Array("OggS".utf8), 0, "an Ogg audio or video file"),
        ([0x00, 0x00, 0x00, 0x0C, 0x4A, 0x58, 0x4C, 0x20], 0, "a JPEG XL image"),
        ([0xFF, 0x0A], 0, "a JPEG XL image"),
    ]

    private static let imageBrands: Set<String> = ["heic", "heix", "heim", "heis", "hevc", "hevx", "mif1", "msf1", "mif2"]
    private static let movieBrands: Set<String> = [
        "isom", "iso2", "iso3", "iso4", "iso5", "iso6", "mp41", "mp42", "avc1", "M4V ", "M4VH", "M4VP", "dash", "3gp4", "3gp5",
        "3gp6", "3g2a", "mmp4", "f4v ",
    ]
    /// Brands of files built on the same boxes that are not photos or videos.
    private static let otherBrands: [String: String] = [
        "crx ": "a Canon CR3 raw image", "M4A ": "an M4A audio file", "M4B ": "an M4B audio book", "M4P ": "an M4P audio file",
        "F4A ": "an F4A audio file", "avis": "an AVIF image sequence (animated AVIF)", "jxl ": "a JPEG XL image",
    ]

    /// Decides between HEIC, AVIF, MP4 and QuickTime (or a look-alike) from an `ftyp` box: the
    /// major brand first, then the compatible brands it lists within the header.
    private static func identifyFileType(_ bytes: [UInt8]) -> Identity {
        guard bytes.count >= 12 else { return .unknown }
        let size = Int(bytes[0]) << 24 | Int(bytes[1]) << 16 | Int(bytes[2]) << 8 | Int(bytes[3])
        var brands = [String(decoding: bytes[8..<12], as: UTF8.self)]
        var offset = 16
        while offset + 4 <= min(bytes.count, max(size, 16)) {
            brands.append(String(decoding: bytes[offset..<offset + 4], as: UTF8.self))
            offset += 4
        }
        for brand in brands {
            if let description = otherBrands[brand] { return .recognised(description) }
            if brand == "avif" { return .supported(.avif) }
            if brand == "qt  " { return .supported(.quickTime) }
            if imageBrands.contains(brand) { return .supported(.heic) }
            if movieBrands.contains(brand) { return .supported(.mp4) }
        }
        return .recognised("an ISO base media file of brand '\(brands[0])'")
    }
}
