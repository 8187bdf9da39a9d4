import Foundation
import LedgerCore
import LedgerStore
import PhotoLedgerServer
import SyncProtocol
import SyncTransport
import Testing

@testable import PhotoLedger
@testable import PhotoLedgerSync

/// A device that speaks the protocol by hand: it pushes whatever events it is given, as a
/// damaged or hostile client would.
struct RawClient {
    let server: TestServer
    let device: DeviceID
    let token: String
    let library: String

    init(_ server: TestServer, device: DeviceID, scope: TokenScope, library: String = "family") throws {
        self.server = server
        self.device = device
        self.library = library
        token = try server.token(device: device, library: library, scope: scope)
    }

    /// Pushes `events` as they are (their content hashes computed), returning the server's answers.
    func push(_ events: [Event]) async throws -> [PushResult.Status] {
        let body = PushRequest(device: device, events: events).encoded()
        let response = try await CurlTransport().send(
            HTTPRequest(
                method: .post, url: URL(string: "http://127.0.0.1:\(server.port)\(SyncRoutes.events(library: library))")!,
                headers: ["Authorization": "Bearer \(token)", "Content-Type": "application/json"], body: .bytes(body)))
        #expect(response.status == 200, "\(String(decoding: response.body.bytes, as: UTF8.self))")
        return try PushResponse.decode(response.body.bytes).results.map(\.status)
    }

    /// An event of this device with the given envelope fields.
    func event(
        _ sequence: Int64, type: EventType, object: UUID = UUID(), payload: [UInt8], version: Int = 2, library: UUID? = nil,
        milliseconds: UInt64
    ) -> Event {
        Event(
            id: UUID(), library: library, device: device, deviceSequence: sequence,
            timestamp: HLCTimestamp(milliseconds: milliseconds, counter: 0),
            changeBlock: UUID(), object: object, type: type.rawValue, schemaVersion: version, payload: payload)
    }
}

/// Expects `body` to throw a ``PhotoLibraryError`` with `code`.
func expectError<R>(_ code: PhotoLibraryError.Code, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> R) {
    let error = #expect(throws: PhotoLibraryError.self, sourceLocation: sourceLocation) { _ = try body() }
    #expect(error?.code == code, sourceLocation: sourceLocation)
}

/// A valid `asset.created` payload (no resources), as this build writes it.
func assetCreationPayload(favorite: Bool = false, hidden: Bool = false) -> [UInt8] {
    ChangeEvent.assetCreated(
        ChangeEvent.AssetCreation(
            mediaType: .image, mediaSubtypes: [], pixelWidth: 4, pixelHeight: 3, duration: 0, creationDate: nil, location: nil,
            isFavorite: favorite, isHidden: hidden, resources: [])
    ).encoded()
}

@Suite("Trust: no peer can break a library")
struct TrustTests {
    /// Anna's phone with a few photos in an album, synced; the server and clock for more devices.
    static func family() async throws -> (server: TestServer, directory: TemporaryDirectory, clock: TestClock, anna: Device, album: String)
    {
        let clock = TestClock()
        let server = try TestServer(clock: clock)
        let directory = try TemporaryDirectory()
        let anna = try Device("anna-phone", server: server, directory: directory, clock: clock, seed: 1)
        let album = try anna.library.performChangesAndWait { changes in
            let album = try changes.createAlbum(title: "Trip")
            for seed: UInt64 in 1...3 { try album.addAssets([try changes.createAsset(from: photo(seed)).placeholderForCreatedAsset]) }
            return album.placeholderForCreatedAssetCollection.localIdentifier
        }
        try await anna.sync()
        return (server, directory, clock, anna, album)
    }

