import CExifRecovery
import Foundation

/// How a photo was taken, as the metadata its camera or system wrote says: what a library needs
/// for its Screenshots, Selfies, Panoramas and Bursts.
///
/// What is read, and from where (EXIF through libexif, XMP through libexiv2's XMP parser):
/// - **Screenshot**: an EXIF UserComment, or an XMP `exif:UserComment`, of exactly `Screenshot`,
///   as iOS and macOS write in every screenshot. A PNG without camera metadata is not taken for
///   a screenshot: exported graphics look the same.
/// - **Selfie**: an EXIF LensModel naming a front camera (`iPhone 12 front camera 2.71mm f/2.2`,
///   as iPhones and iPads write; `… front TrueDepth camera …` too).
/// - **Panorama**: an XMP `GPano:ProjectionType` (Google's photo-sphere metadata, written by
///   Google Camera, Hugin and most stitchers) of `equirectangular` or `cylindrical`, or
///   `GPano:UsePanoramaViewer` true.
/// - **Burst**: XMP `GCamera:BurstID` (the burst's identifier, as Google Camera writes) with
///   `GCamera:BurstPrimary` = 1 for the photo the camera picked. Apple's burst UUID lives in
///   Apple's MakerNote, which neither libexif nor Debian's libexiv2 0.27 decodes: an iPhone
///   burst photo is imported as a photo of no burst (a creation request can name its burst).
public struct CaptureMetadata: Sendable, Hashable {
    /// The system wrote it as a screenshot.
    public var isScreenshot = false
    /// The front camera took it.
    public var isSelfPortrait = false
    /// It is a panorama.
    public var isPanorama = false
    /// The identifier of the burst it belongs to.
    public var burstIdentifier: String?
    /// The camera picked it as the burst's best.
    public var isBurstPick = false

    /// Nothing known.
    public init() {}

    /// What EXIF and an XMP packet say.
    init(exif: Exif.Metadata, xmp: [String: String]) {
        let comments = [exif.userComment, xmp["Xmp.exif.UserComment"]].compactMap { $0 }
        isScreenshot = comments.contains { $0.trimmingCharacters(in: .whitespaces) == "Screenshot" }
        isSelfPortrait = exif.lensModel.map { $0.range(of: " front ", options: .caseInsensitive) != nil } ?? false
        let projection = xmp["Xmp.GPano.ProjectionType"]?.lowercased()
        isPanorama =
            projection == "equirectangular" || projection == "cylindrical" || xmp["Xmp.GPano.UsePanoramaViewer"]?.lowercased() == "true"
        if let burst = xmp["Xmp.GCamera.BurstID"]?.trimmingCharacters(in: .whitespaces), !burst.isEmpty, burst.utf8.count <= 256 {
            burstIdentifier = burst
            isBurstPick = xmp["Xmp.GCamera.BurstPrimary"]?.trimmingCharacters(in: .whitespaces) == "1"
        }
    }

    /// The properties of an XMP packet, by libexiv2 key (`Xmp.GPano.ProjectionType`); empty when
    /// it does not parse.
    static func xmpProperties(_ packet: UnsafeBufferPointer<CChar>) -> [String: String] {
        guard let base = packet.baseAddress, packet.count > 0 else { return [:] }
        var text: UnsafeMutablePointer<CChar>?
        guard photoledger_xmp_properties(base, packet.count, &text) == 0, let text else { return [:] }
        defer { photoledger_xmp_properties_free(text) }
        var properties: [String: String] = [:]
        for line in String(cString: text).split(separator: "\n") {
            let parts = line.split(separator: "\t", maxSplits: 1, omittingEmptySubsequences: false)
            if parts.count == 2 { properties[String(parts[0])] = String(parts[1]) }
        }
        return properties
    }
}
