import Foundation
import LedgerCore
import LedgerStore
import Testing

@Suite("Event log")
struct EventLogTests {
    @Test("fixed-width integers are written big-endian, as canonical bytes have them, and read back")
    func fixedWidthIntegers() throws {
        var writer = ByteWriter()
        writer.write(fixed: 0x0102_0304_0506_0708)
        writer.write(fixed: UInt64.max)
        writer.write(double: -1.5)
        #expect(writer.bytes.prefix(16) == [1, 2, 3, 4, 5, 6, 7, 8, 255, 255, 255, 255, 255, 255, 255, 255])
        #expect(writer.bytes.suffix(8) == [0xBF, 0xF8, 0, 0, 0, 0, 0, 0])
        var reader = ByteReader(writer.bytes)
        #expect(try reader.readFixed() == 0x0102_0304_0506_0708)
        #expect(try reader.readFixed() == UInt64.max)
        #expect(try reader.readDouble() == -1.5)
        #expect(reader.isAtEnd)
    }

    @Test("length-prefixed bytes are lent where they lie, and a length past the end is an error that moves nothing")
    func lentBytes() throws {
        var writer = ByteWriter()
        writer.write(string: "anna-phone")
        writer.write(bytes: [])
        writer.write(byte: 7)
        var reader = ByteReader(writer.bytes)
        #expect(try reader.withBytes { Array($0) } == Array("anna-phone".utf8))
        #expect(try reader.withBytes { $0.count } == 0)
        #expect(try reader.readByte() == 7)
        #expect(reader.isAtEnd)
        var short = ByteReader([5, 1, 2])
        #expect(throws: DecodingError.self) { try short.withBytes { _ in Issue.record("lent bytes past the end") } }
        #expect(short.offset == 1, "only the length was read")
    }

    @Test("a digest finished into a reused buffer equals a fresh one, and the context starts again")
    func digestIntoBuffer() {
        var digest = SHA256()
        var buffer: [UInt8] = []
        digest.update(Array("first".utf8))
        digest.finalizeAndReset(into: &buffer)
        #expect(buffer == SHA256.hash(Array("first".utf8)), "an empty buffer is made 32 bytes long")
        digest.update(Array("second".utf8))
        digest.finalizeAndReset(into: &buffer)
        #expect(buffer == SHA256.hash(Array("second".utf8)))
    }

    @Test("a device name checked as bytes is accepted exactly when it is as text")
    func deviceNameBytes() {
        let names = [
            "", "a", "anna-phone", "ben_laptop.2", String(repeating: "x", count: 64), String(repeating: "x", count: 65), "anna phone",
            "café", "a/b", "ünïcode", "-", "tab\t", "NUL\u{0}",
        ]
        for name in names {
            let valid = Array(name.utf8).withUnsafeBytes { DeviceID.isValid(utf8: $0) }
            #expect(valid == (DeviceID.problem(with: name) == nil), "\(name)")
        }
        #expect([UInt8]([0xC3, 0x28]).withUnsafeBytes { DeviceID.isValid(utf8: $0) } == false, "bytes that are not UTF-8")
    }

    @Test("every envelope field survives the round trip")
    func roundTrip() throws {
        let directory = try TemporaryDirectory()
        let queue = try makeLibraryQueue(directory)
        let event = Event(
            id: UUIDv7Generator().next(), device: "anna-phone", deviceSequence: 1,
            timestamp: HLCTimestamp(milliseconds: 1_764_483_790_123, counter: 7), changeBlock: UUID(), object: UUID(),
            type: "album.renamed", schemaVersion: 3, payload: [0, 1, 2, 255, 0])
        let outcome = try queue.write { try EventLog($0).append(event) }
        #expect(outcome == .appended(localSequence: 1))
        let stored = try #require(try queue.read { try EventLog($0).events() }.first)
        #expect(stored.event == event)
        #expect(stored.localSequence == 1)
        #expect(stored.serverSequence == nil)
        #expect(stored.hash.count == 32)
        #expect(try queue.read { try EventLog($0).event(withID: event.id) } == stored)

        try queue.write { try EventLog($0).setServerSequence(42, for: event.id) }
        #expect(try queue.read { try EventLog($0).events() }.first?.serverSequence == 42)
    }