    @Test("an addOnly device's undecodable events are quarantined on every device; nobody crashes or stops pulling")
    func poisonEvents() async throws {
        let (server, directory, clock, anna, _) = try await Self.family()
        let kiosk = try RawClient(server, device: "kiosk", scope: .addOnly)
        // A payload whose first varint is 2^64 − 1 (it trapped the decoder), and one of three bytes.
        let huge: [UInt8] = [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01]
        let poison = [
            kiosk.event(1, type: .assetCreated, payload: huge, milliseconds: clock.read()),
            kiosk.event(2, type: .assetCreated, payload: [1, 2, 3], milliseconds: clock.read()),
        ]
        let before = try server.store.chainSummary(libraryID: 1).lastServerSequence
        #expect(try await kiosk.push(poison) == [.stored(serverSequence: before + 1), .stored(serverSequence: before + 2)])
        // Anna keeps working after them; Ben is new and gets everything.
        clock.advance(milliseconds: 10)
        try anna.library.performChangesAndWait { _ = try $0.createAsset(from: photo(9)) }
        let annaReport = try await anna.sync()
        #expect(annaReport.quarantinedEvents.count == 2)
        let ben = try Device("ben-laptop", server: server, directory: directory, clock: clock, seed: 2)
        let report = try await ben.sync()
        #expect(report.pulledEvents == Int(before) + 3)
        #expect(report.quarantinedEvents.count == 2, "\(report.quarantinedEvents)")
        #expect(try ben.library.fetchAssets().count == 4)
        for device in [anna, ben] {
            let quarantine = try device.library.quarantine()
            #expect(Set(quarantine.map(\.eventID)) == Set(poison.map(\.id)))
            #expect(quarantine.allSatisfy { $0.kind == .quarantined && $0.device == "kiosk" && $0.reason.contains("payload is invalid") })
            #expect(try device.library.verifyChain().isIntact)
            #expect(try device.library.verifyViews().isIntact)
            // Syncing again changes nothing and fails nothing.
            let again = try await device.sync()
            #expect(again.pulledEvents == 0 && again.quarantinedEvents.isEmpty)
        }
        #expect(try ben.dump() == anna.dump())
        #expect(try ben.library.quarantine() == anna.library.quarantine())
    }

    @Test("an addOnly device cannot change an asset it did not create; a log that holds such an event folds it as nothing")
    func addOnlyCannotModify() async throws {
        let (server, directory, clock, anna, _) = try await Self.family()
        let target = try #require(try anna.library.fetchAssets().first)
        let kiosk = try RawClient(server, device: "kiosk", scope: .addOnly)
        let hijack = kiosk.event(
            1, type: .assetCreated, object: LocalIdentifier(target.localIdentifier)!.uuid,
            payload: assetCreationPayload(favorite: true, hidden: true),
            milliseconds: clock.read() + 1000)
        guard case .rejected(let reason) = try await kiosk.push([hijack])[0] else {
            Issue.record("the server must refuse an addOnly creation of an existing object")
            return
        }
        #expect(reason.contains("addOnly"))
        // A server before this rule stored such events: a device that receives one keeps the
        // earliest creation and quarantines the other, on every device alike.
        var forged = hijack
        forged.deviceSequence = 2
        forged.id = UUID()
        forged.timestamp = HLCTimestamp(milliseconds: clock.read() + 2000, counter: 0)
        let ben = try Device("ben-laptop", server: server, directory: directory, clock: clock, seed: 2)
        _ = try await ben.sync()
        for library in [anna.library, ben.library] {
            #expect(try library.applyRemoteEvents([forged]) == 1)
            let asset = try #require(try library.fetchAssets(withLocalIdentifiers: [target.localIdentifier]).first)
            #expect(!asset.isFavorite && !asset.isHidden)
            let quarantined = try library.quarantine()
            #expect(quarantined.map(\.eventID) == [forged.id])
            #expect(quarantined.first?.reason.contains("created once") == true)
            #expect(try library.verifyViews().isIntact)
        }
        #expect(try ben.dump() == anna.dump())
    }

