import Foundation
import LedgerCore
import LedgerStore
import Testing

@testable import PhotoLedger

/// An in-memory stand-in for the sync server: a log in server order with the server's chain
/// values (SHA-256 of the previous value and the canonical event bytes, as the real server
/// computes them), push acknowledgements and pull pages.
final class ScriptedServer {
    private(set) var log: [(event: Event, chainHash: [UInt8])] = []
    private var head = HashChain.origin
    private var cursors: [DeviceID: Int] = [:]

    /// Sends the library's unacknowledged events and records their server sequences.
    func push(_ library: PhotoLibrary) throws {
        let pending = try library.readDatabase { try EventLog($0).pendingEvents(limit: 100_000) }
        try library.withDatabase { db in
            for stored in pending {
                var chain = HashChain(head: head)
                head = chain.link(stored.event)
                log.append((stored.event, head))
                try EventLog(db).setServerSequence(Int64(log.count), for: stored.event.id)
            }
        }
    }

    /// Pulls the events after the library's cursor in pages, applies them, records their server
    /// sequences, and checks them against the server's chain as the sync engine does.
    @discardableResult
    func pull(_ library: PhotoLibrary, pageSize: Int = 1000) throws -> ServerChainReport {
        var report = ServerChainReport()
        while case let start = cursors[library.device, default: 0], start < log.count {
            let page = Array(log[start..<min(log.count, start + pageSize)].enumerated().map { (Int64(start + $0.offset + 1), $0.element) })
            _ = try library.applyRemoteEvents(page.map(\.1.event), serverSequences: page.map(\.0))
            report = try library.verifyServerChain(
                page.map { ServerChainEntry(serverSequence: $0.0, eventID: $0.1.event.id, chainHash: $0.1.chainHash) })
            cursors[library.device] = start + page.count
        }
        return report
    }

    /// Push from every library, then pull into every library.
    func sync(_ libraries: PhotoLibrary...) throws {
        for library in libraries { try push(library) }
        for library in libraries { try pull(library) }
    }

    /// The chain entries of the whole server log.
    var entries: [ServerChainEntry] {
        log.enumerated().map {
            ServerChainEntry(serverSequence: Int64($0.offset + 1), eventID: $0.element.event.id, chainHash: $0.element.chainHash)
        }
    }
}

/// Runs raw SQL on a library file outside the library, with the append-only triggers dropped:
/// how tampering is simulated.
func tamper(_ url: URL, _ statements: String...) throws {
    let db = try Database(path: url.path)
    try db.execute("DROP TRIGGER IF EXISTS events_are_never_deleted; DROP TRIGGER IF EXISTS events_are_never_changed")
    try db.execute("DROP TRIGGER IF EXISTS archived_events_are_never_deleted; DROP TRIGGER IF EXISTS archived_events_are_never_changed")
    for statement in statements { try db.execute(statement) }
}

@Suite("Audit: the server's chain checked against the events held here")
struct AuditServerTests {
    @Test("after syncing, every held event matches the server's chain, offline too")
    func serverChainMatches() throws {
        let directory = try TemporaryDirectory()
        let clock = TestClock()
        let anna = try makeLibrary(directory, device: "anna-phone", seed: 1, clock: clock)
        let ben = try makeLibrary(directory, device: "ben-tablet", seed: 2, clock: clock)
        let server = ScriptedServer()
        let assets = try anna.createAssets(3)
        try ben.createAlbum("Trip")
        try server.sync(anna, ben)
        try anna.createAlbum("Pets", assets: assets)
        try server.sync(anna, ben)
        let report = try server.pull(anna)
        #expect(report.isIntact)
        for library in [anna, ben] {
            let offline = try library.verifyServerChain()
            #expect(offline.isIntact && offline.checked == server.log.count && offline.notHeld == 0, "\(offline)")
        }
    }

    @Test("a changed payload is reported with its event id and server position")
    func changedPayloadAgainstServer() throws {
        let directory = try TemporaryDirectory()
        let anna = try makeLibrary(directory)
        let server = ScriptedServer()
        let assets = try anna.createAssets(4)
        try anna.performChangesAndWait { try $0.assetChangeRequest(for: assets[1]).setFavorite(true) }
        try server.sync(anna)
        let target = server.log[4].event
        try tamper(anna.url, "UPDATE events SET payload = x'0504' WHERE event_id = x'\(Hex.encode(target.id.bytes))'")
        let report = try anna.verifyServerChain()
        #expect(report.failure?.eventID == target.id && report.failure?.position == 5 && report.failure?.chain == .server)
        #expect(report.failure?.description.contains("payload or envelope was changed") == true)
    }

