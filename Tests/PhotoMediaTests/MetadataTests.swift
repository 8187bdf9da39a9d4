import CExif
import Foundation
import LedgerCore
import MediaSynthesis
import PhotoMedia
import Testing

@Suite("Metadata: EXIF dates, GPS and orientation; movie duration, rotation, date and location")
struct MetadataTests {
    @Test("EXIF DateTimeOriginal and GPS latitude, longitude and altitude are read back from a JPEG")
    func exifFromJPEG() throws {
        let bytes = JPEGEncoder().encode(
            RGBImage.scene(width: 64, height: 48, seed: 5), creationDate: Samples.creationDate, location: Samples.location)
        let info = try MediaInspector.inspect(bytes, name: "IMG_0001.JPG")
        #expect(info.creationDate == Samples.creationDate)
        let location = try #require(info.location)
        #expect(abs(location.latitude - Samples.location.latitude) < 1e-6)
        #expect(abs(location.longitude - Samples.location.longitude) < 1e-6)
        #expect(location.altitude == 42.5)
    }

    @Test("every hemisphere and an altitude below sea level keep their signs")
    func exifSigns() throws {
        for (latitude, longitude, altitude) in [(48.85837, -2.294481, -12.25), (-0.5, 179.999, 0), (89.9, -179.9, 8848.86)] {
            let location = Location(latitude: latitude, longitude: longitude, altitude: altitude)
            let bytes = JPEGEncoder().encode(RGBImage(width: 8, height: 8), location: location)
            let read = try #require(try MediaInspector.inspect(bytes, name: "a.jpg").location)
            #expect(abs(read.latitude - latitude) < 1e-6 && abs(read.longitude - longitude) < 1e-6)
            #expect(read.altitude == altitude)
        }
    }

    @Test("GPS coordinates written as signed rationals (SRATIONAL) are read")
    func signedRationalGPS() throws {
        let exif = ExifWriter.payload(entries: [
            .text(ifd: 3, tag: 0x0001, "N"), .rationals(ifd: 3, tag: 0x0002, signed: true, [(60, 1), (10, 1), (3000, 100)]),
            .text(ifd: 3, tag: 0x0003, "E"), .rationals(ifd: 3, tag: 0x0004, signed: true, [(24, 1), (56, 1), (1500, 100)]),
        ])
        let info = try MediaInspector.inspect(try Samples.still("jpeg", options: .init(exif: exif)), name: "nokia.jpg")
        let location = try #require(info.location)
        #expect(abs(location.latitude - (60 + 10.0 / 60 + 30.0 / 3600)) < 1e-9)
        #expect(abs(location.longitude - (24 + 56.0 / 60 + 15.0 / 3600)) < 1e-9)
    }

    @Test("a DateTime written in ISO 8601 with an offset is read at its instant")
    func isoDateTime() throws {
        let exif = ExifWriter.payload(entries: [.text(ifd: 0, tag: 0x0132, "2015-06-29T18:19:12+01:00")])
        let info = try MediaInspector.inspect(try Samples.still("jpeg", options: .init(exif: exif)), name: "iso.jpg")
        #expect(info.creationDate == Date(timeIntervalSince1970: 1_435_598_352))
    }