    @Test("a seal keeps nonces of every length (short ones inline), compares and hashes by its bytes, and sealed envelopes read back")
    func sealNonces() throws {
        for length in [0, 1, 23, 24, 25, 40, 64, 65] {
            let nonce = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 5) }
            var seal = Event.Seal(keyID: 9, nonce: nonce)
            #expect(seal.nonce == nonce && seal.nonceCount == length, "\(length) bytes")
            #expect(seal.withNonce { Array($0) } == nonce)
            #expect(nonce.withUnsafeBytes { Event.Seal(keyID: 9, nonce: $0) } == seal)
            #expect(Set([seal, Event.Seal(keyID: 9, nonce: nonce)]).count == 1, "equal seals hash alike")
            if length > 0 {
                #expect(seal != Event.Seal(keyID: 9, nonce: nonce.dropLast() + [nonce.last! ^ 1]), "one byte differs")
                #expect(seal != Event.Seal(keyID: 9, nonce: Array(nonce.dropLast())), "one byte fewer")
            }
            #expect(seal != Event.Seal(keyID: 10, nonce: nonce))
            // A nonce replaced by a longer or shorter one keeps nothing of the old.
            seal.nonce = [7]
            #expect(seal == Event.Seal(keyID: 9, nonce: [7]))
            seal.nonce = nonce
            #expect(seal == Event.Seal(keyID: 9, nonce: nonce))

