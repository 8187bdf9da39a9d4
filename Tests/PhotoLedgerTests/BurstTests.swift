import Foundation
import LedgerCore
import Testing

@testable import PhotoLedger

@Suite("Bursts: the representative in fetches, every photo on request, picks that sync")
struct BurstTests {
    static let burst = "8D1A2B3C-4D5E-4F60-8172-93A4B5C6D7E8"

    /// Creates a burst of `count` photos taken a second apart (the camera picked `autoPick`)
    /// and a photo of no burst; returns the burst's identifiers in order, then the other photo's.
    func makeBurst(_ library: PhotoLibrary, count: Int = 4, autoPick: Int? = 2) throws -> (burst: [String], single: String) {
        try library.performChangesAndWait { changes in
            let burst = try (0..<count).map { index in
                var creation = imageCreation(date: Date(timeIntervalSince1970: 1_700_000_000 + Double(index)))
                creation.burstIdentifier = Self.burst
                creation.burstSelectionTypes = index == autoPick ? [.autoPick] : []
                return try changes.createAsset(creation).placeholderForCreatedAsset.localIdentifier
            }
            let single = try changes.createAsset(imageCreation(date: Date(timeIntervalSince1970: 1_600_000_000)))
            return (burst, single.placeholderForCreatedAsset.localIdentifier)
        }
    }

    func smartAlbum(_ library: PhotoLibrary, _ subtype: CollectionSubtype) throws -> AssetCollection {
        try #require(try library.fetchAssetCollections(with: .smartAlbum, subtype: subtype).firstObject)
    }

