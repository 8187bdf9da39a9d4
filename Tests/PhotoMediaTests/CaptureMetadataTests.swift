import Foundation
import LedgerCore
import MediaSynthesis
import PhotoMedia
import Testing

@Suite("Capture metadata: screenshots, selfies, panoramas and bursts as exiftool writes their tags")
struct CaptureMetadataTests {
    @Test("an EXIF UserComment 'Screenshot' (as iOS writes it) marks a screenshot, in PNG and JPEG", arguments: ["png", "jpeg"])
    func screenshotFromExif(format: String) throws {
        let bytes = try Samples.exiftool(try Samples.still(format), extension: format, ["-ExifIFD:UserComment=Screenshot"])
        let info = try MediaInspector.inspect(bytes, name: "IMG_0001.\(format)")
        #expect(info.capture.isScreenshot)
        #expect(!info.capture.isSelfPortrait && !info.capture.isPanorama && info.capture.burstIdentifier == nil)
    }

    @Test("an XMP exif:UserComment 'Screenshot' (as macOS writes it) marks a screenshot; another comment does not")
    func screenshotFromXMP() throws {
        let png = try Samples.still("png")
        let shot = try Samples.exiftool(png, extension: "png", ["-XMP-exif:UserComment=Screenshot"])
        #expect(try MediaInspector.inspect(shot, name: "Screen Shot.png").capture.isScreenshot)
        let other = try Samples.exiftool(png, extension: "png", ["-ExifIFD:UserComment=Screenshots of the trip"])
        #expect(try !MediaInspector.inspect(other, name: "a.png").capture.isScreenshot)
        #expect(try !MediaInspector.inspect(png, name: "plain.png").capture.isScreenshot, "a PNG without metadata is no screenshot")
    }

    @Test("an iPhone's front-camera lens model marks a selfie; its back camera does not")
    func selfie() throws {
        let jpeg = try Samples.still("jpeg")
        let front = try Samples.exiftool(
            jpeg, extension: "jpg", ["-Make=Apple", "-Model=iPhone 12", "-ExifIFD:LensModel=iPhone 12 front camera 2.71mm f/2.2"])
        #expect(try MediaInspector.inspect(front, name: "IMG_0002.JPG").capture.isSelfPortrait)
        let back = try Samples.exiftool(jpeg, extension: "jpg", ["-ExifIFD:LensModel=iPhone 12 back dual wide camera 4.2mm f/1.6"])
        #expect(try !MediaInspector.inspect(back, name: "IMG_0003.JPG").capture.isSelfPortrait)
    }

    @Test("XMP GPano projection (photo-sphere metadata) marks a panorama", arguments: ["equirectangular", "cylindrical"])
    func panorama(projection: String) throws {
        let bytes = try Samples.exiftool(
            try Samples.still("jpeg", width: 128, height: 32), extension: "jpg", ["-XMP-GPano:ProjectionType=\(projection)"])
        #expect(try MediaInspector.inspect(bytes, name: "PANO.jpg").capture.isPanorama)
        let flat = try Samples.exiftool(try Samples.still("jpeg"), extension: "jpg", ["-XMP-GPano:ProjectionType=flat"])
        #expect(try !MediaInspector.inspect(flat, name: "flat.jpg").capture.isPanorama)
    }

    @Test("XMP GCamera BurstID and BurstPrimary (as Google Camera writes them) name the burst and the camera's pick")
    func burst() throws {
        let jpeg = try Samples.still("jpeg")
        let primary = try Samples.exiftool(jpeg, extension: "jpg", ["-XMP-GCamera:BurstID=7c1f0d2a-burst", "-XMP-GCamera:BurstPrimary=1"])
        let info = try MediaInspector.inspect(primary, name: "IMG_BURST1.jpg").capture
        #expect(info.burstIdentifier == "7c1f0d2a-burst" && info.isBurstPick)
        let other = try Samples.exiftool(jpeg, extension: "jpg", ["-XMP-GCamera:BurstID=7c1f0d2a-burst"])
        let second = try MediaInspector.inspect(other, name: "IMG_BURST2.jpg").capture
        #expect(second.burstIdentifier == "7c1f0d2a-burst" && !second.isBurstPick)
    }
}