    @Test("a creation the server rejects gives way to the other creation of its object, which this device had set aside")
    func rejectedCreationGivesWay() throws {
        let clock = TestClock()
        let directory = try TemporaryDirectory()
        var options = PhotoLibrary.Options()
        options.clock = { clock.read() }
        options.preauthorized = true
        let anna = try PhotoLibrary(url: directory.file("anna.sqlite"), device: "anna", options: options)
        let mine = try anna.performChangesAndWait { try $0.createAsset(from: photo(1)).placeholderForCreatedAsset.localIdentifier }
        let object = try #require(LocalIdentifier(mine)).uuid
        let own = try #require(try anna.replica.outbox(limit: 10).map(\.event).first { $0.object == object })
        // Another device created the same identifier later and reached the server first: here
        // the earlier creation wins until the server's answer arrives.
        let theirs = Event(
            id: UUID(), library: nil, device: "kiosk", deviceSequence: 1,
            timestamp: HLCTimestamp(milliseconds: clock.read() + 1000, counter: 0),
            changeBlock: UUID(), object: object, type: EventType.assetCreated.rawValue, schemaVersion: 2,
            payload: assetCreationPayload(favorite: true))
        #expect(try anna.applyRemoteEvents([theirs], serverSequences: [1]) == 1)
        #expect(try anna.quarantine().map(\.eventID) == [theirs.id])
        #expect(try anna.fetchAssets(withLocalIdentifiers: [mine]).first?.isFavorite == false)

        try anna.replica.acknowledge(stored: [], rejected: [(own.id, "asset \(mine) exists")])
        #expect(try anna.quarantine().isEmpty)
        #expect(try anna.fetchAssets(withLocalIdentifiers: [mine]).first?.isFavorite == true)
        let views = try anna.verifyViews()
        #expect(views.isIntact, "\(views)")
    }

