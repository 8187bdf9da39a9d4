import Foundation
import LedgerCore
import Testing

@testable import PhotoLedger

@Suite("Audit: the history of one object")
struct HistoryTests {
    /// Two libraries that share an album and an asset, then go offline.
    static func twoDevices(_ directory: TemporaryDirectory, clock: TestClock) throws
        -> (anna: PhotoLibrary, ben: PhotoLibrary, server: ScriptedServer, album: String, asset: String)
    {
        let anna = try makeLibrary(directory, device: "anna-phone", seed: 1, clock: clock)
        let ben = try makeLibrary(directory, device: "ben-tablet", seed: 2, clock: clock)
        let server = ScriptedServer()
        let asset = try anna.createAssets(1)[0]
        let album = try anna.createAlbum("Trip", assets: [asset])
        try server.sync(anna, ben)
        return (anna, ben, server, album, asset)
    }

    static func all(_ library: PhotoLibrary, _ identifier: String) throws -> [ObjectHistoryEntry] {
        try library.history(of: identifier, limit: 1000).entries
    }

    /// A write that lost to a concurrent one is overruled, on every device alike: the winner's
    /// event says what its writer had seen, and it had not seen the loser.
    static func expectLost(_ change: FieldChange, to winner: UUID, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(change.outcome == .overruled(by: winner), sourceLocation: sourceLocation)
    }

