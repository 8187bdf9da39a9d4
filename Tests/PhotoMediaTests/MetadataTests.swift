import Foundation
import LedgerCore
import PhotoMedia
import Testing

@Suite("Metadata: EXIF dates and GPS, movie duration")
struct MetadataTests {
    @Test("EXIF DateTimeOriginal and GPS latitude, longitude and altitude are read back from a JPEG")
    func exifFromJPEG() throws {
        let directory = try TemporaryDirectory()
        let bytes = JPEGEncoder().encode(
            RGBImage.scene(width: 64, height: 48, seed: 5), creationDate: Samples.creationDate, location: Samples.location)
        let info = try MediaInspector.inspect(fileAt: try directory.write(bytes, to: "IMG_0001.JPG"))
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

    @Test("a JPEG without EXIF has no date and no location")
    func noExif() throws {
        let info = try MediaInspector.inspect(JPEGEncoder().encode(RGBImage(width: 8, height: 8)), name: "plain.jpg")
        #expect(info.creationDate == nil)
        #expect(info.location == nil)
    }

    @Test("a date alone, without GPS")
    func dateWithoutLocation() throws {
        let info = try MediaInspector.inspect(
            JPEGEncoder().encode(RGBImage(width: 8, height: 8), creationDate: Samples.creationDate), name: "a.jpg")
        #expect(info.creationDate == Samples.creationDate)
        #expect(info.location == nil)
    }

    @Test("EXIF stored as an item of a HEIC file is read too")
    func exifFromHEIC() throws {
        let bytes = ISOBaseMediaWriter.heic(width: 100, height: 50, creationDate: Samples.creationDate, location: Samples.location)
        let info = try MediaInspector.inspect(bytes, name: "IMG_0002.HEIC")
        #expect(info.creationDate == Samples.creationDate)
        #expect(abs((info.location?.latitude ?? 0) - Samples.location.latitude) < 1e-6)
    }

    @Test("MP4 duration, video track size and creation time come from the movie boxes")
    func movieMetadata() throws {
        let directory = try TemporaryDirectory()
        let bytes = ISOBaseMediaWriter.movie(width: 1920, height: 1080, duration: 12.5, creationDate: Samples.creationDate)
        let info = try MediaInspector.inspect(fileAt: try directory.write(bytes, to: "clip.mp4"))
        #expect(info.format == .mp4)
        #expect(info.mediaType == .video)
        #expect(info.duration == 12.5)
        #expect((info.pixelWidth, info.pixelHeight) == (1920, 1080))
        #expect(info.creationDate == Samples.creationDate)
    }

    @Test("a QuickTime movie without a creation time has none")
    func quickTimeMetadata() throws {
        let info = try MediaInspector.inspect(
            ISOBaseMediaWriter.movie(width: 640, height: 360, duration: 1, quickTime: true), name: "a.mov")
        #expect(info == MediaInfo(format: .quickTime, pixelWidth: 640, pixelHeight: 360, duration: 1))
    }

    @Test("images have no duration")
    func imagesHaveNoDuration() throws {
        for sample in Samples.all() where sample.format.mediaType == .image {
            #expect(try MediaInspector.inspect(sample.bytes, name: "x").duration == nil)
        }
    }
}