            let event = Event(
                id: UUIDv7Generator().next(), library: UUID(), device: "anna-phone", deviceSequence: 3,
                timestamp: HLCTimestamp(milliseconds: 1_764_483_790_123, counter: 1), changeBlock: UUID(), object: UUID(),
                type: "asset.created", schemaVersion: 1, seal: Event.Seal(keyID: 9, nonce: nonce), payload: [1, 2, 3])
            #expect(event.withEnvelopeBytes { Array($0) } == event.envelopeBytes)
            var reader = ByteReader(event.canonicalBytes)
            if length > Event.Seal.maximumNonceLength {
                #expect(throws: DecodingError.self, "a nonce over 64 bytes") { try Event.readCanonical(from: &reader) }
                #expect(event.envelopeProblem?.field == "nonce")
            } else {
                let read = try Event.readCanonical(from: &reader)
                #expect(read == event && read.canonicalBytes == event.canonicalBytes)
            }
        }
        let plain = Event(
            id: UUIDv7Generator().next(), device: "ben", deviceSequence: 1, timestamp: HLCTimestamp(milliseconds: 1, counter: 0),
            changeBlock: UUID(), object: UUID(), type: "album.renamed", schemaVersion: 2, payload: [], format: .v1)
        #expect(plain.withEnvelopeBytes { Array($0) } == plain.envelopeBytes)
    }

    @Test("sealed events are stored and read back with their nonce, in a batch and one at a time")
    func sealedRoundTrip() throws {
        let directory = try TemporaryDirectory()
        let queue = try makeLibraryQueue(directory)
        let events = [24, 40].enumerated().map { index, length in
            Event(
                id: UUIDv7Generator().next(), library: UUID(), device: "anna-phone", deviceSequence: Int64(index + 1),
                timestamp: HLCTimestamp(milliseconds: 1_764_483_790_123, counter: UInt16(index)), changeBlock: UUID(), object: UUID(),
                type: "asset.created", schemaVersion: 1,
                seal: Event.Seal(keyID: 5, nonce: [UInt8](repeating: UInt8(length), count: length)),
                payload: [9, 9])
        }
        try queue.write { db in _ = try EventLog(db).appendLinking(events) }
        let single = Event(
            id: UUIDv7Generator().next(), library: UUID(), device: "ben", deviceSequence: 1,
            timestamp: HLCTimestamp(milliseconds: 1_764_483_790_200, counter: 0), changeBlock: UUID(), object: UUID(),
            type: "asset.created", schemaVersion: 1, seal: Event.Seal(keyID: 6, nonce: [UInt8](repeating: 3, count: 24)), payload: [1])
        try queue.write { _ = try EventLog($0).append(single) }
        #expect(try queue.read { try EventLog($0).events() }.map(\.event) == events + [single])
        #expect(try queue.read { try EventLog($0).verify() } == .intact(count: 3))
    }

    @Test("appending an event id that is already present is a no-op")
    func idempotentAppend() throws {
        let directory = try TemporaryDirectory()
        let queue = try makeLibraryQueue(directory)
        var factory = EventFactory()
        let events = factory.make(5)
        try queue.write { try EventLog($0).append(events) }
        let headBefore = try queue.read { try EventLog($0).lastHash() }
        let outcomes = try queue.write { try EventLog($0).append(Array(events[2...]) + [factory.make()]) }
        #expect(outcomes.prefix(3).allSatisfy { $0 == .duplicate })
        #expect(outcomes.last == .appended(localSequence: 6))
        #expect(try queue.read { try EventLog($0).count() } == 6)
        #expect(try queue.read { try EventLog($0).lastHash() } != headBefore)
        #expect(try queue.read { try EventLog($0).verify() } == .intact(count: 6))
    }

    @Test("a batch of new events is stored exactly as one event at a time would store it")
    func batchMatchesOneByOne() throws {
        let directory = try TemporaryDirectory()
        let batched = try makeLibraryQueue(directory, name: "batched")
        let single = try makeLibraryQueue(directory, name: "single")
        var factory = EventFactory()
        let first = factory.make(3)
        // 250 events: two statements of a hundred rows and fifty single rows, with server sequences.
        var events = factory.make(249)
        events.insert(factory.make(payload: []), at: 120)
        let sequences = (1...Int64(events.count)).map { $0 * 10 }
        try batched.write { try EventLog($0).append(first) }
        let result = try batched.write { try EventLog($0).appendLinking(events, serverSequences: sequences) }
        #expect(result.outcomes == (4...253).map { .appended(localSequence: Int64($0)) })
        try single.write { db in
            for event in first { try EventLog(db).append(event) }
            for (event, sequence) in zip(events, sequences) {
                try EventLog(db).append([event], serverSequences: [sequence])
            }
        }
        let stored = try batched.read { try EventLog($0).events(limit: 1000) }
        #expect(stored == (try single.read { try EventLog($0).events(limit: 1000) }))
        #expect(stored[123].event.payload == [] && stored[3].serverSequence == 10 && stored[0].serverSequence == nil)
        // Each link runs from the chain value before the event to the one stored with it.
        for (index, link) in result.links.enumerated() {
            #expect(link == EventLog.ChainLink(previous: stored[index + 2].hash, hash: stored[index + 3].hash))
        }
        #expect(try batched.read { try EventLog($0).verify() } == .intact(count: 253))
        #expect(try batched.read { try EventLog($0).lastTimestamp() } == events.map(\.timestamp).max())
    }

    @Test("chain values computed ahead are used only when linked after the log's head")
    func precomputedChain() throws {
        let directory = try TemporaryDirectory()
        var factory = EventFactory()
        let first = factory.make(2)
        let events = factory.make(150)
        var stored: [[StoredEvent]] = []
        for (index, head) in [nil, HashChain.origin, [UInt8](repeating: 9, count: 32)].enumerated() {
            let queue = try makeLibraryQueue(directory, name: "library-\(index)")
            try queue.write { try EventLog($0).append(first) }
            let actualHead = try queue.read { try EventLog($0).lastHash() }
            // nil: the right head; the origin and a made-up value: heads this log does not end with.
            let precomputed = EventLog.PrecomputedChain(linking: events, after: head ?? actualHead)
            let result = try queue.write { try EventLog($0).appendLinking(events, precomputed: precomputed) }
            #expect(result.links.first??.previous == actualHead)
            #expect((result.links.map { $0?.hash } == precomputed.hashes) == (head == nil))
            #expect(try queue.read { try EventLog($0).verify() } == .intact(count: 152))
            stored.append(try queue.read { try EventLog($0).events(limit: 1000) })
        }
        #expect(stored[0] == stored[1] && stored[1] == stored[2])
    }

    @Test("a batch with an event already stored, or repeated within it, skips only the duplicates")
    func batchWithDuplicates() throws {
        let directory = try TemporaryDirectory()
        let queue = try makeLibraryQueue(directory)
        var factory = EventFactory()
        let events = factory.make(300)
        try queue.write { try EventLog($0).append([events[150]]) }
        // events[150] is stored already, and events[10] comes twice.
        let batch = Array(events[0..<11]) + [events[10]] + Array(events[11...])
        let result = try queue.write { try EventLog($0).appendLinking(batch, serverSequences: (1...Int64(batch.count)).map { $0 }) }
        #expect(result.outcomes.filter { $0 == .duplicate }.count == 2)
        #expect(result.outcomes[11] == .duplicate && result.outcomes[151] == .duplicate && result.links[11] == nil)
        #expect(result.outcomes.last == .appended(localSequence: 300))
        #expect(try queue.read { try EventLog($0).count() } == 300)
        #expect(try queue.read { try EventLog($0).verify() } == .intact(count: 300))
        // The event stored first kept its (absent) server sequence; the others have theirs.
        #expect(try queue.read { try EventLog($0).event(withID: events[150].id)?.serverSequence } == nil)
        #expect(try queue.read { try EventLog($0).event(withID: events[299].id)?.serverSequence } == 301)
    }

    @Test("a batch that breaks another constraint stores nothing")
    func batchConstraintFailure() throws {
        let directory = try TemporaryDirectory()
        let queue = try makeLibraryQueue(directory)
        var factory = EventFactory()
        var events = factory.make(200)
        events[150].deviceSequence = events[20].deviceSequence
        #expect(throws: DatabaseError.self) { try queue.write { try EventLog($0).append(events) } }
        #expect(try queue.read { try EventLog($0).count() } == 0)
    }

    @Test("the hash chain verifies, and a byte changed with plain SQL is named")
    func tamperedPayload() throws {
        let directory = try TemporaryDirectory()
        let queue = try makeLibraryQueue(directory)
        var factory = EventFactory()
        let events = factory.make(2500)
        try queue.write { try EventLog($0).append(events) }
        #expect(try queue.read { try EventLog($0).verify() } == .intact(count: 2500))

        try queue.writeWithoutTransaction { db in
            try db.execute("DROP TRIGGER events_are_never_changed")
            try db.execute("UPDATE events SET payload = CAST('pAyload 1700' AS BLOB) WHERE local_seq = 1700")
        }
        let result = try queue.read { try EventLog($0).verify() }
        #expect(result == .broken(EventLog.ChainBreak(localSequence: 1700, eventID: events[1699].id, verifiedCount: 1699)))
        if case .broken(let broken) = result { #expect(broken.description.contains(events[1699].id.uuidString)) }
    }

    @Test(
        "any envelope column changed with plain SQL breaks the chain at that event, or the schema refuses the change",
        arguments: [
            "schema_version = -1", "schema_version = schema_version + 1", "format = 9", "format = 3 - format", "key_id = -1",
            "key_id = 4294967296", "library = x'00'", "library = randomblob(16)", "nonce = x'0102'", "device_id = 'anna-tablet'",
            "type = 'asset.deleted'", "hlc = hlc + 1", "device_seq = -1", "change_block = x'0011'", "object_id = randomblob(16)",
            "event_id = randomblob(16)", "payload = NULL",
        ])
    func tamperedEnvelope(change: String) throws {
        let directory = try TemporaryDirectory()
        let queue = try makeLibraryQueue(directory)
        var factory = EventFactory()
        let events = factory.make(20)
        try queue.write { try EventLog($0).append(events) }
        let refused = try queue.writeWithoutTransaction { db in
            try db.execute("DROP TRIGGER events_are_never_changed")
            do {
                try db.execute("UPDATE events SET \(change) WHERE local_seq = 12")
                return false
            } catch let error as DatabaseError {
                #expect(error.message.contains("constraint"), "\(change): \(error)")
                return true
            }
        }
        let result = try queue.read { try EventLog($0).verify() }
        if refused {
            #expect(result == .intact(count: 20), "\(change)")
            return
        }
        guard case .broken(let broken) = result else {
            Issue.record("\(change): the chain still verifies")
            return
        }
        #expect(broken.localSequence == 12 && broken.verifiedCount == 11, "\(change)")
    }

    @Test("a deleted row and reordered rows break the chain at the right event")
    func deletedAndReorderedRows() throws {
        let directory = try TemporaryDirectory()
        let queue = try makeLibraryQueue(directory)
        var factory = EventFactory()
        let events = factory.make(10)
        try queue.write { try EventLog($0).append(events) }
        try queue.writeWithoutTransaction { db in
            try db.execute("DROP TRIGGER events_are_never_deleted")
            try db.execute("DELETE FROM events WHERE local_seq = 4")
        }
        #expect(try queue.read { try EventLog($0).verify() } == .broken(.init(localSequence: 5, eventID: events[4].id, verifiedCount: 3)))

        let other = try makeLibraryQueue(directory, name: "other.sqlite")
        try other.write { try EventLog($0).append(events) }
        try other.writeWithoutTransaction { db in
            try db.execute("DROP TRIGGER events_are_never_changed")
            // Swap rows 7 and 8 (their hashes travel with them).
            try db.execute("UPDATE events SET local_seq = -7 WHERE local_seq = 7")
            try db.execute("UPDATE events SET local_seq = 7 WHERE local_seq = 8")
            try db.execute("UPDATE events SET local_seq = 8 WHERE local_seq = -7")
        }
        #expect(try other.read { try EventLog($0).verify() } == .broken(.init(localSequence: 7, eventID: events[7].id, verifiedCount: 6)))
    }

    @Test("the schema refuses to update or delete events, and the server sequence is set only once")
    func appendOnly() throws {
        let directory = try TemporaryDirectory()
        let queue = try makeLibraryQueue(directory)
        var factory = EventFactory()
        let event = factory.make()
        try queue.write { try EventLog($0).append(event) }
        let update = try #require(throws: DatabaseError.self) {
            try queue.write { try $0.execute("UPDATE events SET payload = x'00'", []) }
        }
        #expect(update.message.contains("append-only"))
        let delete = try #require(throws: DatabaseError.self) {
            try queue.write { try $0.execute("DELETE FROM events", []) }
        }
        #expect(delete.message.contains("cannot be deleted"))
        try queue.write { try EventLog($0).setServerSequence(1, for: event.id) }
        #expect(throws: DatabaseError.self) { try queue.write { try EventLog($0).setServerSequence(2, for: event.id) } }
        #expect(throws: StoreUsageError.self) { try queue.write { try EventLog($0).setServerSequence(3, for: UUID()) } }
    }

    @Test("events read by range in keyset pages, by object, by device, and pending")
    func readingPaths() throws {
        let directory = try TemporaryDirectory()
        let queue = try makeLibraryQueue(directory)
        var anna = EventFactory(device: "anna-phone", seed: 1)
        var ben = EventFactory(device: "ben-tablet", seed: 2)
        let album = UUID()
        let annaEvents = anna.make(30) + anna.make(5, object: album)
        let benEvents = ben.make(20) + ben.make(3, object: album)
        try queue.write { db in
            try EventLog(db).append(annaEvents)
            try EventLog(db).append(benEvents)
        }
        try queue.read { db in
            let log = EventLog(db)
            var pages: [[StoredEvent]] = []
            var cursor: Int64 = 0
            while case let page = try log.events(after: cursor, limit: 10), !page.isEmpty {
                pages.append(page)
                cursor = page.last!.localSequence
            }
            #expect(pages.map(\.count) == [10, 10, 10, 10, 10, 8])
            #expect(pages.joined().map(\.event) == annaEvents + benEvents)
            #expect(try log.events(forObject: album).map(\.event) == Array(annaEvents.suffix(5)) + Array(benEvents.suffix(3)))
            #expect(try log.events(fromDevice: "ben-tablet", afterDeviceSequence: 18).map(\.event.deviceSequence) == [19, 20, 21, 22, 23])
            #expect(try log.lastDeviceSequence(for: "anna-phone") == 35)
            #expect(try log.pendingCount() == 58)
        }
        try queue.write { db in
            for (index, event) in annaEvents.enumerated() { try EventLog(db).setServerSequence(Int64(index + 1), for: event.id) }
        }
        #expect(try queue.read { try EventLog($0).pendingEvents().map(\.event) } == benEvents)
    }

    @Test("UUIDv7 identifiers are time-ordered, even within one millisecond and when the clock steps back")
    func uuidV7Ordering() throws {
        let times = LockedTimes([1000, 1000, 1000, 999, 1001, 5])
        let generator = UUIDv7Generator(clock: { times.next() }, random: SeededRandomNumberGenerator(seed: 3))
        let ids = (0..<6).map { _ in generator.next() }
        #expect(ids.allSatisfy { $0.version == 7 })
        #expect(ids.map(\.bytes) == ids.map(\.bytes).sorted { $0.lexicographicallyPrecedes($1) })
        #expect(Set(ids).count == 6)
        #expect(ids[0].unixMilliseconds == 1000 && ids[4].unixMilliseconds == 1001)
    }

    @Test("a UUID's lowercase text is Foundation's uuidString in lowercase")
    func uuidLowercaseText() throws {
        var random = SeededRandomNumberGenerator(seed: 11)
        let ids =
            (0..<500).map { _ in UUID(uuid: withUnsafeBytes(of: (random.next(), random.next())) { $0.load(as: uuid_t.self) }) }
            + [UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)), UUID(uuidString: "FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF")!]
        for id in ids { #expect(id.lowercaseString == id.uuidString.lowercased()) }
        #expect(ids[501].lowercaseString == "ffffffff-ffff-ffff-ffff-ffffffffffff")
    }

    @Test("UUIDs precede one another in the lexicographic order of their bytes")
    func uuidOrder() throws {
        var random = SeededRandomNumberGenerator(seed: 12)
        // Few distinct bytes, so that many pairs share a first word, or all but one byte.
        let ids = (0..<300).map { _ in UUID(bytes: (0..<16).map { _ in UInt8.random(in: 0...2, using: &random) * 0x7F })! }
        for a in ids.prefix(60) {
            for b in ids {
                #expect(a.precedes(b) == a.bytes.lexicographicallyPrecedes(b.bytes), "\(a) \(b)")
            }
        }
    }

    @Test("random UUIDs are version 4 of RFC 9562's variant, and distinct")
    func randomUUIDs() throws {
        let ids = (0..<1000).map { _ in UUID.random() }
        #expect(Set(ids).count == ids.count)
        for id in ids {
            #expect(id.version == 4, "\(id)")
            #expect(id.bytes[8] & 0xC0 == 0x80, "\(id)")
            #expect(UUID(uuidString: id.uuidString) == id)
        }
    }

    @Test("the hybrid logical clock stays monotonic when the physical clock goes backwards")
    func hlcMonotonic() throws {
        let times = LockedTimes([5000, 5000, 4000, 3000, 6000, 6000])
        let clock = HybridLogicalClock(physicalClock: { times.next() })
        let stamps = (0..<6).map { _ in clock.now() }
        #expect(zip(stamps, stamps.dropFirst()).allSatisfy { $0 < $1 })
        #expect(stamps[0] == HLCTimestamp(milliseconds: 5000, counter: 0))
        #expect(stamps[3] == HLCTimestamp(milliseconds: 5000, counter: 3))
        #expect(stamps[4] == HLCTimestamp(milliseconds: 6000, counter: 0))
    }

    @Test("received stamps advance the clock; stamps too far ahead are refused with a clear error")
    func hlcReceive() throws {
        let clock = HybridLogicalClock(physicalClock: { 10_000 }, maximumDriftMilliseconds: 60_000)
        try clock.receive(HLCTimestamp(milliseconds: 50_000, counter: 4))
        #expect(clock.now() == HLCTimestamp(milliseconds: 50_000, counter: 5))
        let error = try #require(throws: ClockDriftError.self) {
            try clock.receive(HLCTimestamp(milliseconds: 10_000 + 3_600_000, counter: 0))
        }
        #expect(error.description.contains("3600 s ahead"))
        #expect(clock.lastTimestamp == HLCTimestamp(milliseconds: 50_000, counter: 5))
    }

    @Test("the clock is persisted with the log and monotonic across restarts")
    func hlcPersisted() throws {
        let directory = try TemporaryDirectory()
        var factory = EventFactory()
        var event = factory.make()
        event.timestamp = HLCTimestamp(milliseconds: 9_000_000, counter: 2)
        do {
            let queue = try makeLibraryQueue(directory)
            try queue.write { try EventLog($0).append(event) }
        }
        let reopened = try makeLibraryQueue(directory)
        let last = try reopened.read { try EventLog($0).lastTimestamp() }
        #expect(last == event.timestamp)
        // The physical clock now reads earlier than before the restart.
        let clock = HybridLogicalClock(physicalClock: { 1_000 }, last: last)
        #expect(clock.now() == HLCTimestamp(milliseconds: 9_000_000, counter: 3))
    }

    @Test("binary coding round-trips every kind of value and reports truncation")
    func binaryCoding() throws {
        var writer = ByteWriter()
        writer.write(varint: 300)
        writer.write(int: -5)
        writer.write(string: "Ferien 🏖")
        writer.write(bytes: [9, 8, 7])
        writer.write(double: 47.3769)
        writer.write(bool: true)
        let id = UUID()
        writer.write(uuid: id)
        var reader = ByteReader(writer.bytes)
        #expect(try reader.readVarint() == 300)
        #expect(try reader.readInt() == -5)
        #expect(try reader.readString() == "Ferien 🏖")
        #expect(try reader.readBytes() == [9, 8, 7])
        #expect(try reader.readDouble() == 47.3769)
        #expect(try reader.readBool())
        #expect(try reader.readUUID() == id)
        #expect(reader.isAtEnd)
        var truncated = ByteReader(Array(writer.bytes.prefix(5)))
        _ = try truncated.readVarint()
        _ = try truncated.readInt()
        #expect(throws: DecodingError.self) { try truncated.readString() }
    }

    @Test("a varint reads up to 2^64-1 and refuses bits beyond 64, which would otherwise be cut off")
    func varintBounds() throws {
        let nines = [UInt8](repeating: 0xFF, count: 9)
        var largest = ByteReader(nines + [0x01])
        #expect(try largest.readVarint() == UInt64.max)
        var writer = ByteWriter()
        writer.write(varint: .max)
        #expect(writer.bytes == nines + [0x01])
        for tenth: UInt8 in [0x02, 0x7F, 0x81] {
            var reader = ByteReader(nines + [tenth, 0x00])
            #expect(throws: DecodingError("a varint beyond 64 bits", offset: 9)) { try reader.readVarint() }
        }
    }
}

/// A scripted physical clock.
final class LockedTimes: @unchecked Sendable {
    // Safe to share: `values` and `index` are touched only under `lock`.
    private let lock = NSLock()
    private let values: [UInt64]
    private var index = 0

    init(_ values: [UInt64]) { self.values = values }

    func next() -> UInt64 {
        lock.withLock {
            defer { index += 1 }
            return values[min(index, values.count - 1)]
        }
    }
}
