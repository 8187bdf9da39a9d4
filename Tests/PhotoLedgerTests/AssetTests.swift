import Foundation
import Testing

@testable import PhotoLedger

@Suite("Assets")
struct AssetTests {
    @Test("the placeholder's identifier is <UUID>/L0/001 and fetches the created asset")
    func placeholder() throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        let identifier = try library.createAssets(1)[0]
        #expect(identifier.hasSuffix("/L0/001"))
        #expect(LocalIdentifier(identifier)?.uuid.version == 7)
        let asset = try #require(try library.fetchAssets(withLocalIdentifiers: [identifier]).first)
        #expect(asset.localIdentifier == identifier)
        #expect(asset.pixelWidth == 4032 && asset.pixelHeight == 3024 && asset.mediaType == .image)
        #expect(asset.sourceDevice == "anna-phone")
        #expect(!asset.isFavorite && !asset.isHidden && !asset.isDeleted)
    }

    @Test("property changes are separate last-writer-wins fields")
    func properties() throws {
        let directory = try TemporaryDirectory()
        let clock = TestClock()
        let library = try makeLibrary(directory, clock: clock)
        let id = try library.createAssets(1)[0]
        let date = Date(timeIntervalSince1970: 1_700_000_000)
        clock.advance(milliseconds: 5000)
        try library.performChangesAndWait { changes in
            let request = try changes.assetChangeRequest(for: id)
            try request.setFavorite(true)
            try request.setCreationDate(date)
            try request.setLocation(Location(latitude: 47.37, longitude: 8.54, altitude: 408))
        }
        var asset = try #require(try library.fetchAssets(withLocalIdentifiers: [id]).first)
        #expect(asset.isFavorite && asset.creationDate == date && asset.location?.latitude == 47.37 && asset.location?.altitude == 408)
        #expect(asset.modificationDate > asset.addedDate)
        try library.performChangesAndWait { changes in
            let request = try changes.assetChangeRequest(for: id)
            try request.setHidden(true)
            try request.setLocation(nil)
        }
        asset = try #require(try library.fetchAssets(withLocalIdentifiers: [id]).first)
        #expect(asset.isHidden && asset.isFavorite && asset.location == nil)
        #expect(try library.fetchAssets().isEmpty)
    }

    @Test("delete moves to Recently Deleted, recover brings back latest values and memberships, purge removes for good")
    func deleteRecoverPurge() throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        let ids = try library.createAssets(2)
        let album = try library.createAlbum("Trip", assets: ids)
        try library.performChangesAndWait { try $0.deleteAssets([ids[0]]) }
        #expect(try library.fetchAssets().map(\.localIdentifier) == [ids[1]])
        #expect(try library.members(album) == [ids[1]])
        let deletedAlbum = try #require(try library.fetchAssetCollections(with: .smartAlbum, subtype: .smartAlbumRecentlyDeleted).first)
        let inTrash = try library.fetchAssets(in: deletedAlbum)
        #expect(inTrash.map(\.localIdentifier) == [ids[0]] && inTrash[0].isDeleted && inTrash[0].deletionDate != nil)
        // An edit while deleted lands on the fields.
        try library.performChangesAndWait { try $0.assetChangeRequest(for: ids[0]).setFavorite(true) }
        try library.performChangesAndWait { try $0.recoverAssets([ids[0]]) }
        #expect(try library.members(album) == ids)
        #expect(try library.fetchAssets(withLocalIdentifiers: [ids[0]]).first?.isFavorite == true)

        let error = try #require(throws: PhotoLibraryError.self) { try library.performChangesAndWait { try $0.purgeAssets([ids[1]]) } }
        #expect(error.message.contains("delete it before purging"))
        try library.performChangesAndWait { changes in
            try changes.deleteAssets([ids[1]])
            try changes.purgeAssets([ids[1]])
        }
        #expect(try library.fetchAssets(in: deletedAlbum).isEmpty)
        #expect(try library.fetchAssets(withLocalIdentifiers: [ids[1]]).isEmpty)
        #expect(throws: PhotoLibraryError.self) { try library.performChangesAndWait { _ = try $0.assetChangeRequest(for: ids[1]) } }
    }

    @Test("assets deleted longer than the retention period are purged")
    func retention() throws {
        let directory = try TemporaryDirectory()
        let clock = TestClock()
        let library = try makeLibrary(directory, clock: clock)
        let ids = try library.createAssets(2)
        try library.performChangesAndWait { try $0.deleteAssets([ids[0]]) }
        clock.advance(milliseconds: 10 * 86_400_000)
        try library.performChangesAndWait { try $0.deleteAssets([ids[1]]) }
        #expect(try library.purgeExpiredDeletions().isEmpty)
        clock.advance(milliseconds: 25 * 86_400_000)
        #expect(try library.purgeExpiredDeletions() == [ids[0]])
    }
}