    @Test("with an addOnly token the library reports add-only access: sync pushes and succeeds, changes other than creations fail at once")
    func addOnlyDevice() async throws {
        let (server, directory, clock, anna, _) = try await Self.family()
        let kiosk = try Device("kiosk", server: server, directory: directory, clock: clock, seed: 3, scope: .addOnly)
        // Made before the device knew its scope: an album, which the server will refuse.
        try kiosk.library.performChangesAndWait { changes in
            let album = try changes.createAlbum(title: "Kiosk")
            try album.addAssets([try changes.createAsset(from: photo(40)).placeholderForCreatedAsset])
        }
        #expect(try kiosk.library.fetchAssetCollections(with: .album).count == 1)
        let report = try await kiosk.sync()
        #expect(report.scope == .addOnly)
        #expect(report.pushedEvents == 1, "the asset creation")
        #expect(report.rejectedEvents.count == 2, "the album's creation and membership: \(report.rejectedEvents)")
        #expect(report.pulledEvents == 0)
        // The refused album is folded out: what stays is what every other device will see.
        #expect(kiosk.library.authorizationStatus(for: .readWrite) == .restricted)
        #expect(kiosk.library.authorizationStatus(for: .addOnly) == .authorized)
        expectError(.accessRestricted) { try kiosk.library.fetchAssetCollections(with: .album) }
        expectError(.accessUserDenied) { try kiosk.library.performChangesAndWait { _ = try $0.createAlbum(title: "Again") } }
        try kiosk.library.performChangesAndWait { _ = try $0.createAsset(from: photo(41)) }
        #expect(try await kiosk.sync().pushedEvents == 1)
        let annaReport = try await anna.sync()
        #expect(annaReport.pulledEvents == 2)
        #expect(try anna.library.fetchAssetCollections(with: .album).map(\.title) == ["Trip"])
        #expect(try kiosk.library.statistics().rejectedEvents == 2)
        #expect(
            try kiosk.library.readDatabase { db in try db.firstRow("SELECT count(*) FROM albums WHERE created = 1") { $0.int64(0) } } == 0)
    }

    @Test("with a readOnly token pulls always work, unsent changes are folded out, and change blocks fail at once")
    func readOnlyDevice() async throws {
        let (server, directory, clock, anna, _) = try await Self.family()
        let frame = try Device("frame", server: server, directory: directory, clock: clock, seed: 4, scope: .readOnly)
        try frame.library.performChangesAndWait { changes in
            _ = try changes.createAlbum(title: "Made offline")
            _ = try changes.createAsset(from: photo(40))
        }
        let report = try await frame.sync()
        #expect(report.scope == .readOnly)
        #expect(report.pulledEvents == Int(try server.store.chainSummary(libraryID: 1).lastServerSequence))
        #expect(try frame.albumTitles() == ["Trip"])
        #expect(try frame.library.replica.outboxCount() == 0)
        #expect(try frame.library.fetchAssets().count == 3)
        // Folded out as a full fold leaves it out: the photo is no longer among the resources to hold.
        #expect(try frame.library.verifyViews().isIntact)
        expectError(.accessRestricted) { try frame.library.performChangesAndWait { _ = try $0.createAlbum(title: "Again") } }
        clock.advance(milliseconds: 10)
        try anna.library.performChangesAndWait { _ = try $0.createAsset(from: photo(50)) }
        try await anna.sync()
        #expect(try await frame.sync().pulledEvents == 1)
        // The frame pulled: it no longer holds the compaction watermark at 0.
        let watermark = try server.store.compactionWatermark(libraryID: 1)
        #expect(watermark.watermark == watermark.lastServerSequence)
    }

    @Test("after a three-device sync every object's history is the same on every device")
    func oneHistory() async throws {
        let (server, directory, clock, anna, album) = try await Self.family()
        let ben = try Device("ben-laptop", server: server, directory: directory, clock: clock, seed: 2)
        let cleo = try Device("cleo-tablet", server: server, directory: directory, clock: clock, seed: 3)
        for device in [ben, cleo] { try await device.sync() }
        let asset = try #require(try anna.library.fetchAssets().first).localIdentifier
        // Concurrent renames and favourites, then one made after seeing the others.
        for (index, device) in [anna, ben, cleo].enumerated() {
            clock.advance(milliseconds: 7)
            try device.library.performChangesAndWait { changes in
                try changes.albumChangeRequest(for: album).setTitle("Trip \(index)")
                try changes.assetChangeRequest(for: asset).setFavorite(index % 2 == 0)
            }
        }
        for device in [cleo, anna, ben, cleo, anna] { try await device.sync() }
        clock.advance(milliseconds: 7)
        try ben.library.performChangesAndWait { try $0.albumChangeRequest(for: album).setTitle("Trip, final") }
        for device in [ben, anna, cleo] { try await device.sync() }
        for object in [album, asset] {
            let reference = try Self.history(anna.library, object)
            #expect(try Self.history(ben.library, object) == reference)
            #expect(try Self.history(cleo.library, object) == reference)
        }
        let titles = try Self.history(anna.library, album).filter { $0.type == "album.renamed" }.map(\.changes)
        #expect(titles.map { $0[0].newValue } == ["Trip 0", "Trip 1", "Trip 2", "Trip, final"])
        #expect(
            titles[0][0].outcome == .overruled(by: try Self.history(anna.library, album).filter { $0.type == "album.renamed" }[1].eventID))
        guard case .replaced = titles[2][0].outcome else { Issue.record("a rename made after seeing the last one replaces it"); return }
    }

    /// The history as every device must tell it: what the JSON of `history` shows.
    static func history(_ library: PhotoLibrary, _ object: String) throws -> [ObjectHistoryEntryShape] {
        try library.history(of: object, limit: 1000).entries.map(ObjectHistoryEntryShape.init)
    }

    @Test("a library's events cannot be replayed into another library, and a library syncs with one shared library")
    func libraryBinding() async throws {
        let clock = TestClock()
        let server = try TestServer(clock: clock, libraries: ["family", "work"])
        let directory = try TemporaryDirectory()
        let anna = try Device("anna-phone", server: server, directory: directory, clock: clock, seed: 1)
        try await anna.sync()
        try anna.library.performChangesAndWait { _ = try $0.createAsset(from: photo(1)) }
        try await anna.sync()
        let events = try anna.library.replica.ownEvents(fromDeviceSequence: 1, limit: 10).map(\.event)
        #expect(events.allSatisfy { $0.library != nil && $0.format == .v2 })
        // Replayed verbatim into "work", where the same device name has a token.
        let work = try RawClient(server, device: "anna-phone", scope: .readWrite, library: "work")
        let results = try await work.push(events)
        #expect(results.allSatisfy { if case .rejected(let reason) = $0 { reason.contains("another library") } else { false } })
        // The library itself, pointed at "work", refuses to sync there.
        let workRemote = try server.remote(device: "anna-phone", library: "work")
        let engine = SyncEngine(library: anna.library, remote: workRemote, transport: testTransport())
        let error = await #expect(throws: SyncError.self) { try await engine.sync() }
        #expect(error?.description.contains("syncs with one shared library") == true, "\(String(describing: error))")
        // A device receiving an event of another library quarantines it.
        var foreign = events[0]
        foreign.id = UUID()
        foreign.library = UUID()
        foreign.deviceSequence = 99
        let ben = try Device("ben-laptop", server: server, directory: directory, clock: clock, seed: 2)
        try await ben.sync()
        #expect(try ben.library.applyRemoteEvents([foreign]) == 1)
        #expect(try ben.library.quarantine().first?.reason.contains("belongs to library") == true)
        #expect(try ben.library.verifyChain().unboundEvents == 0)
    }

    @Test("events of a newer version are kept, counted, forwarded, and folded by the first build that reads them")
    func newerVersions() async throws {
        let (server, directory, clock, anna, album) = try await Self.family()
        // A newer client renames the album with a version-9 payload: the title, then a field this build does not know.
        var payload = ChangeEvent.albumRenamed(title: "Trip (new)").encoded()
        payload += [0x2A]
        let newer = try RawClient(server, device: "tablet-next", scope: .readWrite)
        let object = LocalIdentifier(album)!.uuid
        let renamed = newer.event(1, type: .albumRenamed, object: object, payload: payload, version: 9, milliseconds: clock.read() + 50)
        guard case .stored = try await newer.push([renamed])[0] else { Issue.record("the server relays a newer version"); return }
        let ben = try Device("ben-laptop", server: server, directory: directory, clock: clock, seed: 2)
        for device in [anna, ben] {
            let report = try await device.sync()
            #expect(report.quarantinedEvents.count == 1)
            #expect(try device.library.statistics().quarantined[.needsNewerVersion] == 1)
            #expect(try device.albumTitles() == ["Trip"])
        }
        // Ben upgrades: his build reads version 9 (it drops the field it adds) and folds the event on open.
        var options = PhotoLibrary.Options()
        options.clock = { clock.read() }
        options.preauthorized = true
        options.eventSchema = EventSchema.standard.reading(.albumRenamed, version: 9) { Array($0.dropLast()) }
        let upgraded = try PhotoLibrary(url: ben.library.url, device: ben.library.device, options: options)
        #expect(try upgraded.fetchAssetCollections(with: .album).map(\.title) == ["Trip (new)"])
        #expect(try upgraded.statistics().quarantined[.needsNewerVersion] == nil)
    }

    @Test("an edit made directly to a view table is found by the deep verification, named by table, key and column")
    func viewTampering() async throws {
        let (_, _, _, anna, _) = try await Self.family()
        #expect(try anna.library.verifyViews().isIntact)
        try anna.library.withDatabase { db in try db.execute("UPDATE assets SET favorite = 1") }
        let report = try anna.library.verifyViews()
        let difference = try #require(report.difference)
        #expect(difference.table == "assets")
        #expect(difference.detail.contains("favorite is 1, the log makes 0"), "\(difference)")
        #expect(try anna.library.verifyChain().isIntact, "the chain covers the log, not the views")
    }
}

/// The fields of a history entry that every device shows alike (the JSON of `history`).
struct ObjectHistoryEntryShape: Equatable {
    var eventID: UUID
    var device: DeviceID
    var timestamp: HLCTimestamp
    var type: String
    var changes: [FieldChange]

    init(_ entry: ObjectHistoryEntry) {
        eventID = entry.eventID
        device = entry.device
        timestamp = entry.timestamp
        type = entry.type
        changes = entry.changes
    }
}