    @Test("a date that its offset carries past the year 9999 or before the year 1 is no date, as an asset's events could not record it")
    func dateOutsideTheYears() throws {
        let exif = ExifWriter.payload(entries: [
            .text(ifd: 2, tag: 0x9003, "9999:12:31 23:30:00"), .text(ifd: 2, tag: 0x9011, "-01:00"),
        ])
        let info = try MediaInspector.inspect(try Samples.still("jpeg", options: .init(exif: exif)), name: "far.jpg")
        #expect(info.creationDate == nil)
        #expect(MediaInspector.date(text: "0001:01:01 00:30:00", offset: "+01:00") == nil)
        #expect(
            MediaInspector.date(text: "0001:01:01 01:00:00", offset: "+01:00")
                == Date(timeIntervalSince1970: MediaInfo.dateRange.lowerBound))
        #expect(
            MediaInspector.date(text: "9999-12-31T23:59:59Z", offset: nil) == Date(timeIntervalSince1970: MediaInfo.dateRange.upperBound))
    }

    @Test("EXIF orientation 6 (written by exiftool) turns the size: width and height are as shown", arguments: ["jpeg", "png", "webp"])
    func orientationSix(format: String) throws {
        let bytes = try Samples.exiftool(try Samples.still(format, width: 80, height: 60), extension: format, ["-Orientation#=6"])
        let info = try MediaInspector.inspect(bytes, name: "portrait.\(format)")
        #expect(info.orientation == .right)
        #expect((info.pixelWidth, info.pixelHeight) == (60, 80))
    }

    @Test("EXIF in a PNG 'Raw profile type exif' text chunk is read")
    func pngTextProfile() throws {
        let exif = ExifWriter.payload(entries: ExifWriter.entries(creationDate: Samples.creationDate, location: nil))
        let hex = exif.map { String(format: "%02x", $0) }.joined()
        let profile = "\nexif\n\(String(repeating: " ", count: 4))\(exif.count)\n\(hex)\n"
        let png = try Samples.still("png")
        let chunk = Samples.pngChunk("tEXt", Array("Raw profile type exif".utf8) + [0] + Array(profile.utf8))
        let info = try MediaInspector.inspect(Array(png[..<33]) + chunk + Array(png[33...]), name: "profile.png")
        #expect(info.creationDate == Samples.creationDate)
    }

    @Test("an EXIF block larger than libexif reads (its Exif IFD past 64 KB) is read through libexiv2")
    func exifPastLibexifLimit() throws {
        // TIFF, little-endian: IFD0 holds only the pointer to an Exif IFD placed at 70,000,
        // which holds DateTimeOriginal.
        func le16(_ value: Int) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8 & 0xFF)] }
        func le32(_ value: Int) -> [UInt8] { le16(value & 0xFFFF) + le16(value >> 16) }
        let exifIFD = 70_000
        var tiff = Array("II*".utf8) + [0] + le32(8) + le16(1) + le16(0x8769) + le16(4) + le32(1) + le32(exifIFD) + le32(0)
        tiff += [UInt8](repeating: 0, count: exifIFD - tiff.count)
        let text = Array("2025:11:30 06:23:10".utf8) + [0]
        tiff += le16(1) + le16(0x9003) + le16(2) + le32(text.count) + le32(exifIFD + 18) + le32(0) + text
        let png = try Samples.still("png")
        let withExif = Array(png[..<33]) + Samples.pngChunk("eXIf", tiff) + Array(png[33...])
        let info = try MediaInspector.inspect(withExif, name: "large-exif.png")
        #expect(info.creationDate == Samples.creationDate)
    }

    @Test("EXIF of a HEIC made by libvips is read")
    func exifFromHEIC() throws {
        let exif = ExifWriter.payload(entries: ExifWriter.entries(creationDate: Samples.creationDate, location: Samples.location))
        let info = try MediaInspector.inspect(try Samples.still("heic", options: .init(exif: exif)), name: "IMG_0002.HEIC")
        #expect(info.creationDate == Samples.creationDate)
        #expect(abs((info.location?.latitude ?? 0) - Samples.location.latitude) < 1e-6)
    }

    @Test("a JPEG without EXIF has no date, no location, and is upright")
    func noExif() throws {
        let info = try MediaInspector.inspect(JPEGEncoder().encode(RGBImage(width: 8, height: 8)), name: "plain.jpg")
        #expect(info.creationDate == nil && info.location == nil && info.orientation == .up)
    }

    @Test("MP4 duration, size and creation time come from FFmpeg")
    func movieMetadata() throws {
        let bytes = try SyntheticMedia.movie(width: 320, height: 180, duration: 2.5, metadata: ["creation_time": "2025-11-30T06:23:10Z"])
        let info = try MediaInspector.inspect(bytes, name: "clip.mp4")
        #expect(info.format == .mp4 && info.mediaType == .video)
        #expect(abs((info.duration ?? 0) - 2.5) < 0.05)
        #expect((info.pixelWidth, info.pixelHeight) == (320, 180))
        #expect(info.creationDate == Samples.creationDate)
    }

    @Test("a QuickTime movie with a location (©xyz) has that location")
    func movieLocation() throws {
        let bytes = try SyntheticMedia.movie(
            width: 64, height: 48, duration: 1, quickTime: true, metadata: ["location": "+48.8583+002.2945/"])
        let location = try #require(try MediaInspector.inspect(bytes, name: "paris.mov").location)
        #expect(abs(location.latitude - 48.8583) < 1e-9 && abs(location.longitude - 2.2945) < 1e-9)
    }

    @Test("a movie location whose altitude has hundreds of digits (infinite when read) is no location")
    func movieLocationOverflowing() throws {
        let text = "+48.8583+002.2945+" + String(repeating: "9", count: 400) + "/"
        let bytes = try SyntheticMedia.movie(width: 64, height: 48, duration: 1, quickTime: true, metadata: ["location": text])
        #expect(try MediaInspector.inspect(bytes, name: "far.mov").location == nil)
        #expect(MediaInspector.location(iso6709: text) == nil)
        #expect(
            MediaInspector.location(iso6709: "+48.8583+002.2945+035.5/") == Location(latitude: 48.8583, longitude: 2.2945, altitude: 35.5))
    }

    @Test("a QuickTime movie with Apple's keys (ISO 6709 location, capture date with its offset) has both")
    func movieAppleKeys() throws {
        let bytes = try SyntheticMedia.movie(
            width: 64, height: 48, duration: 1, quickTime: true,
            metadata: [
                "com.apple.quicktime.location.ISO6709": "+35.6586+139.7454+040.000/",
                "com.apple.quicktime.creationdate": "2015-06-29T18:19:12+0100",
            ], arguments: ["-movflags", "use_metadata_tags"])
        let info = try MediaInspector.inspect(bytes, name: "IMG_0003.MOV")
        let location = try #require(info.location)
        #expect(abs(location.latitude - 35.6586) < 1e-9 && abs(location.longitude - 139.7454) < 1e-9 && location.altitude == 40)
        #expect(info.creationDate == Date(timeIntervalSince1970: 1_435_598_352))
    }

    @Test("a movie rotated a quarter turn (by exiftool) reports its size as shown")
    func movieRotation() throws {
        let movie = try SyntheticMedia.movie(width: 64, height: 48, duration: 1, quickTime: true)
        let bytes = try Samples.exiftool(movie, extension: "mov", ["-Rotation=90"])
        let info = try MediaInspector.inspect(bytes, name: "portrait.mov")
        #expect(info.orientation == .right)
        #expect((info.pixelWidth, info.pixelHeight) == (48, 64))
    }

    @Test("an anamorphic movie reports its stored pixels, not the size its aspect ratio stretches them to")
    func anamorphicMovie() throws {
        let bytes = try SyntheticMedia.movie(width: 96, height: 64, duration: 1, filters: ["setsar=4/3"])
        let info = try MediaInspector.inspect(bytes, name: "anamorphic.mp4")
        #expect((info.pixelWidth, info.pixelHeight) == (96, 64))
    }

    @Test("a creation time of zero (1904) is no date")
    func movieWithoutDate() throws {
        let info = try MediaInspector.inspect(try SyntheticMedia.movie(width: 64, height: 48, duration: 1, quickTime: true), name: "a.mov")
        #expect(info.creationDate == nil)
    }

    @Test("images have no duration")
    func imagesHaveNoDuration() throws {
        for sample in Samples.all() where sample.format.mediaType == .image {
            #expect(try MediaInspector.inspect(sample.bytes, name: "x").duration == nil)
        }
    }
}
