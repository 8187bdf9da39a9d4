import Foundation
import LedgerCore
import LedgerStore

// ledger-crash-writer DB_PATH DEVICE SEED
// Appends events in small change blocks, forever, until it is killed. Used by the crash-safety
// tests, which SIGKILL it at random moments and check the log after every kill.
let arguments = CommandLine.arguments
guard arguments.count == 4, let seed = UInt64(arguments[3]) else {
    FileHandle.standardError.write(Data("usage: ledger-crash-writer DB_PATH DEVICE SEED\n".utf8))
    exit(64)
}
do {
    let queue = try DatabaseQueue(path: arguments[1])
    try queue.writeWithoutTransaction { try Migrator.library().migrate($0) }
    let device = DeviceID(arguments[2])
    var random = SeededRandomNumberGenerator(seed: seed)
    let ids = UUIDv7Generator(clock: { WallClock.milliseconds() }, random: SeededRandomNumberGenerator(seed: seed ^ 0xABCDEF))
    let clock = HybridLogicalClock(last: try queue.read { try EventLog($0).lastTimestamp() })
    var announced = false
    while true {
        let count = Int.random(in: 1...50, using: &random)
        let size = Int.random(in: 0...4000, using: &random)
        try queue.write { db in
            let log = EventLog(db)
            var sequence = try log.lastDeviceSequence(for: device)
            let block = ids.next()
            let events = (0..<count).map { _ -> Event in
                sequence += 1
                return Event(
                    id: ids.next(), device: device, deviceSequence: sequence, timestamp: clock.now(), changeBlock: block,
                    object: block, type: "test.blob", schemaVersion: 1,
                    payload: [UInt8](repeating: UInt8(truncatingIfNeeded: sequence), count: size))
            }
            try log.append(events)
        }
        if !announced {
            // Tell the parent the first block committed, so kills land mid-stream.
            print("ready")
            fflush(nil)
            announced = true
        }
    }
} catch {
    FileHandle.standardError.write(Data("ledger-crash-writer: \(error)\n".utf8))
    exit(1)
}
