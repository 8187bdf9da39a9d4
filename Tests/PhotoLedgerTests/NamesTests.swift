// This file imports only what an app imports: the public API must need nothing else, and the
// two modules' names must not clash.
import Foundation
import PhotoLedger
import PhotoMedia
import Testing

@Suite("Public names")
struct NamesTests {
    @Test("PhotoLedger and PhotoMedia import together; the vocabulary types come with PhotoLedger")
    func importTogether() throws {
        // PhotoMedia's kind of a file format, and PhotoLedger's kind of an asset (PHAssetMediaType).
        let format: MediaType = .image
        let asset: AssetMediaType = .image
        #expect(format.rawValue == "image" && asset.rawValue == 1)
        // LedgerCore's vocabulary, re-exported by PhotoLedger.
        let device: DeviceID = "anna-phone"
        let stamp = HLCTimestamp(milliseconds: 1_700_000_000_000, counter: 3)
        let location = Location(latitude: 48.85, longitude: 2.35, altitude: nil)
        #expect(device.rawValue == "anna-phone" && stamp.milliseconds == 1_700_000_000_000 && location.isValid)
    }

    @Test("verify() and verifyChain() give the same report")
    func oneVerificationReport() throws {
        let directory = try TemporaryDirectory()
        var options = PhotoLibrary.Options()
        options.preauthorized = true
        options.randomSeed = 1
        let library = try PhotoLibrary(url: directory.file("library.sqlite"), device: "anna-phone", options: options)
        try library.performChangesAndWait { _ = try $0.createAlbum(title: "Trip") }
        let report: ChainVerificationReport = try library.verify()
        #expect(report == (try library.verifyChain()))
        #expect(report.isIntact && report.checkedEvents == 1)
    }
}