    @Test("a deleted row is reported against the server's chain")
    func deletedRowAgainstServer() throws {
        let directory = try TemporaryDirectory()
        let anna = try makeLibrary(directory)
        let server = ScriptedServer()
        try anna.createAssets(3)
        try server.sync(anna)
        let target = server.log[1].event
        try tamper(anna.url, "DELETE FROM events WHERE event_id = x'\(Hex.encode(target.id.bytes))'")
        let report = try anna.verifyServerChain()
        #expect(report.failure?.eventID == target.id && report.failure?.position == 2)
        #expect(report.failure?.reason.contains("deleted") == true)
    }

    @Test("a server that rewrites a position it reported before is caught")
    func serverRewritesHistory() throws {
        let directory = try TemporaryDirectory()
        let anna = try makeLibrary(directory)
        let server = ScriptedServer()
        try anna.createAssets(2)
        try server.sync(anna)
        var forged = server.entries
        forged[0].chainHash = [UInt8](repeating: 7, count: 32)
        let report = try anna.verifyServerChain(forged)
        #expect(report.failure?.position == 1 && report.failure?.reason.contains("server's log was changed") == true)
        // The chain summary's head is checked against the value recorded from the pull pages.
        let head = try #require(server.log.last?.chainHash)
        #expect(try anna.verifyServerChainHead(lastServerSequence: 2, headHash: head) == nil)
        #expect(try anna.verifyServerChainHead(lastServerSequence: 2, headHash: forged[0].chainHash)?.position == 2)
        #expect(try anna.verifyServerChainHead(lastServerSequence: 9, headHash: head) == nil)
    }

