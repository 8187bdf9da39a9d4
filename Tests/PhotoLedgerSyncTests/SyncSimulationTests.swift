import Foundation
import LedgerCore
import LedgerStore
import PhotoLedgerServer
import SyncTransport
import Testing
@testable import PhotoLedger
@testable import PhotoLedgerSync

/// Several devices make random changes offline and sync on random schedules through a faulty
/// network (lost requests, lost responses after commit, duplicates, old requests replayed out of
/// order) and a server that restarts; after everyone syncs with a healthy network, every device
/// has identical projections, and no event is lost or duplicated.
@Suite("Multi-replica sync simulation")
struct SyncSimulationTests {
    /// Schedules to run: a few dozen by default, a thousand in CI (`PHOTOLEDGER_SIMULATION_SCHEDULES` sets it).
    static let schedules = TestIntensity.count(local: 30, full: 1000, variable: "PHOTOLEDGER_SIMULATION_SCHEDULES")

    @Test("devices converge after random changes and syncs through faults", arguments: 0..<schedules)
    func converge(schedule: Int) async throws {
        var random = SeededRandomNumberGenerator(seed: UInt64(77_000 + schedule))
        let clock = TestClock()
        let directory = try TemporaryDirectory()
        let storePath = directory.file("server.sqlite").path
        let blobs = directory.file("blobs").path
        var store = try SQLiteServerStore(path: storePath)
        try store.createLibrary(named: "family", uuid: nil, at: clock.read())
        func makeServer(_ store: SQLiteServerStore) throws -> SyncServer {
            var configuration = SyncServer.Configuration(store: store, blobDirectory: blobs)
            configuration.clock = { clock.read() }
            configuration.logger = DiscardingLogger()
            return try SyncServer(configuration: configuration)
        }
        let wire = InProcessTransport(server: try makeServer(store))
        let deviceCount = Int.random(in: 3...5, using: &random)
        var devices: [(library: PhotoLibrary, faulty: SyncEngine, healthy: SyncEngine)] = []
        for index in 0..<deviceCount {
            var options = PhotoLibrary.Options()
            options.clock = { clock.read() }
            options.randomSeed = UInt64(schedule * 10 + index)
            options.preauthorized = true
            let name = DeviceID("device-\(index)")
            let library = try PhotoLibrary(url: directory.file("\(name).sqlite"), device: name, options: options)
            let token = try DeviceToken.generate()
            try store.registerToken(hash: DeviceToken.hash(token), library: "family", device: name, scope: .readWrite, at: clock.read())
            let remote = try SyncRemote(libraryURL: "http://sim.invalid/v1/libraries/family", token: token)
            var engineOptions = SyncEngine.Options()
            engineOptions.pushBatchSize = Int.random(in: 2...20, using: &random)
            engineOptions.pullPageSize = Int.random(in: 3...30, using: &random)
            let faulty = SyncEngine(
                library: library, remote: remote,
                transport: FaultyTransport(wrapping: wire, seed: UInt64(schedule * 100 + index), faultRate: 4), options: engineOptions)
            devices.append((library, faulty, SyncEngine(library: library, remote: remote, transport: wire, options: engineOptions)))
        }
        for _ in 0..<40 {
            clock.advance(milliseconds: UInt64.random(in: 0...50, using: &random))
            let device = devices.randomElement(using: &random)!
            switch Int.random(in: 0..<10, using: &random) {
            case 0..<6: try RandomChanges.apply(on: device.library, random: &random)
            case 9:
                // The server restarts: its store is closed and opened again.
                store = try SQLiteServerStore(path: storePath)
                wire.replace(with: try makeServer(store))
            default:
                _ = try? await device.faulty.sync()
            }
        }
        // Quiescence: everyone syncs twice over a healthy network.
        for _ in 0..<2 { for device in devices { try await device.healthy.sync() } }

        let reference = try dump(devices[0].library)
        for device in devices.dropFirst() {
            #expect(try dump(device.library) == reference, "schedule \(schedule): \(device.library.device) converged")
        }
        let allEvents = try Set(devices.flatMap { try eventIDs($0.library) })
        let summary = try store.chainSummary(libraryID: 1)
        #expect(Int(summary.count) == allEvents.count, "the server holds every event once")
        for device in devices {
            #expect(try eventIDs(device.library).count == allEvents.count, "nothing lost or duplicated on \(device.library.device)")
            #expect(try device.library.replica.outboxCount() == 0)
            #expect(try device.library.verify() == .intact(count: allEvents.count))
        }
    }

    func dump(_ library: PhotoLibrary) throws -> [String: [[SQLValue]]] {
        try library.readDatabase { db in
            var dump: [String: [[SQLValue]]] = [:]
            for table in ["assets", "asset_resources", "referenced_resources", "albums", "album_members"] {
                dump[table] = try db.rows("SELECT * FROM \(table) ORDER BY 1, 2") { row in (0..<row.columnCount).map { row.value($0) } }
            }
            return dump
        }
    }

    func eventIDs(_ library: PhotoLibrary) throws -> [UUID] {
        try library.readDatabase { db in try db.rows("SELECT event_id FROM events") { UUID(bytes: $0.blob(0))! } }
    }
}
