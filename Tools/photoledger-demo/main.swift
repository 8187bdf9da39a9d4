import Foundation
import LedgerStore

// The demo of what PhotoLedger can do today: two devices append change blocks to their
// append-only logs, one log is merged into the other idempotently, and the hash chain proves
// the history untouched — then a tampered copy is caught.
let folder = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
    .appendingPathComponent("photoledger-demo-\(Int(Date().timeIntervalSince1970))")
do {
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    print("PhotoLedger demo — files in \(folder.path)\n")
    let ids = UUIDv7Generator()
    func library(_ name: String) throws -> DatabaseQueue {
        let queue = try DatabaseQueue(path: folder.appendingPathComponent("\(name).sqlite").path)
        try queue.writeWithoutTransaction { try Migrator.library().migrate($0) }
        return queue
    }
    func block(_ device: DeviceID, _ clock: HybridLogicalClock, in queue: DatabaseQueue, _ changes: [(String, String)]) throws -> [Event] {
        try queue.write { db in
            let log = EventLog(db)
            var sequence = try log.lastDeviceSequence(for: device)
            let changeBlock = ids.next()
            let events = changes.map { type, text -> Event in
                sequence += 1
                return Event(id: ids.next(), device: device, deviceSequence: sequence, timestamp: clock.now(), changeBlock: changeBlock,
                             object: changeBlock, type: type, schemaVersion: 1, payload: Array(text.utf8))
            }
            try log.append(events)
            return events
        }
    }
    let anna = try library("anna-phone"), ben = try library("ben-tablet")
    let annaClock = HybridLogicalClock(), benClock = HybridLogicalClock()
    let annaEvents = try block("anna-phone", annaClock, in: anna, [("asset.created", "IMG_0001"), ("album.created", "Trip")])
        + block("anna-phone", annaClock, in: anna, [("album.assetsInserted", "IMG_0001 → Trip at 0")])
    _ = try block("ben-tablet", benClock, in: ben, [("asset.created", "IMG_0002"), ("album.created", "Trip")])
    // Deliver Anna's events to Ben twice: the second delivery is a no-op.
    let first = try ben.write { try EventLog($0).append(annaEvents) }
    let second = try ben.write { try EventLog($0).append(annaEvents) }
    print("Ben received \(first.filter { $0 != .duplicate }.count) events; redelivery added \(second.filter { $0 != .duplicate }.count)\n")
    print("Ben's log (local order):")
    try ben.read { db in
        try EventLog(db).forEach { stored in
            let e = stored.event
            print("  #\(stored.localSequence)  \(e.timestamp)  \(e.device.rawValue.padding(toLength: 10, withPad: " ", startingAt: 0))  "
                + "\(e.type.padding(toLength: 22, withPad: " ", startingAt: 0)) \(String(decoding: e.payload, as: UTF8.self))")
        }
        print("\nverify: \(try EventLog(db).verify())")
    }
    try ben.writeWithoutTransaction { db in
        try db.execute("DROP TRIGGER events_are_never_changed")
        try db.execute("UPDATE events SET payload = CAST('IMG_9999' AS BLOB) WHERE local_seq = 1")
    }
    print("after changing one payload with plain SQL:\nverify: \(try ben.read { try EventLog($0).verify() })")
} catch {
    FileHandle.standardError.write(Data("photoledger-demo: \(error)\n".utf8))
    exit(1)
}
