import Foundation
import LedgerCore
import LedgerStore
@_exported import TestSupportKit

/// Makes events for tests: fixed clock, seeded identifiers.
struct EventFactory {
    let device: DeviceID
    let ids: UUIDv7Generator
    var sequence: Int64 = 0
    var milliseconds: UInt64 = 1_764_483_790_000

    init(device: DeviceID = "test-device", seed: UInt64 = 1) {
        self.device = device
        self.ids = UUIDv7Generator(clock: { 1_764_483_790_000 }, random: SeededRandomNumberGenerator(seed: seed))
    }

    mutating func make(object: UUID? = nil, type: String = "test.event", payload: [UInt8]? = nil, block: UUID? = nil) -> Event {
        sequence += 1
        milliseconds += 1
        return Event(
            id: ids.next(), device: device, deviceSequence: sequence, timestamp: HLCTimestamp(milliseconds: milliseconds, counter: 0),
            changeBlock: block ?? ids.next(), object: object ?? ids.next(), type: type, schemaVersion: 1,
            payload: payload ?? Array("payload \(sequence)".utf8))
    }

    mutating func make(_ count: Int, object: UUID? = nil) -> [Event] {
        (0..<count).map { _ in make(object: object) }
    }
}

/// A migrated library database in a temporary directory.
func makeLibraryQueue(_ directory: TemporaryDirectory, name: String = "library.sqlite") throws -> DatabaseQueue {
    let queue = try DatabaseQueue(path: directory.path(name))
    try queue.writeWithoutTransaction { try Migrator.library().migrate($0) }
    return queue
}

/// The path of an executable built beside the test binary.
func builtExecutable(_ name: String) throws -> URL {
    let testBinary = URL(fileURLWithPath: try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
    var directory = testBinary.deletingLastPathComponent()
    while directory.path != "/" {
        let candidate = directory.appendingPathComponent(name)
        if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        directory = directory.deletingLastPathComponent()
    }
    throw StoreUsageError("cannot find the built executable \(name) near \(testBinary.path); run `swift build` first")
}
