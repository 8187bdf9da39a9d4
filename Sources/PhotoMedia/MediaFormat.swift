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
    /// WebP: a RIFF file of form `WEBP` (VP8, VP8L or VP8X).
    case webp
    /// MPEG-4 video: an ISO base media file with brands such as isom, mp41, mp42, avc1.
    case mp4
    /// QuickTime movie: `ftyp` brand `qt  `, or a file that starts with a moov/mdat/wide box.
    case quickTime

    /// Whether the format holds images or videos.
    public var mediaType: MediaType {
        switch self {
        case .jpeg, .png, .gif, .heic, .webp: .image
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
        case .webp: "webp"
        case .mp4: "mp4"
        case .quickTime: "mov"
        }
    }

    /// The number of leading bytes `detect(header:)` needs to decide (it accepts fewer).
    public static let headerLength = 64

    /// The format of bytes that start with `header`, or nil when they are none of the supported
    /// formats. Only the signature is checked; `MediaInspector` validates the rest.
    public static func detect(header: some Collection<UInt8>) -> MediaFormat? {
        let bytes = Array(header.prefix(headerLength))
        func starts(with signature: [UInt8], at offset: Int = 0) -> Bool {
            bytes.count >= offset + signature.count && Array(bytes[offset..<offset + signature.count]) == signature
        }
        if starts(with: [0xFF, 0xD8, 0xFF]) { return .jpeg }
        if starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return .png }
        if starts(with: Array("GIF87a".utf8)) || starts(with: Array("GIF89a".utf8)) { return .gif }
        if starts(with: Array("RIFF".utf8)) && starts(with: Array("WEBP".utf8), at: 8) { return .webp }
        guard bytes.count >= 8 else { return nil }
        let boxType = String(decoding: bytes[4..<8], as: UTF8.self)
        if boxType == "ftyp" { return formatOfFileType(bytes) }
        if ["moov", "mdat", "wide", "free", "skip", "pnot"].contains(boxType) { return .quickTime }
        return nil
    }

    private static let imageBrands: Set<String> = ["heic", "heix", "heim", "heis", "hevc", "hevx", "mif1", "msf1", "mif2"]
    private static let movieBrands: Set<String> = [
        "isom", "iso2", "iso3", "iso4", "iso5", "iso6", "mp41", "mp42", "avc1", "M4V ", "M4VH", "M4VP", "dash", "3gp4", "3gp5",
        "3gp6", "3g2a", "mmp4", "f4v ",
    ]

    /// Decides between HEIC, MP4 and QuickTime from an `ftyp` box: the major brand first, then
    /// the compatible brands it lists within the header.
    private static func formatOfFileType(_ bytes: [UInt8]) -> MediaFormat? {
        guard bytes.count >= 12 else { return nil }
        let size = Int(bytes[0]) << 24 | Int(bytes[1]) << 16 | Int(bytes[2]) << 8 | Int(bytes[3])
        let major = String(decoding: bytes[8..<12], as: UTF8.self)
        var brands = [major]
        var offset = 16
        while offset + 4 <= min(bytes.count, max(size, 16)) {
            brands.append(String(decoding: bytes[offset..<offset + 4], as: UTF8.self))
            offset += 4
        }
        let isAVIF = brands.contains { $0 == "avif" || $0 == "avis" }
        if isAVIF && !brands.contains(where: { $0.hasPrefix("hei") || $0.hasPrefix("hev") }) { return nil }
        for brand in brands {
            if brand == "qt  " { return .quickTime }
            if imageBrands.contains(brand) { return .heic }
            if movieBrands.contains(brand) { return .mp4 }
        }
        return nil
    }
}