    @Test("fetches return a burst's representative; includeAllBurstAssets and the burst identifier return every photo")
    func representative() throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        let (burst, single) = try makeBurst(library)
        #expect(try library.fetchAssets().map(\.localIdentifier) == [single, burst[2]], "the camera's pick represents the burst")
        let all = try library.fetchAssets(options: FetchOptions(includeAllBurstAssets: true))
        #expect(all.map(\.localIdentifier) == [single] + burst)
        #expect(all.map(\.representsBurst) == [false, false, false, true, false])
        #expect(all[3].burstIdentifier == Self.burst && all[3].burstSelectionTypes == [.autoPick] && all[0].burstIdentifier == nil)
        #expect(try library.fetchAssets(withBurstIdentifier: Self.burst).map(\.localIdentifier) == burst)
        #expect(try library.fetchAssets(withBurstIdentifier: "no such burst").isEmpty)
        #expect(
            try library.fetchAssets(withLocalIdentifiers: [burst[0]]).map(\.localIdentifier) == [burst[0]],
            "a fetch by identifier returns the photo it names")
        let bursts = try smartAlbum(library, .smartAlbumBursts)
        #expect(bursts.title == "Bursts" && bursts.estimatedAssetCount == 1)
        #expect(try library.fetchAssets(in: bursts).map(\.localIdentifier) == [burst[2]])
        #expect(try library.fetchAssets(in: bursts, options: FetchOptions(includeAllBurstAssets: true)).count == 4)
        // An album that holds the whole burst shows it as its representative too.
        let album = try library.createAlbum("Jump", assets: burst + [single])
        #expect(try library.members(album) == [burst[2], single])
        #expect(try library.fetchAssets(in: library.album(album), options: FetchOptions(includeAllBurstAssets: true)).count == 5)
    }

    @Test("a user pick represents the burst; deleting the representative hands it on; a burst with no pick shows its first photo")
    func picksAndDeletion() throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        let (burst, _) = try makeBurst(library, autoPick: nil)
        #expect(try library.fetchAssets(in: smartAlbum(library, .smartAlbumBursts)).map(\.localIdentifier) == [burst[0]])
        try library.performChangesAndWait { try $0.assetChangeRequest(for: burst[3]).setBurstUserPick(true) }
        let picked = try #require(try library.fetchAssets(withLocalIdentifiers: [burst[3]]).firstObject)
        #expect(picked.burstSelectionTypes == [.userPick] && picked.representsBurst)
        #expect(try library.fetchAssets(in: smartAlbum(library, .smartAlbumBursts)).map(\.localIdentifier) == [burst[3]])
        try library.performChangesAndWait { try $0.deleteAssets([burst[3]]) }
        #expect(try library.fetchAssets(in: smartAlbum(library, .smartAlbumBursts)).map(\.localIdentifier) == [burst[0]])
        let deleted = try library.fetchAssets(in: smartAlbum(library, .smartAlbumRecentlyDeleted))
        #expect(deleted.map(\.localIdentifier) == [burst[3]] && deleted[0].representsBurst == false)
        try library.performChangesAndWait { changes in
            try changes.recoverAssets([burst[3]])
            try changes.assetChangeRequest(for: burst[3]).setBurstUserPick(false)
        }
        #expect(try library.fetchAssets(in: smartAlbum(library, .smartAlbumBursts)).map(\.localIdentifier) == [burst[0]])
    }

    @Test("the creation request makes a burst from real photos; invalid burst properties are refused before anything is stored")
    func creationRequest() throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        let ids = try library.performChangesAndWait { changes in
            try (0..<2).map { index in
                try changes.createAsset(
                    withResources: [ResourceInput(type: .photo, source: .data(samplePhoto(UInt64(index))))],
                    properties: AssetCreationProperties(burstIdentifier: Self.burst, burstSelectionTypes: index == 1 ? [.userPick] : [])
                ).placeholderForCreatedAsset.localIdentifier
            }
        }
        let photos = try library.fetchAssets(withBurstIdentifier: Self.burst)
        #expect(Set(photos.map(\.localIdentifier)) == Set(ids))
        #expect(try library.fetchAssets().map(\.localIdentifier) == [ids[1]])
        let invalid: [(AssetCreationProperties, String)] = [
            (AssetCreationProperties(burstIdentifier: ""), "a burst identifier must have 1 to 256 bytes"),
            (AssetCreationProperties(burstIdentifier: String(repeating: "b", count: 257)), "not 257"),
            (AssetCreationProperties(burstSelectionTypes: [.autoPick]), "burst selection types need a burst identifier"),
            (
                AssetCreationProperties(burstIdentifier: "x", burstSelectionTypes: BurstSelectionTypes(rawValue: 8)),
                "unknown burst selection"
            ),
        ]
        for (properties, message) in invalid {
            let error = try #require(throws: PhotoLibraryError.self) {
                try library.performChangesAndWait { changes in
                    _ = try changes.createAsset(
                        withResources: [ResourceInput(type: .photo, source: .data(samplePhoto(9)))], properties: properties)
                }
            }
            #expect(error.code == .invalidResource && error.message.contains(message), "\(error.message)")
        }
        #expect(try library.fetchAssets(options: FetchOptions(includeAllBurstAssets: true)).count == 2, "nothing was created")
        let single = try library.createAssets(1)[0]
        let error = try #require(throws: PhotoLibraryError.self) {
            try library.performChangesAndWait { try $0.assetChangeRequest(for: single).setBurstUserPick(true) }
        }
        #expect(error.code == .changeNotSupported && error.message.contains("is not a burst photo"))
    }

    @Test("change details of random picks, deletions and hidings applied to an app's results equal new fetches", arguments: 0..<4)
    func randomChanges(seed: Int) throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory, seed: UInt64(seed) + 1)
        let (burst, _) = try makeBurst(library, count: 5)
        let bursts = try smartAlbum(library, .smartAlbumBursts)
        func fetchAll() throws -> [String: FetchResult<Asset>] {
            [
                "all photos": try library.fetchAssets(),
                "every burst photo": try library.fetchAssets(options: FetchOptions(includeAllBurstAssets: true)),
                "bursts": try library.fetchAssets(in: bursts),
                "the burst": try library.fetchAssets(withBurstIdentifier: Self.burst),
                "hidden": try library.fetchAssets(in: smartAlbum(library, .smartAlbumAllHidden)),
            ]
        }
        var held = try fetchAll()
        let observer = RecordingObserver()
        library.register(observer)
        var random = SeededRandomNumberGenerator(seed: UInt64(seed))
        for step in 0..<30 {
            let photo = burst[Int(random.next() % UInt64(burst.count))]
            let roll = random.next() % 4
            let before = try library.currentChangeToken
            try library.performChangesAndWait { changes in
                let asset = try #require(try? changes.assetChangeRequest(for: photo))
                switch roll {
                case 0: try asset.setBurstUserPick(random.next() % 2 == 0)
                case 1: try changes.deleteAssets([photo])
                case 2: try changes.recoverAssets([photo])
                default: try asset.setHidden(random.next() % 2 == 0)
                }
            }
            // A block that changed nothing (a recovery of a photo not deleted) notifies nothing.
            guard try library.currentChangeToken != before else { continue }
            let expected = try fetchAll()
            let change = try #require(observer.next(), "step \(step)")
            for (name, result) in held {
                held[name] = HeldResults.applyDetails(change, to: result, expected: expected[name]!, name: "\(name), step \(step)")
            }
        }
    }

    @Test("concurrent picks on two devices: each photo's pick is a register, and every device shows the same representative")
    func concurrentPicks() throws {
        let directory = try TemporaryDirectory()
        let clock = TestClock()
        let anna = try makeLibrary(directory, device: "anna-phone", seed: 1, clock: clock)
        let ben = try makeLibrary(directory, device: "ben-tablet", seed: 2, clock: clock)
        let (burst, _) = try makeBurst(anna)
        let shared = try anna.allEvents()
        try ben.applyRemoteEvents(shared)
        // Offline: anna picks the last photo and unpicks nothing; ben picks the second, then
        // (later) unpicks the last one that anna picked.
        try anna.performChangesAndWait { try $0.assetChangeRequest(for: burst[3]).setBurstUserPick(true) }
        clock.advance(milliseconds: 10)
        try ben.performChangesAndWait { changes in
            try changes.assetChangeRequest(for: burst[1]).setBurstUserPick(true)
            try changes.assetChangeRequest(for: burst[3]).setBurstUserPick(false)
        }
        let fromAnna = try anna.allEvents().filter { event in !shared.contains { $0.id == event.id } }
        let fromBen = try ben.allEvents().filter { event in !shared.contains { $0.id == event.id } }
        try ben.applyRemoteEvents(fromAnna)
        try anna.applyRemoteEvents(fromBen)
        for library in [anna, ben] {
            let photos = try library.fetchAssets(withBurstIdentifier: Self.burst)
            #expect(
                photos.map(\.burstSelectionTypes) == [[], [.userPick], [.autoPick], []], "ben's later unpick wins on \(library.device)")
            #expect(try library.fetchAssets().map(\.localIdentifier).contains(burst[1]))
        }
        #expect(try anna.projectionDump() == ben.projectionDump())
    }

    @Test("burst payloads: version 3 round-trips; version 2 payloads still decode; a pick in a version 2 payload is invalid")
    func payloadVersions() throws {
        let creation = ChangeEvent.assetCreated(
            {
                var creation = imageCreation()
                creation.burstIdentifier = Self.burst
                creation.burstSelectionTypes = [.autoPick, .userPick]
                return creation
            }())
        #expect(creation.schemaVersion == 3)
        #expect(try ChangeEvent.decode(type: .assetCreated, version: 3, payload: creation.encoded()).0 == creation)
        let plain = ChangeEvent.assetCreated(imageCreation())
        #expect(plain.schemaVersion == 2, "a change without a burst is written as before")
        #expect(try ChangeEvent.decode(type: .assetCreated, version: 2, payload: plain.encoded()).0 == plain)
        #expect(try ChangeEvent.decode(type: .assetCreated, version: 1, payload: plain.encoded()).0 == plain)
        let pick = ChangeEvent.assetChanged(.init(burstUserPick: true))
        #expect(try ChangeEvent.decode(type: .assetChanged, version: 3, payload: pick.encoded()).0 == pick)
        let error = try #require(throws: PayloadError.self) {
            try ChangeEvent.decode(type: .assetChanged, version: 2, payload: pick.encoded())
        }
        #expect(error.message.contains("a change mask of 16 in version 2"))
        var pickedWithoutBurst = plain.encoded()
        pickedWithoutBurst += [0, 1]
        let selection = try #require(throws: PayloadError.self) {
            try ChangeEvent.decode(type: .assetCreated, version: 3, payload: pickedWithoutBurst)
        }
        #expect(selection.message.contains("burst selection types without a burst"))
    }
}
