import Foundation
import LedgerCore
import PhotoLedgerServer
import SyncProtocol
import Testing

/// A store backend the contract runs on, made fresh for one test.
struct StoreBackend: CustomStringConvertible, Sendable {
    let description: String
    let make: @Sendable () throws -> StoreUnderTest

    static let sqlite = StoreBackend(description: "SQLite") {
        let directory = try TemporaryDirectory()
        return StoreUnderTest(store: try SQLiteServerStore(path: directory.path("server.sqlite")), keepAlive: [directory])
    }

    static let postgres = StoreBackend(description: "PostgreSQL") {
        let database = try PostgresTestDatabase()
        return StoreUnderTest(store: try PostgresServerStore(url: database.url), keepAlive: [database])
    }

    /// Every backend this build can run here: PostgreSQL when the tests have one
    /// (``PostgresTestDatabase``; the suite `PostgreSQL availability` says when they do not).
    static var all: [StoreBackend] {
        PostgresTestDatabase.adminURL == nil ? [sqlite] : [sqlite, postgres]
    }
}

/// A fresh store, with what must live as long as it (its directory, its database).
struct StoreUnderTest {
    let store: any ServerStore
    let keepAlive: [AnyObject]
}

/// A store with library `family` (and `work`), tokens for a readWrite, an addOnly and a readOnly
/// device, and the credentials the rules are applied for.
struct ContractFixture {
    let subject: StoreUnderTest
    var store: any ServerStore { subject.store }
    let family: UUID
    let rules = PushRules(maximumPayloadBytes: 1024)

    init(_ backend: StoreBackend) throws {
        subject = try backend.make()
        family = UUID(uuidString: "0193A5B2-7C00-7000-8000-00000000F00D")!
        try store.createLibrary(named: "family", uuid: family, at: 1)
        try store.createLibrary(named: "work", uuid: nil, at: 1)
        for (index, (device, scope)) in [("anna-phone", TokenScope.readWrite), ("kiosk", .addOnly), ("frame", .readOnly)].enumerated() {
            try store.registerToken(hash: SHA256.hash([UInt8(index)]), library: "family", device: DeviceID(device), scope: scope, at: 2)
        }
    }

    func credential(_ index: UInt8) throws -> Credential {
        try #require(try store.authenticate(tokenHash: SHA256.hash([index])))
    }

    /// Pushes `events` through the stateless checks and the rules, as the request handler does.
    func push(_ events: [Event], as index: UInt8 = 0, at milliseconds: UInt64 = 10) throws -> [PushResult.Status] {
        let credential = try credential(index)
        let candidates = events.map { rules.candidate(for: .valid(WireEvent($0)), credential: credential) }
        return try store.push(candidates, for: credential, receivedAt: milliseconds, rules: rules).results.map(\.status)
    }

    func all(_ library: String = "family") throws -> [ServerEvent] {
        let id = try credential(0).libraryID
        return try store.events(library: id, after: 0, limit: 10_000).events
    }
}

@Suite("Server store contract: every backend keeps the same push rules")
struct ServerStoreContractTests {
    @Test("accepted events take consecutive server sequences and one chain that verifies", arguments: StoreBackend.all)
    func sequencesAndChain(backend: StoreBackend) throws {
        let fixture = try ContractFixture(backend)
        var anna = EventFactory()
        #expect(try fixture.push(anna.make(3)) == [.stored(serverSequence: 1), .stored(serverSequence: 2), .stored(serverSequence: 3)])
        #expect(try fixture.push(anna.make(2)) == [.stored(serverSequence: 4), .stored(serverSequence: 5)])
        let stored = try fixture.all()
        #expect(stored.map(\.serverSequence) == [1, 2, 3, 4, 5])
        var chain = HashChain()
        for event in stored { #expect(chain.link(event.event) == event.chainHash) }
        let library = try fixture.credential(0).libraryID
        #expect(try fixture.store.chainSummary(libraryID: library) == ChainSummary(count: 5, headHash: chain.head, lastServerSequence: 5))
        #expect(try fixture.store.verifyChain(libraryID: library) == .intact(count: 5))
    }

    @Test("a push of 1,500 events is stored in order, on one chain, whatever path the store takes", arguments: StoreBackend.all)
    func largePush(backend: StoreBackend) throws {
        let fixture = try ContractFixture(backend)
        var anna = EventFactory()
        let small = anna.make(3), large = anna.make(1500)
        #expect(try fixture.push(small) == (1...3).map { .stored(serverSequence: $0) })
        #expect(try fixture.push(large) == (4...1503).map { .stored(serverSequence: $0) })
        #expect(try fixture.all().map(\.event.id) == (small + large).map(\.id))
        #expect(try fixture.store.verifyChain(libraryID: fixture.credential(0).libraryID) == .intact(count: 1503))
    }

    @Test("a repeated push is acknowledged with the same answers and stores nothing twice", arguments: StoreBackend.all)
    func duplicates(backend: StoreBackend) throws {
        let fixture = try ContractFixture(backend)
        var anna = EventFactory()
        let events = anna.make(2)
        var bad = anna.make()
        bad.payload = [UInt8](repeating: 7, count: 2000)
        let first = try fixture.push(events + [bad])
        guard case .rejected(let reason) = first[2] else { Issue.record("expected a rejection, got \(first[2])"); return }
        #expect(reason.contains("exceeds the limit"))
        #expect(
            try fixture.push(events + [bad]) == [.duplicate(serverSequence: 1), .duplicate(serverSequence: 2), .rejected(reason: reason)])
        #expect(try fixture.all().count == 2)
    }

