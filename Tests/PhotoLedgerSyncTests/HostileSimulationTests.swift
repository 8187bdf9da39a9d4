import Foundation
import LedgerCore
import LedgerStore
import PhotoLedgerServer
import SyncProtocol
import SyncTransport
import Testing

@testable import PhotoLedger
@testable import PhotoLedgerSync

/// Honest devices make random changes and sync, while hostile devices with every scope push
/// random, mutated, truncated, replayed, future-version and foreign events, and events aimed at
/// the honest devices' objects. Honest devices never fail to sync, and end with identical views,
/// identical histories of every object and identical quarantine lists.
@Suite("Multi-replica sync simulation with hostile devices")
struct HostileSimulationTests {
    static let schedules = max(4, SyncSimulationTests.schedules / 5)

    @Test(
        "honest devices converge on views, histories and quarantine whatever hostile devices push", .serialized, arguments: 0..<schedules)
    func converge(schedule: Int) async throws {
        var random = SeededRandomNumberGenerator(seed: UInt64(91_000 + schedule))
        let clock = TestClock()
        let directory = try TemporaryDirectory()
        let store = try SQLiteServerStore(path: directory.file("server.sqlite").path)
        try store.createLibrary(named: "family", uuid: nil, at: clock.read())
        var configuration = SyncServer.Configuration(store: store, blobDirectory: directory.file("blobs").path)
        configuration.clock = { clock.read() }
        configuration.logger = DiscardingLogger()
        let wire = InProcessTransport(server: try SyncServer(configuration: configuration))

        var honest: [(library: PhotoLibrary, engine: SyncEngine)] = []
        for index in 0..<3 {
            var options = PhotoLibrary.Options()
            options.clock = { clock.read() }
            options.randomSeed = UInt64(schedule * 10 + index)
            options.preauthorized = true
            let name = DeviceID("honest-\(index)")
            let library = try PhotoLibrary(url: directory.file("\(name).sqlite"), device: name, options: options)
            let token = try DeviceToken.generate()
            try store.registerToken(hash: DeviceToken.hash(token), library: "family", device: name, scope: .readWrite, at: clock.read())
            var engineOptions = SyncEngine.Options()
            engineOptions.pullPageSize = Int.random(in: 3...30, using: &random)
            let remote = try SyncRemote(libraryURL: "http://sim.invalid/v1/libraries/family", token: token)
            honest.append((library, SyncEngine(library: library, remote: remote, transport: wire, options: engineOptions)))
        }
        var hostile: [HostileDevice] = []
        for (index, scope) in [TokenScope.readWrite, .addOnly, .readOnly].enumerated() {
            let name = DeviceID("hostile-\(index)")
            let token = try DeviceToken.generate()
            try store.registerToken(hash: DeviceToken.hash(token), library: "family", device: name, scope: scope, at: clock.read())
            hostile.append(HostileDevice(device: name, token: token, wire: wire))
        }

        for _ in 0..<50 {
            clock.advance(milliseconds: UInt64.random(in: 1...40, using: &random))
            switch Int.random(in: 0..<10, using: &random) {
            case 0..<4: try RandomChanges.apply(on: honest.randomElement(using: &random)!.library, random: &random)
            case 4..<7:
                // What a hostile device can see: events the server holds (an honest device's outbox is not visible to it).
                let known = try honest.flatMap { try $0.library.serverHeldEvents() }
                var device = hostile.randomElement(using: &random)!
                try await device.attack(known: known, now: clock.read(), random: &random)
                hostile[hostile.firstIndex { $0.device == device.device }!] = device
            default:
                // Honest syncs never fail, whatever the hostile devices pushed.
                try await honest.randomElement(using: &random)!.engine.sync()
            }
        }
        for _ in 0..<2 { for device in honest { try await device.engine.sync() } }

        let reference = honest[0].library
        let views = try Device.dump(reference)
        let quarantine = try reference.quarantine()
        let objects = try Device.createdObjects(reference)
        for device in honest.dropFirst() {
            let library = device.library
            #expect(try Device.dump(library) == views, "schedule \(schedule): \(library.device) has the same views")
            #expect(try library.quarantine() == quarantine, "schedule \(schedule): \(library.device) has the same quarantine")
            for object in objects {
                #expect(
                    try TrustTests.history(library, object) == TrustTests.history(reference, object),
                    "schedule \(schedule): \(library.device) tells the same history of \(object)")
            }
        }
        for device in honest {
            #expect(try device.library.verifyChain().isIntact)
            #expect(try device.library.verifyViews().isIntact, "schedule \(schedule): incremental views equal a refold")
        }
    }
}

