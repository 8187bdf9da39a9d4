import Foundation
import LedgerCore
import Testing

@testable import PhotoLedger

@Suite("Key assets")
struct KeyAssetTests {
    func keyAsset(_ library: PhotoLibrary, _ album: String) throws -> [String] {
        try library.fetchKeyAssets(in: library.album(album)).map(\.localIdentifier)
    }

    @Test("the chosen key asset is the cover while it is a member; otherwise the first asset is")
    func localRules() throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        let assets = try library.createAssets(3)
        let album = try library.createAlbum("Trip", assets: assets)
        #expect(try keyAsset(library, album) == [assets[0]], "none chosen: the first asset")
        try library.performChangesAndWait { try $0.albumChangeRequest(for: album).setKeyAsset(assets[2]) }
        #expect(try keyAsset(library, album) == [assets[2]])
        try library.performChangesAndWait { try $0.assetChangeRequest(for: assets[2]).setHidden(true) }
        #expect(try keyAsset(library, album) == [assets[0]], "hidden: not shown")
        try library.performChangesAndWait { try $0.assetChangeRequest(for: assets[2]).setHidden(false) }
        #expect(try keyAsset(library, album) == [assets[2]], "shown again: the choice is back")
        try library.performChangesAndWait { try $0.albumChangeRequest(for: album).setKeyAsset(nil) }
        #expect(try keyAsset(library, album) == [assets[0]])
        let outsider = try library.createAssets(1)
        let error = try #require(throws: PhotoLibraryError.self) {
            try library.performChangesAndWait { try $0.albumChangeRequest(for: album).setKeyAsset(outsider[0]) }
        }
        #expect(error.code == .operationInterrupted && error.message.contains("not in the album"))
        let empty = try library.createAlbum("Empty")
        #expect(try keyAsset(library, empty).isEmpty)
        let favorites = try library.fetchAssetCollections(with: .smartAlbum, subtype: .smartAlbumUserLibrary)[0]
        #expect(try library.fetchKeyAssets(in: favorites).count == 1)
        #expect(try library.history(of: album).entries.contains { $0.changes.contains { $0.field == "keyAsset" } })
    }

    @Test("concurrent choice and removal converge in either order: the first asset is the cover on both devices")
    func choiceVersusRemoval() throws {
        for annaFirst in [true, false] {
            let directory = try TemporaryDirectory()
            let clock = TestClock()
            let anna = try makeLibrary(directory, device: "anna-phone", seed: 1, clock: clock)
            let ben = try makeLibrary(directory, device: "ben-tablet", seed: 2, clock: clock)
            let assets = try anna.createAssets(3)
            let album = try anna.createAlbum("Trip", assets: assets)
            let shared = try anna.allEvents()
            try ben.applyRemoteEvents(shared)
            try anna.performChangesAndWait { try $0.albumChangeRequest(for: album).setKeyAsset(assets[1]) }
            clock.advance(milliseconds: 3)
            try ben.performChangesAndWait { try $0.albumChangeRequest(for: album).removeAssets([assets[1]]) }
            let fromAnna = try anna.allEvents().filter { event in !shared.contains { $0.id == event.id } }
            let fromBen = try ben.allEvents().filter { event in !shared.contains { $0.id == event.id } }
            if annaFirst {
                try ben.applyRemoteEvents(fromAnna)
                try anna.applyRemoteEvents(fromBen)
            } else {
                try anna.applyRemoteEvents(fromBen)
                try ben.applyRemoteEvents(fromAnna)
            }
            #expect(try keyAsset(anna, album) == [assets[0]] && keyAsset(ben, album) == [assets[0]])
            #expect(try anna.projectionDump() == ben.projectionDump())
            try anna.rebuild()
            #expect(try anna.projectionDump() == ben.projectionDump(), "a rebuild folds the same")
        }
    }

    @Test("a peer's key-asset event that does not decode is quarantined; older versions fold, newer wait")
    func hostilePayloads() throws {
        let directory = try TemporaryDirectory()
        let clock = TestClock()
        let anna = try makeLibrary(directory, device: "anna-phone", seed: 1, clock: clock)
        let ben = try makeLibrary(directory, device: "ben-tablet", seed: 2, clock: clock)
        let assets = try anna.createAssets(2)
        let album = try anna.createAlbum("Trip", assets: assets)
        try anna.performChangesAndWait { try $0.albumChangeRequest(for: album).setKeyAsset(assets[1]) }
        let events = try anna.allEvents()
        let template = try #require(events.last { $0.type == EventType.albumKeyAssetSet.rawValue })
        try ben.applyRemoteEvents(Array(events.dropLast()))
        var sequence = Int64(100)
        func variant(_ payload: [UInt8], version: Int = EventSchema.currentVersion) -> Event {
            var event = template
            event.id = UUID()
            sequence += 1
            event.deviceSequence = sequence
            event.payload = payload
            event.schemaVersion = version
            return event
        }
        let assetBytes = LocalIdentifier(assets[0])!.uuid.bytes
        let truncated = variant([1] + assetBytes.prefix(7))
        let trailing = variant([0, 0, 9, 9])
        let badFlag = variant([7] + assetBytes + [0])
        let versionOne = variant([1] + assetBytes, version: 1)
        let newer = variant([1, 2, 3], version: EventSchema.currentVersion + 1)
        let applied = try ben.applyRemoteEvents([truncated, trailing, badFlag, versionOne, newer])
        #expect(applied == 5, "every event is kept")
        let quarantine = Dictionary(uniqueKeysWithValues: try ben.quarantine().map { ($0.eventID, $0) })
        for bad in [truncated, trailing, badFlag] {
            #expect(quarantine[bad.id]?.kind == .quarantined && quarantine[bad.id]?.reason.contains("payload is invalid") == true)
        }
        #expect(quarantine[newer.id]?.kind == .needsNewerVersion)
        #expect(quarantine[versionOne.id] == nil, "a version 1 payload (no claims) folds")
        #expect(try keyAsset(ben, album) == [assets[0]], "the version 1 choice folded")
    }
}
