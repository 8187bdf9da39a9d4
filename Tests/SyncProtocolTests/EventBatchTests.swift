import Foundation
import LedgerCore
import SyncProtocol
import Testing

@Suite("Binary push batches")
struct EventBatchTests {
    @Test("a batch reads back as the JSON push of the same events, with each content hash", arguments: [0, 1, 300])
    func roundTrip(count: Int) throws {
        let events = sampleEvents(count)
        let batch = EventBatch.encode(device: "anna-phone", events: events)
        let received = try EventBatch.decode(batch)
        let json = try ReceivedPush.decode(PushRequest(device: "anna-phone", events: events).encoded())
        #expect(received == json)
        #expect(received.events.allSatisfy { if case .valid(let wire) = $0 { wire.hasValidHash } else { false } })
        if count == 300 { #expect(batch.count * 2 < PushRequest(device: "anna-phone", events: events).encoded().count) }
    }

    @Test("an event with an invalid envelope field is answered alone; a damaged batch is refused, naming the place")
    func damage() throws {
        var events = sampleEvents(2)
        events[1].type = "not printable \u{1}"
        let received = try EventBatch.decode(EventBatch.encode(device: "anna-phone", events: events))
        guard case .invalid(let id, 2, let field, _) = received.events[1] else {
            Issue.record("the second event should be invalid: \(received.events[1])")
            return
        }
        #expect(id == events[1].id && field == "events[1].type")

        let good = EventBatch.encode(device: "anna-phone", events: sampleEvents(1))
        func failure(_ bytes: [UInt8]) -> String {
            do {
                _ = try EventBatch.decode(bytes)
                return "decoded"
            } catch {
                return "\(error)"
            }
        }
        #expect(failure(Array("PLEP".utf8) + good.dropFirst(4)).contains("does not start with 'PLEB'"))
        #expect(failure(Array(good.prefix(4)) + [2] + good.dropFirst(5)).contains("format version 2 is not supported"))
        #expect(failure(good + [0]).contains("1 byte follows the last event"))
        #expect(failure(Array(good.dropLast(3))).contains("events[0]"))
        var badDevice = ByteWriter()
        badDevice.write(raw: Array("PLEB".utf8))
        badDevice.write(byte: 1)
        badDevice.write(bytes: Array("bad name!".utf8))
        badDevice.write(varint: 0)
        #expect(failure(badDevice.bytes).contains("device"))
    }
}