    @Test("a move of many members claims, for each, the position write it overwrote: three members, then hundreds")
    func membershipClaims() throws {
        let directory = try TemporaryDirectory()
        let anna = try makeLibrary(directory, device: "anna-phone", seed: 1, clock: TestClock())
        let assets = try anna.createAssets(530)
        let album = try anna.createAlbum("Trip", assets: assets)
        try anna.performChangesAndWait { try $0.albumChangeRequest(for: album).moveAssets(at: IndexSet(0..<3), to: 100) }
        let moved = try anna.members(album)
        try anna.performChangesAndWait { try $0.albumChangeRequest(for: album).moveAssets(at: IndexSet(0..<520), to: 10) }
        let memberships = try anna.allEvents().filter { $0.type == EventType.albumMembersChanged.rawValue }
        try #require(memberships.count == 3)
        func stamp(_ event: Event) -> WriterStamp {
            WriterStamp(hlc: Int64(bitPattern: event.timestamp.rawValue), device: event.device.rawValue)
        }
        func claims(_ event: Event) throws -> [RegisterField: WriterStamp?] {
            try #require(ChangeEvent.decode(type: .albumMembersChanged, version: event.schemaVersion, payload: event.payload).1).overwritten
        }
        let uuid = { (identifier: String) in LocalIdentifier(identifier)!.uuid }
        // The first three moved claim the add; the album's first writes claimed nothing.
        #expect(try claims(memberships[0]).values.allSatisfy { $0 == nil } && claims(memberships[0]).count == 530)
        let few = try claims(memberships[1])
        #expect(few.count == 3)
        for asset in assets.prefix(3) { #expect(few[.position(asset: uuid(asset))] == .some(stamp(memberships[0]))) }
        // Then 520 members, among them those three: each claims the last write of its own position.
        let many = try claims(memberships[2])
        #expect(many.count == 520)
        for asset in moved.prefix(520) {
            let last = assets.prefix(3).contains(asset) ? memberships[1] : memberships[0]
            #expect(many[.position(asset: uuid(asset))] == .some(stamp(last)))
        }
    }

    @Test("two devices renaming the same album offline: both writers in the history, the winner in effect, the loser overruled")
    func concurrentRenames() throws {
        let directory = try TemporaryDirectory()
        let clock = TestClock()
        let (anna, ben, server, album, _) = try Self.twoDevices(directory, clock: clock)
        clock.advance(milliseconds: 100)
        try anna.performChangesAndWait { try $0.albumChangeRequest(for: album).setTitle("Trip (Anna)") }
        clock.advance(milliseconds: 100)
        try ben.performChangesAndWait { try $0.albumChangeRequest(for: album).setTitle("Trip (Ben)") }
        try server.sync(anna, ben)
        try server.pull(anna)
        #expect(try anna.album(album).title == "Trip (Ben)" && ben.album(album).title == "Trip (Ben)")
        for library in [anna, ben] {
            let renames = try Self.all(library, album).filter { $0.type == "album.renamed" }
            #expect(renames.map(\.device) == ["anna-phone", "ben-tablet"])
            let (loser, winner) = (renames[0].changes[0], renames[1].changes[0])
            #expect(loser.field == "title" && loser.oldValue == "Trip" && loser.newValue == "Trip (Anna)")
            Self.expectLost(loser, to: renames[1].eventID)
            #expect(winner.oldValue == "Trip (Anna)" && winner.newValue == "Trip (Ben)" && winner.outcome == .inEffect)
        }
    }

    @Test("favorite set on both devices: the higher stamp wins everywhere and the other write is overruled")
    func concurrentFavorites() throws {
        let directory = try TemporaryDirectory()
        let clock = TestClock()
        let (anna, ben, server, _, asset) = try Self.twoDevices(directory, clock: clock)
        clock.advance(milliseconds: 100)
        try ben.performChangesAndWait { try $0.assetChangeRequest(for: asset).setFavorite(true) }
        clock.advance(milliseconds: 100)
        try anna.performChangesAndWait { try $0.assetChangeRequest(for: asset).setFavorite(false) }
        try server.sync(ben, anna)
        try server.pull(ben)
        for library in [anna, ben] {
            #expect(try library.fetchAssets(withLocalIdentifiers: [asset]).first?.isFavorite == false)
            let writes = try Self.all(library, asset).filter { $0.type == "asset.changed" }
            #expect(writes.map(\.device) == ["ben-tablet", "anna-phone"])
            #expect(writes[0].changes.map(\.field) == ["isFavorite"] && writes[0].changes[0].newValue == "true")
            Self.expectLost(writes[0].changes[0], to: writes[1].eventID)
            #expect(writes[1].changes == [FieldChange(field: "isFavorite", oldValue: "true", newValue: "false", outcome: .inEffect)])
        }
    }

    @Test("a rename made after seeing the previous one replaces it without a conflict")
    func sequentialRenames() throws {
        let directory = try TemporaryDirectory()
        let clock = TestClock()
        let (anna, ben, server, album, _) = try Self.twoDevices(directory, clock: clock)
        clock.advance(milliseconds: 100)
        try anna.performChangesAndWait { try $0.albumChangeRequest(for: album).setTitle("First") }
        try server.sync(anna, ben)
        clock.advance(milliseconds: 100)
        try ben.performChangesAndWait { try $0.albumChangeRequest(for: album).setTitle("Second") }
        try server.sync(ben, anna)
        for library in [anna, ben] {
            let renames = try Self.all(library, album).filter { $0.type == "album.renamed" }
            #expect(renames[0].changes[0].outcome == .replaced(by: renames[1].eventID))
        }
    }

    @Test("an asset's history: who, when, which block, old → new values, and the album membership changes that touched it")
    func assetHistory() throws {
        let directory = try TemporaryDirectory()
        let clock = TestClock()
        let library = try makeLibrary(directory, clock: clock)
        let asset = try library.createAssets(1)[0]
        clock.advance(milliseconds: 5)
        let album = try library.createAlbum("Trip", assets: [asset])
        try library.createAlbum("Unrelated", assets: try library.createAssets(1))
        try library.performChangesAndWait { changes in
            try changes.assetChangeRequest(for: asset).setHidden(true)
            try changes.albumChangeRequest(for: album).removeAssets([asset])
        }
        try library.performChangesAndWait { try $0.deleteAssets([asset]) }
        let entries = try Self.all(library, asset)
        #expect(entries.map(\.type) == ["asset.created", "album.membersChanged", "asset.changed", "album.membersChanged", "asset.deleted"])
        #expect(entries.allSatisfy { $0.device == "anna-phone" && $0.location == .live })
        #expect(entries[0].date == Date(timeIntervalSince1970: Double(TestClock().read()) / 1000))
        #expect(entries[2].changeBlock == entries[3].changeBlock)
        let membership = "album \(album)"
        #expect(entries[1].changes.first { $0.field == membership }?.newValue == "member")
        #expect(entries[3].changes == [FieldChange(field: membership, oldValue: "member", newValue: "not a member", outcome: .inEffect)])
        #expect(entries[2].changes == [FieldChange(field: "isHidden", oldValue: "false", newValue: "true", outcome: .inEffect)])
        #expect(entries[4].changes == [FieldChange(field: "isDeleted", oldValue: "false", newValue: "true", outcome: .inEffect)])
        let hidden = entries[0].changes.first { $0.field == "isHidden" }
        #expect(hidden?.oldValue == nil && hidden?.newValue == "false" && hidden?.outcome == .replaced(by: entries[2].eventID))
    }

    @Test("history is read in pages that together give every entry once")
    func paging() throws {
        let directory = try TemporaryDirectory()
        let clock = TestClock()
        let library = try makeLibrary(directory, clock: clock)
        let asset = try library.createAssets(1)[0]
        for index in 0..<11 {
            clock.advance(milliseconds: 1)
            try library.performChangesAndWait { try $0.assetChangeRequest(for: asset).setFavorite(index % 2 == 0) }
        }
        var pages: [[ObjectHistoryEntry]] = []
        var cursor: ObjectHistoryCursor?
        repeat {
            let page = try library.history(of: asset, after: cursor, limit: 5)
            pages.append(page.entries)
            cursor = page.next
        } while cursor != nil
        #expect(pages.map(\.count) == [5, 5, 2])
        #expect(Array(pages.joined()) == (try Self.all(library, asset)))
        expectError(.identifierNotFound) { try library.history(of: "nonsense") }
        expectError(.identifierNotFound) { try library.history(of: LocalIdentifier(uuid: UUID(), kind: .asset).description) }
    }
}