    @Test("a gap answers every later event with the sequence expected, and a rejection consumes its sequence", arguments: StoreBackend.all)
    func gapsAndRejections(backend: StoreBackend) throws {
        let fixture = try ContractFixture(backend)
        var anna = EventFactory()
        let events = anna.make(4)
        #expect(
            try fixture.push([events[0], events[2], events[3]]) == [
                .stored(serverSequence: 1), .gap(expectedDeviceSequence: 2), .gap(expectedDeviceSequence: 2),
            ])
        var tooLarge = events[1]
        tooLarge.payload = [UInt8](repeating: 1, count: 4096)
        guard case .rejected = try fixture.push([tooLarge])[0] else {
            Issue.record("an event over the payload limit must be rejected"); return
        }
        // Its sequence is consumed: the next event continues after it.
        #expect(try fixture.push([events[2], events[3]]) == [.stored(serverSequence: 2), .stored(serverSequence: 3)])
        // A sequence used already, by another event, is rejected.
        var reused = anna.make()
        reused.deviceSequence = 3
        guard case .rejected(let reason) = try fixture.push([reused])[0] else { Issue.record("a reused sequence must be rejected"); return }
        #expect(reason.contains("already used"))
    }

    @Test("an identifier rejected before gets its rejection again, even at the device's next sequence", arguments: StoreBackend.all)
    func rejectionsStayWithTheirIdentifier(backend: StoreBackend) throws {
        let fixture = try ContractFixture(backend)
        var anna = EventFactory()
        let events = anna.make(3)
        var tooLarge = events[0]
        tooLarge.payload = [UInt8](repeating: 1, count: 4096)
        guard case .rejected(let reason) = try fixture.push([tooLarge])[0] else {
            Issue.record("an event over the payload limit must be rejected"); return
        }
        // The same identifier at the next sequence, now within the limit: the same rejection,
        // which consumes nothing; then the device's next events are stored.
        var again = events[0]
        again.deviceSequence = 2
        #expect(try fixture.push([again]) == [.rejected(reason: reason)])
        let later = Array(events[1...])
        #expect(try fixture.push(later) == [.stored(serverSequence: 1), .stored(serverSequence: 2)])
        #expect(try fixture.all().map(\.event.id) == later.map(\.id))
    }

    @Test(
        "another device's event is refused without touching the pusher's sequence; an identifier names one event",
        arguments: StoreBackend.all)
    func identifiersBelongToTheirEvent(backend: StoreBackend) throws {
        let fixture = try ContractFixture(backend)
        var anna = EventFactory()
        var kiosk = EventFactory(device: "kiosk", seed: 2)
        let annas = anna.make(2)
        #expect(try fixture.push([annas[0]]) == [.stored(serverSequence: 1)])
        // The kiosk sends Anna's unsent event, then its own first event: neither records anything
        // under Anna's identifier, and its own sequence starts at 1.
        let own = kiosk.make(type: EventType.assetCreated.rawValue)
        let refused = try fixture.push([annas[1], own], as: 1)
        guard case .rejected(let reason) = refused[0] else { Issue.record("another device's event must be refused"); return }
        #expect(reason.contains("not the token's device"))
        #expect(refused[1] == .stored(serverSequence: 2))
        #expect(try fixture.push([annas[1]]) == [.stored(serverSequence: 3)], "Anna's event is still hers to push")
        // An event of the kiosk's that takes the identifier of a stored event is not a duplicate of it.
        var taken = kiosk.make(type: EventType.assetCreated.rawValue)
        taken.id = annas[0].id
        guard case .rejected(let collision) = try fixture.push([taken], as: 1)[0] else {
            Issue.record("an identifier stored with other content must be refused")
            return
        }
        #expect(collision.contains("identifier"))
        #expect(try fixture.all().map(\.event.id) == [annas[0].id, own.id, annas[1].id])
    }

    @Test("an addOnly token creates new assets only", arguments: StoreBackend.all)
    func addOnlyCreatesNewAssetsOnly(backend: StoreBackend) throws {
        let fixture = try ContractFixture(backend)
        var anna = EventFactory()
        var kiosk = EventFactory(device: "kiosk", seed: 2)
        let album = anna.make(type: EventType.albumCreated.rawValue)
        #expect(try fixture.push([album]) == [.stored(serverSequence: 1)])
        let created = kiosk.make(type: EventType.assetCreated.rawValue)
        let again = kiosk.make(type: EventType.assetCreated.rawValue, object: created.object)
        let onAlbum = kiosk.make(type: EventType.assetCreated.rawValue, object: album.object)
        let renamed = kiosk.make(type: EventType.albumRenamed.rawValue)
        let newAlbum = kiosk.make(type: EventType.albumCreated.rawValue)
        let results = try fixture.push([created, again, onAlbum, renamed, newAlbum], as: 1)
        #expect(results[0] == .stored(serverSequence: 2))
        for (index, status) in results.enumerated().dropFirst() {
            guard case .rejected(let reason) = status else { Issue.record("event \(index) must be rejected, got \(status)"); continue }
            #expect(reason.contains("addOnly"))
        }
        #expect(try fixture.all().map(\.event.id) == [album.id, created.id])
    }

    @Test("an asset is created once, and a creation never takes an object of the other kind", arguments: StoreBackend.all)
    func creationsAndKinds(backend: StoreBackend) throws {
        let fixture = try ContractFixture(backend)
        var anna = EventFactory()
        let asset = anna.make(type: EventType.assetCreated.rawValue)
        let album = anna.make(type: EventType.albumCreated.rawValue)
        let secondAsset = anna.make(type: EventType.assetCreated.rawValue, object: asset.object)
        let albumOnAsset = anna.make(type: EventType.albumCreated.rawValue, object: asset.object)
        let sameAlbum = anna.make(type: EventType.albumCreated.rawValue, object: album.object)
        let change = anna.make(type: EventType.assetChanged.rawValue, object: asset.object)
        let results = try fixture.push([asset, album, secondAsset, albumOnAsset, sameAlbum, change])
        #expect(results[0] == .stored(serverSequence: 1))
        #expect(results[1] == .stored(serverSequence: 2))
        guard case .rejected(let once) = results[2], case .rejected(let kind) = results[3] else {
            Issue.record("a second creation of an asset and an album on an asset's identifier must be rejected: \(results)")
            return
        }
        #expect(once.contains("created once"))
        #expect(kind.contains("is an asset"))
        // Albums with a stable key are created by every device that needs them: allowed.
        #expect(results[4] == .stored(serverSequence: 3))
        #expect(results[5] == .stored(serverSequence: 4))
    }

    @Test(
        "a push mixing new events with stored identifiers and held objects gets the answers of one checked event by event",
        arguments: StoreBackend.all)
    func checksOnWriteAnswerAsLookups(backend: StoreBackend) throws {
        let fixture = try ContractFixture(backend)
        var anna = EventFactory()
        let asset = anna.make(type: EventType.assetCreated.rawValue)
        let album = anna.make(type: EventType.albumCreated.rawValue)
        #expect(try fixture.push([asset, album]) == [.stored(serverSequence: 1), .stored(serverSequence: 2)])

        // Each of these is new to the push; the store may check them only as it writes.
        let fresh = anna.make(type: EventType.assetCreated.rawValue)
        let createdAgain = anna.make(type: EventType.assetCreated.rawValue, object: asset.object)
        let sameAlbum = anna.make(type: EventType.albumCreated.rawValue, object: album.object)
        let laterObject = anna.make(type: EventType.assetChanged.rawValue)
        let createdAfterChange = anna.make(type: EventType.assetCreated.rawValue, object: laterObject.object)
        let created = anna.make(type: EventType.assetCreated.rawValue)
        let changedAfterCreation = anna.make(type: EventType.assetChanged.rawValue, object: created.object)
        var takenIdentifier = anna.make(type: EventType.assetCreated.rawValue)
        takenIdentifier.id = fresh.id
        let last = anna.make(type: EventType.assetCreated.rawValue)
        let push = [fresh, createdAgain, sameAlbum, laterObject, createdAfterChange, created, changedAfterCreation, takenIdentifier, last]
        let results = try fixture.push(push)
        func reason(_ index: Int) -> String {
            if case .rejected(let reason) = results[index] { return reason }
            return "not rejected: \(results[index])"
        }
        #expect(results[0] == .stored(serverSequence: 3))
        #expect(reason(1).contains("created once"), "\(reason(1))")
        #expect(results[2] == .stored(serverSequence: 4), "an album created again is allowed")
        #expect(results[3] == .stored(serverSequence: 5))
        #expect(reason(4).contains("created once"), "a creation after a change of the same object: \(reason(4))")
        #expect(results[5] == .stored(serverSequence: 6) && results[6] == .stored(serverSequence: 7))
        #expect(reason(7).contains("identifier"), "\(reason(7))")
        #expect(results[8] == .stored(serverSequence: 8))
        let stored = try fixture.all()
        #expect(stored.map(\.event.id) == [asset, album, fresh, sameAlbum, laterObject, created, changedAfterCreation, last].map(\.id))
        #expect(try fixture.store.verifyChain(libraryID: fixture.credential(0).libraryID) == .intact(count: 8))

        // The same push again: duplicates and the same rejections; then new events go on.
        #expect(
            try fixture.push(push)
                == results.enumerated().map { index, status in
                    if case .stored(let sequence) = status { return .duplicate(serverSequence: sequence) }
                    return status
                })
        let next = anna.make(2)
        #expect(try fixture.push(next) == [.stored(serverSequence: 9), .stored(serverSequence: 10)])
        let again = anna.make(type: EventType.assetCreated.rawValue, object: created.object)
        guard case .rejected(let once) = try fixture.push([again])[0] else { Issue.record("a second creation must be rejected"); return }
        #expect(once.contains("created once"))
    }

    @Test(
        "a folder is created once, and never takes the identifier of an asset or an album, nor they a folder's", arguments: StoreBackend.all
    )
    func folderCreations(backend: StoreBackend) throws {
        let fixture = try ContractFixture(backend)
        var anna = EventFactory()
        let folder = anna.make(type: EventType.collectionListCreated.rawValue)
        let asset = anna.make(type: EventType.assetCreated.rawValue)
        let again = anna.make(type: EventType.collectionListCreated.rawValue, object: folder.object)
        let folderOnAsset = anna.make(type: EventType.collectionListCreated.rawValue, object: asset.object)
        let albumOnFolder = anna.make(type: EventType.albumCreated.rawValue, object: folder.object)
        let assetOnFolder = anna.make(type: EventType.assetCreated.rawValue, object: folder.object)
        let results = try fixture.push([folder, asset, again, folderOnAsset, albumOnFolder, assetOnFolder])
        #expect(results[0] == .stored(serverSequence: 1) && results[1] == .stored(serverSequence: 2))
        let reasons = results.dropFirst(2).map { status -> String in
            if case .rejected(let reason) = status { return reason }
            return "not rejected: \(status)"
        }
        #expect(reasons[0].contains("a folder is created once"), "\(reasons[0])")
        #expect(reasons[1].contains("is an asset in this library; a folder cannot be created"), "\(reasons[1])")
        #expect(reasons[2].contains("is a folder in this library; an album cannot be created"), "\(reasons[2])")
        #expect(reasons[3].contains("an asset is created once"), "\(reasons[3])")
    }

    @Test(
        "events name their library: another library's events are refused, bound and sealed events come back as pushed",
        arguments: StoreBackend.all)
    func libraryBinding(backend: StoreBackend) throws {
        let fixture = try ContractFixture(backend)
        var anna = EventFactory()
        var bound = anna.make()
        bound.library = fixture.family
        var sealed = anna.make()
        sealed.library = fixture.family
        sealed.seal = Event.Seal(keyID: 3, nonce: [UInt8](repeating: 9, count: 24))
        var legacy = anna.make()
        legacy.format = .v1
        var foreign = anna.make()
        foreign.library = UUID()
        let results = try fixture.push([bound, sealed, legacy, foreign])
        #expect(Array(results.prefix(3)) == [.stored(serverSequence: 1), .stored(serverSequence: 2), .stored(serverSequence: 3)])
        guard case .rejected(let reason) = results[3] else { Issue.record("an event of another library must be rejected"); return }
        #expect(reason.contains("another library"))
        let stored = try fixture.all()
        #expect(stored.map(\.event) == [bound, sealed, legacy])
        #expect(stored.map { $0.event.canonicalBytes } == [bound, sealed, legacy].map(\.canonicalBytes))
        #expect(try fixture.store.verifyChain(libraryID: fixture.credential(0).libraryID) == .intact(count: 3))
        #expect(try fixture.credential(0).libraryUUID == fixture.family)
    }

    @Test("pages follow the server order; a pull records the device's watermark", arguments: StoreBackend.all)
    func pagesAndWatermark(backend: StoreBackend) throws {
        let fixture = try ContractFixture(backend)
        var anna = EventFactory()
        _ = try fixture.push(anna.make(7))
        let anna0 = try fixture.credential(0), frame = try fixture.credential(2)
        let first = try fixture.store.pull(for: anna0, since: 0, limit: 5, at: 20)
        #expect(first.events.map(\.serverSequence) == [1, 2, 3, 4, 5])
        #expect(first.hasMore)
        let second = try fixture.store.pull(for: anna0, since: 5, limit: 5, at: 21)
        #expect(second.events.map(\.serverSequence) == [6, 7])
        #expect(!second.hasMore)
        // A page after the last one, as far as a cursor goes, is empty.
        for since in [Int64(7), .max - 5, .max] {
            let page = try fixture.store.events(library: anna0.libraryID, after: since, limit: 5)
            #expect(page.events.isEmpty && !page.hasMore, "since \(since)")
        }
        // The readOnly device never pulled: it holds the watermark at 0; the addOnly device does not count.
        #expect(
            try fixture.store.compactionWatermark(libraryID: anna0.libraryID)
                == CompactionWatermark(watermark: 0, lastServerSequence: 7, deviceCount: 2))
        _ = try fixture.store.pull(for: frame, since: 6, limit: 5, at: 22)
        #expect(
            try fixture.store.compactionWatermark(libraryID: anna0.libraryID)
                == CompactionWatermark(watermark: 5, lastServerSequence: 7, deviceCount: 2))
    }

    @Test("blobs are recorded once and listed as missing until then", arguments: StoreBackend.all)
    func blobs(backend: StoreBackend) throws {
        let fixture = try ContractFixture(backend)
        let library = try fixture.credential(0).libraryID
        let a = SHA256.hash([1]), b = SHA256.hash([2])
        #expect(try fixture.store.missingBlobs(libraryID: library, hashes: [a, b]) == [a, b])
        #expect(try fixture.store.recordBlob(libraryID: library, hash: a, size: 11, at: 3, ifStored: { true }) == true)
        #expect(try fixture.store.recordBlob(libraryID: library, hash: a, size: 11, at: 4, ifStored: { true }) == false)
        #expect(try fixture.store.blobSize(libraryID: library, hash: a) == 11)
        #expect(try fixture.store.blobSize(libraryID: library, hash: b) == nil)
        #expect(try fixture.store.missingBlobs(libraryID: library, hashes: [a, b]) == [b])
    }

    @Test("administration: names and identifiers are unique, tokens revoke, devices list", arguments: StoreBackend.all)
    func administration(backend: StoreBackend) throws {
        let fixture = try ContractFixture(backend)
        #expect(throws: ServerStoreError.self) { try fixture.store.createLibrary(named: "family", uuid: nil, at: 3) }
        #expect(throws: ServerStoreError.self) { try fixture.store.createLibrary(named: "other", uuid: fixture.family, at: 3) }
        #expect(throws: ServerStoreError.self) { try fixture.store.createLibrary(named: "no good", uuid: nil, at: 3) }
        #expect(try fixture.store.libraryNames() == ["family", "work"])
        #expect(try fixture.store.revokeTokens(library: "family", device: "kiosk", at: 5) == 1)
        #expect(try fixture.store.authenticate(tokenHash: SHA256.hash([1])) == nil)
        let devices = try fixture.store.devices(library: "family")
        #expect(devices.map(\.device) == ["anna-phone", "frame", "kiosk"])
        #expect(devices.map(\.revoked) == [false, false, true])
        #expect(throws: ServerStoreError.self) { try fixture.store.revokeTokens(library: "family", device: "nobody", at: 5) }
    }
}