extension PhotoLibrary {
    /// Events of the log the server holds (for hostile devices to copy and mutate).
    func serverHeldEvents() throws -> [Event] {
        try readDatabase { db in
            try db.rows(
                "SELECT \(EventLog.columns) FROM events WHERE server_seq IS NOT NULL ORDER BY local_seq LIMIT 300", [], EventLog.decode
            ).map(\.event)
        }
    }
}

/// A device that pushes what it likes, as a damaged or hostile client would, with its token's
/// scope: the server decides what it stores.
struct HostileDevice {
    let device: DeviceID
    let token: String
    let wire: InProcessTransport
    var sequence: Int64 = 0

    init(device: DeviceID, token: String, wire: InProcessTransport) {
        self.device = device
        self.token = token
        self.wire = wire
    }

    /// Pushes a batch of one to four hostile events.
    mutating func attack(known: [Event], now: UInt64, random: inout SeededRandomNumberGenerator) async throws {
        var batch: [Event] = []
        for _ in 0..<Int.random(in: 1...4, using: &random) {
            sequence += 1
            batch.append(make(known: known, now: now, random: &random))
        }
        let body = PushRequest(device: device, events: batch).encoded()
        let response = try await wire.send(
            HTTPRequest(
                method: .post, url: URL(string: "http://sim.invalid/v1/libraries/family/events")!,
                headers: ["Authorization": "Bearer \(token)", "Content-Type": "application/json"], body: .bytes(body)))
        if response.status == 200, let answer = try? PushResponse.decode(response.body.bytes) {
            sequence = answer.lastDeviceSequence
        } else {
            sequence -= Int64(batch.count)
        }
    }

    private func make(known: [Event], now: UInt64, random: inout SeededRandomNumberGenerator) -> Event {
        let stamp = HLCTimestamp(
            milliseconds: now - UInt64.random(in: 0...5_000, using: &random), counter: UInt16.random(in: 0...9, using: &random))
        let template = known.randomElement(using: &random)
        var event = Event(
            id: UUID(), device: device, deviceSequence: sequence, timestamp: stamp, changeBlock: UUID(),
            object: template?.object ?? UUID(), type: template?.type ?? EventType.assetCreated.rawValue,
            schemaVersion: template?.schemaVersion ?? 2, payload: template?.payload ?? [])
        switch Int.random(in: 0..<9, using: &random) {
        case 0:
            // Random bytes under a random type.
            event.type = EventType.allCases.randomElement(using: &random)!.rawValue
            event.payload = (0..<Int.random(in: 0...40, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
        case 1:
            // A copy with bytes flipped.
            for _ in 0..<Int.random(in: 1...3, using: &random) where !event.payload.isEmpty {
                event.payload[Int.random(in: 0..<event.payload.count, using: &random)] ^= UInt8.random(in: 1...255, using: &random)
            }
        case 2:
            // Truncated.
            event.payload = Array(event.payload.prefix(Int.random(in: 0...max(0, event.payload.count - 1), using: &random)))
        case 3:
            // Replayed as it is (another device's event: the server refuses it as not this device's).
            if let template { event = template }
        case 4:
            // A version from the future, or an unknown type.
            if Bool.random(using: &random) { event.schemaVersion = 7 } else { event.type = "asset.sparkled" }
        case 5:
            // Bound to another library.
            event.library = UUID()
        case 6:
            // A valid change of another device's asset or album, with a claim it cannot have.
            let claims = CausalClaims(overwritten: [.isFavorite: WriterStamp(hlc: Int64(stamp.rawValue) + 1, device: "honest-0")])
            event.type = EventType.assetChanged.rawValue
            event.payload = ChangeEvent.assetChanged(.init(isFavorite: Bool.random(using: &random))).encoded(
                claims: Bool.random(using: &random) ? claims : CausalClaims())
        case 7:
            // A creation aimed at an object that exists (a second creation, or the other kind).
            event.type = Bool.random(using: &random) ? EventType.assetCreated.rawValue : EventType.albumCreated.rawValue
            event.payload =
                event.type == EventType.assetCreated.rawValue
                ? assetCreationPayload(favorite: true) : ChangeEvent.albumCreated(title: "Mine", subtype: 2).encoded()
        default:
            // A membership change naming an album as an asset, and a merge into an asset.
            if Bool.random(using: &random) {
                event.type = EventType.albumMembersChanged.rawValue
                event.payload = ChangeEvent.albumMembersChanged(
                    operation: .add, entries: [.init(asset: event.object, causalLength: 1, position: "V")]
                ).encoded()
            } else {
                event.type = EventType.albumMerged.rawValue
                event.payload = ChangeEvent.albumMerged(winner: known.randomElement(using: &random)?.object ?? UUID()).encoded()
            }
        }
        return event
    }
}