    @Test(
        "a page is checked against the server's chain on a fresh device and on one with its own history; one wrong value rolls the page back"
    )
    func pageCheckedWithOrWithoutLocalHistory() throws {
        let directory = try TemporaryDirectory()
        let anna = try makeLibrary(directory, device: "anna-phone")
        let server = ScriptedServer()
        try anna.createAssets(260)
        try server.push(anna)
        let events = server.log.map(\.event)
        let sequences = (1...Int64(events.count)).map { $0 }
        for (index, name) in ["fresh", "with-history"].enumerated() {
            let library = try makeLibrary(directory, device: DeviceID(name), seed: UInt64(10 + index))
            // On a fresh device the local chain runs in server order, so its values are the
            // server's; with a change of its own first, every value is recomputed from the server's.
            if name == "with-history" { try library.createAlbum("Own") }
            let before = try library.readDatabase { try EventLog($0).count() }
            for position in [0, 137, events.count - 1] {
                var forged = server.entries
                forged[position].chainHash[5] ^= 1
                #expect(throws: PhotoLibrary.ServerChainMismatch.self) {
                    _ = try library.applyRemoteEvents(events, serverSequences: sequences, chain: forged)
                }
                #expect(try library.readDatabase { try EventLog($0).count() } == before)
                #expect(try library.readDatabase { db in try db.firstRow("SELECT count(*) FROM server_chain") { $0.int64(0) } } == 0)
            }
            #expect(try library.applyRemoteEvents(events, serverSequences: sequences, chain: server.entries) == events.count)
            let report = try library.verifyServerChain()
            #expect(report.isIntact && report.checked == events.count, "\(report)")
            let stored = try library.readDatabase { try EventLog($0).events(after: Int64(before), limit: 1000) }
            #expect(stored.map(\.serverSequence) == sequences.map { $0 })
            #expect((stored.map(\.hash) == server.log.map(\.chainHash)) == (name == "fresh"))
        }
    }

    @Test("server chain values that come with their events stay in the events' rows: checked, unchangeable, kept by compaction")
    func serverChainInEventRows() throws {
        let directory = try TemporaryDirectory()
        let anna = try makeLibrary(directory, device: "anna-phone")
        let ben = try makeLibrary(directory, device: "ben-tablet", seed: 2)
        let server = ScriptedServer()
        try anna.createAssets(50)
        try server.push(anna)
        let events = server.log.map(\.event)
        #expect(try ben.applyRemoteEvents(events, serverSequences: (1...50).map { Int64($0) }, chain: server.entries) == 50)
        func count(_ sql: String) throws -> Int64 { try ben.readDatabase { db in try db.firstRow(sql) { $0.int64(0) } ?? -1 } }
        #expect(try count("SELECT count(*) FROM events WHERE server_chain_hash IS NOT NULL") == 50)
        #expect(try count("SELECT count(*) FROM server_chain") == 0, "no second copy of the values")
        var report = try ben.verifyServerChain()
        #expect(report.isIntact && report.checked == 50, "\(report)")
        #expect(try ben.verifyServerChainHead(lastServerSequence: 50, headHash: server.log[49].chainHash) == nil)
        #expect(try ben.verifyServerChainHead(lastServerSequence: 50, headHash: server.log[48].chainHash)?.position == 50)

        // Pulled again (a repeated delivery), nothing is recorded twice.
        #expect(try ben.applyRemoteEvents(events, serverSequences: (1...50).map { Int64($0) }, chain: server.entries) == 0)
        #expect(try count("SELECT count(*) FROM server_chain_entries") == 50)

        // The value is part of the append-only row.
        #expect(throws: (any Error).self) {
            try ben.withDatabase { db in try db.execute("UPDATE events SET server_chain_hash = zeroblob(32) WHERE local_seq = 7") }
        }
        // Changed behind the library's back, it no longer matches the event.
        try tamper(ben.url, "UPDATE events SET server_chain_hash = zeroblob(32) WHERE server_seq = 20")
        report = try ben.verifyServerChain()
        #expect(report.failure?.position == 20)
        try tamper(ben.url, "UPDATE events SET server_chain_hash = X'\(Hex.encode(server.log[19].chainHash))' WHERE server_seq = 20")

        // Compaction copies the values of the rows it moves to the archive into server_chain.
        #expect(try ben.compact(upToServerSequence: 30).archivedEvents == 30)
        #expect(try count("SELECT count(*) FROM server_chain") == 30)
        #expect(try count("SELECT count(*) FROM events WHERE server_chain_hash IS NOT NULL") == 20)
        report = try ben.verifyServerChain()
        #expect(report.isIntact && report.checked == 50, "\(report)")
    }

    @Test("verification reads values kept in event rows and in server_chain in one server order, page after page")
    func verificationMergesBothSources() throws {
        let directory = try TemporaryDirectory()
        let anna = try makeLibrary(directory, device: "anna-phone")
        let ben = try makeLibrary(directory, device: "ben-tablet", seed: 2)
        let server = ScriptedServer()
        try anna.createAssets(700)
        try server.push(anna)
        try ben.createAssets(600)
        try server.push(ben)  // server positions 701–1300: ben holds these already
        try anna.createAssets(500)
        try server.push(anna)  // 1301–1800
        let entries = server.entries
        // Anna's events arrive with their values (kept in their rows); ben's own come back as
        // positions already held (kept in server_chain).
        for range in [0..<700, 1300..<1800] {
            let page = Array(server.log[range])
            _ = try ben.applyRemoteEvents(page.map(\.event), serverSequences: range.map { Int64($0 + 1) }, chain: Array(entries[range]))
        }
        #expect(try ben.verifyServerChain(Array(entries[700..<1300])).checked == 600)
        let inRows = try ben.readDatabase { db in
            try db.firstRow("SELECT count(*) FROM events WHERE server_chain_hash IS NOT NULL") { $0.int64(0) }
        }
        let inTable = try ben.readDatabase { db in try db.firstRow("SELECT count(*) FROM server_chain") { $0.int64(0) } }
        #expect(inRows == 1200 && inTable == 600)
        let report = try ben.verifyServerChain()
        #expect(report.isIntact && report.checked == 1800, "\(report)")
        // A value changed in either place is found at its position.
        try tamper(ben.url, "UPDATE server_chain SET chain_hash = zeroblob(32) WHERE server_seq = 1001")
        #expect(try ben.verifyServerChain().failure?.position == 1001)
    }

    @Test("a page naming one server position twice is checked for both events")
    func repeatedPositionInPage() throws {
        let directory = try TemporaryDirectory()
        let anna = try makeLibrary(directory, device: "anna-phone")
        let ben = try makeLibrary(directory, device: "ben-tablet", seed: 2)
        let server = ScriptedServer()
        try anna.createAssets(3)
        try server.push(anna)
        var entries = server.entries
        // Position 3 again, with the event at position 2: not what the server chained at 3.
        entries.append(ServerChainEntry(serverSequence: 3, eventID: entries[1].eventID, chainHash: entries[2].chainHash))
        let events = server.log.map(\.event)
        #expect(throws: PhotoLibrary.ServerChainMismatch.self) {
            _ = try ben.applyRemoteEvents(events, serverSequences: [1, 2, 3], chain: entries)
        }
        #expect(try ben.readDatabase { try EventLog($0).count() } == 0)
    }

    @Test("entries whose predecessor is unknown are counted, not guessed; events not yet pulled are not held")
    func unlinkedAndNotHeld() throws {
        let directory = try TemporaryDirectory()
        let anna = try makeLibrary(directory, device: "anna-phone")
        let ben = try makeLibrary(directory, device: "ben-tablet", seed: 2)
        let server = ScriptedServer()
        try anna.createAssets(3)
        try server.push(anna)
        let entries = server.entries
        let fresh = try ben.verifyServerChain(Array(entries.suffix(1)))
        #expect(fresh.notHeld == 1 && fresh.isIntact)
        let report = try anna.verifyServerChain(Array(entries.suffix(2)))
        #expect(report.unlinked == 1 && report.checked == 1 && report.isIntact)
    }
}
