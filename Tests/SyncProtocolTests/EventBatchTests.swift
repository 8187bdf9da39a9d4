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

    @Test("a keyed batch reads back as the same push with its key changes; the plain and keyed forms refuse each other")
    func keyedRoundTrip() throws {
        let events = sampleEvents(3)
        let keys = [
            KeyChange(name: "asset/0193a5b2-7c00-7000-8000-000000000006", value: [1, 2, 3], createOnly: true),
            KeyChange(name: "asset/0193a5b2-7c00-7000-8000-000000000007", value: nil),
            KeyChange(name: "ring/ben", value: []),
        ]
        let keyed = EventBatch.encode(device: "anna-phone", keys: keys, events: events)
        let received = try EventBatch.decodeKeyed(keyed)
        #expect(received.keys == keys)
        #expect(received.events == (try EventBatch.decode(EventBatch.encode(device: "anna-phone", events: events))).events)
        // Without keys the plain form is written; each decoder reads only its own form.
        #expect(
            EventBatch.encode(device: "anna-phone", keys: [], events: events) == EventBatch.encode(device: "anna-phone", events: events))
        #expect(throws: WireFormatError.self) { try EventBatch.decode(keyed) }
        #expect(throws: WireFormatError.self) { try EventBatch.decodeKeyed(EventBatch.encode(device: "anna-phone", events: events)) }
        let empty = try EventBatch.decodeKeyed(EventBatch.encode(device: "anna-phone", keys: keys, events: []))
        #expect(empty.keys == keys && empty.events.isEmpty)
    }

    @Test("a damaged keyed batch is refused, naming the change: a cut anywhere, unknown flags, an invalid name, too many changes")
    func keyedDamage() throws {
        let keys = [KeyChange(name: "asset/0193a5b2-7c00-7000-8000-000000000006", value: [1, 2, 3])]
        let good = EventBatch.encode(device: "anna-phone", keys: keys, events: sampleEvents(1))
        func failure(_ bytes: [UInt8]) -> String {
            do {
                _ = try EventBatch.decodeKeyed(bytes)
                return "decoded"
            } catch {
                return "\(error)"
            }
        }
        for length in 0..<good.count { #expect(failure(Array(good.prefix(length))) != "decoded", "cut at \(length)") }
        // The header and device (16 bytes), the count (1), then the first change's flags.
        var flags = good
        flags[17] = 4
        #expect(failure(flags).contains("changes[0].flags"))
        var name = good
        name[19] = UInt8(ascii: "A")
        #expect(failure(name).contains("changes[0].name"))
        var many = ByteWriter()
        many.write(raw: Array("PLEK".utf8))
        many.write(byte: 1)
        many.write(bytes: Array("anna-phone".utf8))
        many.write(varint: UInt64(KeyStoreBody.maximumChanges + 1))
        for _ in 0...KeyStoreBody.maximumChanges {
            many.write(byte: 0)
            many.write(string: "ring/x")
        }
        many.write(varint: 0)
        #expect(failure(many.bytes).contains("must hold at most \(KeyStoreBody.maximumChanges) changes"))
        #expect(failure(good + [0]).contains("1 byte follows the last event"))
    }

    @Test("a push's answer about its keys lists the refused ones and reads back; a refusal that names no change pushed is an error")
    func pushedKeysAnswer() throws {
        let changes = [
            KeyChange(name: "asset/0193a5b2-7c00-7000-8000-000000000006", value: [1]),
            KeyChange(name: "ring/ben", value: [2]),
            KeyChange(name: "asset/0193a5b2-7c00-7000-8000-000000000007", value: nil),
        ]
        let full = KeyChangesResponse(
            results: [
                .init(name: changes[0].name, status: .stored), .init(name: "ring/ben", status: .forbidden, reason: "not yours"),
                .init(name: changes[2].name, status: .deleted),
            ], from: 4, through: 5)
        let answer = PushedKeyChanges(answering: full)
        #expect(answer.refused == [.init(index: 1, result: full.results[1])])
        let response = PushResponse(results: [], lastDeviceSequence: 0, keys: answer)
        let read = try PushResponse.decode(response.encoded())
        #expect(read == response)
        #expect(try read.keys?.response(to: changes) == full)
        #expect(try PushResponse.decode(PushResponse(results: [], lastDeviceSequence: 0).encoded()).keys == nil)
        #expect(throws: WireFormatError.self) { try answer.response(to: Array(changes.prefix(1))) }
        #expect(throws: WireFormatError.self) { try answer.response(to: [changes[0], changes[2], changes[1]]) }
        let twice = PushedKeyChanges(refused: answer.refused + answer.refused, from: 4, through: 5)
        #expect(throws: WireFormatError.self) { try twice.response(to: changes) }
        #expect(throws: WireFormatError.self) {
            try PushResponse.decode(
                Array(
                    #"{"results":[],"lastDeviceSeq":0,"keys":{"from":1,"through":1,"refused":[{"index":-1,"name":"a/b","status":"forbidden"}]}}"#
                        .utf8))
        }
    }
}
