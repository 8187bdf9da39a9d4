import Foundation
import LedgerCore
import SyncProtocol
import Testing

/// Events with every field set to a distinctive value, from a seeded generator.
func sampleEvents(_ count: Int, device: DeviceID = "anna-phone", seed: UInt64 = 1) -> [Event] {
    let ids = UUIDv7Generator(clock: { 1_764_483_790_000 }, random: SeededRandomNumberGenerator(seed: seed))
    var random = SeededRandomNumberGenerator(seed: seed &+ 99)
    return (0..<count).map { index in
        Event(
            id: ids.next(), device: device, deviceSequence: Int64(index + 1),
            timestamp: HLCTimestamp(milliseconds: 1_764_483_790_000 + UInt64(index), counter: UInt16(index % 7)),
            changeBlock: ids.next(), object: ids.next(), type: index % 2 == 0 ? "asset.created" : "album.renamed",
            schemaVersion: 1 + index % 3, payload: (0..<(index % 40)).map { _ in UInt8.random(in: 0...255, using: &random) })
    }
}

@Suite("Wire events")
struct WireEventTests {
    @Test("an event survives encode and decode with every field")
    func roundTrip() throws {
        for event in sampleEvents(50) {
            let wire = WireEvent(event, serverSequence: 42, chainHash: SHA256.hash([1, 2, 3]))
            var writer = JSONWriter()
            wire.write(to: &writer)
            let decoded = try JSONReader.read(writer.bytes) { try WireEvent.read(from: &$0) }
            #expect(decoded == wire)
            #expect(decoded.event == event)
            #expect(decoded.hasValidHash)
            #expect(decoded.serverSequence == 42)
        }
    }

    @Test("batch hashing gives the same content hashes as hashing one by one")
    func batchHashing() {
        let events = sampleEvents(20)
        #expect(WireEvent.hashing(events) == events.map { WireEvent($0) })
        let allValid = WireEvent.hashing(events).allSatisfy { $0.hasValidHash }
        #expect(allValid)
    }

    @Test("the clock stamp is a decimal string because it exceeds 2^53")
    func hlcAsString() throws {
        var event = sampleEvents(1)[0]
        event.timestamp = HLCTimestamp(rawValue: UInt64.max - 3)
        let json = try JSONValue.parse(PushRequest(device: "anna-phone", events: [event]).encoded())
        let wire = json["events"]?.arrayValue?.first
        #expect(wire?["hlc"]?.stringValue == String(UInt64.max - 3))
        #expect(wire?["hash"]?.stringValue == Hex.encode(event.contentHash))
        #expect(wire?["payload"]?.stringValue == Base64.encode(event.payload))
        #expect(wire?["deviceSeq"]?.int64Value == 1)
        #expect(wire?["id"]?.stringValue == event.id.uuidString)
        let back = try PushRequest.decode(PushRequest(device: "anna-phone", events: [event]).encoded())
        #expect(back.events[0].event == event)
    }

    @Test("a member of the wrong type is an error naming the field")
    func wrongType() throws {
        let text = #"{"device":"anna-phone","events":[{"id":"0193D2E0-0000-7000-8000-000000000001","deviceSeq":"one"}]}"#
        #expect(throws: WireFormatError(field: "events[0].deviceSeq", message: "expected a number")) {
            try ReceivedPush.decode(Array(text.utf8))
        }
        let badID = #"{"device":"anna-phone","events":[{"id":"not-a-uuid","deviceSeq":1}]}"#
        #expect(throws: WireFormatError(field: "events[0].id", message: "not a valid UUID")) {
            try ReceivedPush.decode(Array(badID.utf8))
        }
        #expect(throws: WireFormatError.self) { try ReceivedPush.decode(Array(#"{"device":"anna-phone"}"#.utf8)) }
        #expect(throws: WireFormatError.self) { try ReceivedPush.decode(Array(#"{"device":"a b","events":[]}"#.utf8)) }
    }

    @Test("an invalid value keeps the event, marked invalid with the field")
    func invalidValue() throws {
        let event = sampleEvents(1)[0]
        var json = String(decoding: PushRequest(device: "anna-phone", events: [event]).encoded(), as: UTF8.self)
        json = json.replacingOccurrences(of: event.object.uuidString, with: "xyz")
        let received = try ReceivedPush.decode(Array(json.utf8))
        #expect(received.events == [.invalid(id: event.id, deviceSequence: 1, field: "events[0].object", problem: "not a valid UUID")])
        #expect(throws: WireFormatError.self) { try PushRequest.decode(Array(json.utf8)) }
    }

    @Test("unknown members are skipped for forward compatibility")
    func unknownMembers() throws {
        let event = sampleEvents(1)[0]
        var json = String(decoding: PushRequest(device: "anna-phone", events: [event]).encoded(), as: UTF8.self)
        json = json.replacingOccurrences(of: #""type":"#, with: #""future":{"a":[1,2,{"b":null}]},"type":"#)
        #expect(try PushRequest.decode(Array(json.utf8)).events[0].event == event)
    }
}

@Suite("Messages")
struct MessageTests {
    @Test("push responses round-trip every status")
    func pushResponse() throws {
        let ids = sampleEvents(4).map(\.id)
        let response = PushResponse(
            results: [
                PushResult(id: ids[0], status: .stored(serverSequence: 12)), PushResult(id: ids[1], status: .duplicate(serverSequence: 5)),
                PushResult(id: ids[2], status: .rejected(reason: "bad \"hash\"\n")),
                PushResult(id: ids[3], status: .gap(expectedDeviceSequence: 7)),
            ], lastDeviceSequence: 9)
        #expect(try PushResponse.decode(response.encoded()) == response)
        let text = String(decoding: response.encoded(), as: UTF8.self)
        #expect(text.contains(#""status":"gap","expectedDeviceSeq":7"#))
    }

    @Test("pull responses, blobs, chain, health and errors round-trip")
    func otherMessages() throws {
        let events = sampleEvents(3).enumerated().map { WireEvent($1, serverSequence: Int64($0 + 1), chainHash: SHA256.hash([UInt8($0)])) }
        let pull = PullResponse(events: events, nextCursor: 3, hasMore: true)
        #expect(try PullResponse.decode(pull.encoded()) == pull)
        let missing = MissingBlobsRequest(hashes: [Hex.encode(SHA256.hash([1]))])
        #expect(try MissingBlobsRequest.decode(missing.encoded()) == missing)
        #expect(try MissingBlobsResponse.decode(MissingBlobsResponse(missing: []).encoded()) == MissingBlobsResponse(missing: []))
        let chain = ChainSummary(count: 3, headHash: SHA256.hash([9]), lastServerSequence: 3)
        #expect(try ChainSummary.decode(chain.encoded()) == chain)
        for verification in [ChainVerification.intact(count: 4), .broken(serverSequence: 2, eventID: events[1].id)] {
            #expect(try ChainVerification.decode(verification.encoded()) == verification)
        }
        #expect(try HealthResponse.decode(HealthResponse(version: "1.2").encoded()) == HealthResponse(version: "1.2"))
        let error = ErrorResponse(code: .clockSkew, message: "ahead", serverTime: 1_764_483_790_000)
        #expect(try ErrorResponse.decode(error.encoded()) == error)
        #expect(
            String(decoding: error.encoded(), as: UTF8.self)
                == #"{"error":{"code":"clockSkew","message":"ahead","serverTime":1764483790000}}"#)
    }

    @Test("the key store's messages round-trip, an answer naming only one of its positions included")
    func keyStoreMessages() throws {
        let entries = KeyEntriesResponse(
            entries: [KeyEntry(name: "library/public", value: [1, 2, 3]), KeyEntry(name: "ring/anna-phone", value: [])], last: 42)
        #expect(try KeyEntriesResponse.decode(entries.encoded()) == entries)
        #expect(String(decoding: entries.encoded(), as: UTF8.self).hasPrefix(#"{"entries":[{"name":"library/public","value":"AQID"}"#))
        let changes = KeyChangesRequest(changes: [
            KeyChange(name: "writer/anna-phone", value: [9], createOnly: true), KeyChange(name: "asset/1234", value: nil),
        ])
        #expect(try KeyChangesRequest.decode(changes.encoded()) == changes)
        let results: [KeyChangesResponse.Result] = [
            .init(name: "ring/anna-phone", status: .stored), .init(name: "device/ben", status: .forbidden, reason: "not yours"),
        ]
        for answer in [
            KeyChangesResponse(results: results, from: 41, through: 43), KeyChangesResponse(results: results),
            KeyChangesResponse(results: [], from: 41), KeyChangesResponse(results: [], through: 43),
        ] {
            #expect(try KeyChangesResponse.decode(answer.encoded()) == answer, "\(answer)")
        }
        // An entry without its value is not an entry.
        #expect {
            _ = try KeyEntriesResponse.decode(Array(#"{"entries":[{"name":"library/public"}],"last":1}"#.utf8))
        } throws: { error in
            (error as? WireFormatError)?.field == "entries[0].value"
        }
    }

    @Test("compaction watermarks round-trip with the documented members")
    func compactionWatermark() throws {
        for message in [
            CompactionWatermark(watermark: 120, lastServerSequence: 135, deviceCount: 3),
            CompactionWatermark(watermark: 0, lastServerSequence: 0, deviceCount: 0),
            CompactionWatermark(watermark: Int64.max, lastServerSequence: Int64.max, deviceCount: 1),
        ] {
            #expect(try CompactionWatermark.decode(message.encoded()) == message)
        }
        let text = String(decoding: CompactionWatermark(watermark: 120, lastServerSequence: 135, deviceCount: 3).encoded(), as: UTF8.self)
        #expect(text == #"{"watermark":120,"lastServerSeq":135,"devices":3}"#)
        let later = try CompactionWatermark.decode(Array(#"{"devices":2,"pinnedBy":["x"],"lastServerSeq":9,"watermark":4}"#.utf8))
        #expect(later == CompactionWatermark(watermark: 4, lastServerSequence: 9, deviceCount: 2))
    }

    @Test(
        "malformed compaction watermarks name the field",
        arguments: [
            (#"{"lastServerSeq":9,"devices":1}"#, "watermark"),
            (#"{"watermark":1,"devices":1}"#, "lastServerSeq"),
            (#"{"watermark":1,"lastServerSeq":9}"#, "devices"),
            (#"{"watermark":"1","lastServerSeq":9,"devices":1}"#, "watermark"),
            (#"{"watermark":10,"lastServerSeq":9,"devices":1}"#, "watermark"),
            (#"{"watermark":-1,"lastServerSeq":9,"devices":1}"#, "watermark"),
            (#"{"watermark":0,"lastServerSeq":-1,"devices":1}"#, "lastServerSeq"),
            (#"{"watermark":1,"lastServerSeq":9,"devices":-2}"#, "devices"),
        ])
    func malformedCompactionWatermark(text: String, field: String) {
        #expect {
            _ = try CompactionWatermark.decode(Array(text.utf8))
        } throws: { error in
            (error as? WireFormatError)?.field == field
        }
    }

    @Test("routes and names")
    func routes() {
        #expect(SyncRoutes.pull(library: "family", since: 10, limit: 500) == "/v1/libraries/family/events?since=10&limit=500")
        #expect(SyncRoutes.watermark(library: "family") == "/v1/libraries/family/watermark")
        #expect(LibraryName.problem(with: "family-2026.v1_x") == nil)
        #expect(LibraryName.problem(with: "x'; DROP TABLE libraries;--") != nil)
        #expect(LibraryName.problem(with: "") != nil)
        #expect(LibraryName.problem(with: String(repeating: "a", count: 65)) != nil)
        #expect(BlobHash.isValid(Hex.encode(SHA256.hash([1]))))
        #expect(!BlobHash.isValid(Hex.encode(SHA256.hash([1])).uppercased()))
        #expect(!BlobHash.isValid("../" + String(repeating: "a", count: 61)))
    }
}

@Suite("JSON")
struct JSONTests {
    @Test("parses every kind of value")
    func parse() throws {
        let value = try JSONValue.parse(#" {"a": [1, -2, 3.5, 1e3, true, false, null], "b": {"c": "d\u00e9\ud83d\ude00\n\"\\\/"}} "#)
        #expect(value["a"] == .array([.integer(1), .integer(-2), .double(3.5), .double(1000), .bool(true), .bool(false), .null]))
        #expect(value["b"]?["c"]?.stringValue == "dé😀\n\"\\/")
        #expect(try JSONValue.parse("-9223372036854775808") == .integer(.min))
    }

    @Test(
        "refuses malformed text",
        arguments: [
            "", "{", "[1,]", "{\"a\":1,}", "{\"a\" 1}", "01", "1.", "-", "\"abc", "\"\\x\"", "\"\\ud800\"", "tru", "nul", "[1 2]",
            "{\"a\":1}x", "\"a\u{01}\"", "{1:2}",
        ])
    func malformed(_ text: String) {
        #expect(throws: JSONError.self) { try JSONValue.parse(text) }
    }

    @Test("refuses nesting deeper than the limit")
    func depth() throws {
        let deep = String(repeating: "[", count: 100) + String(repeating: "]", count: 100)
        #expect(throws: JSONError.self) { try JSONValue.parse(deep) }
        let ok = String(repeating: "[", count: 10) + String(repeating: "]", count: 10)
        #expect(try JSONValue.parse(ok) != .null)
    }

    @Test("integers out of range are errors, not rounding")
    func integerRange() {
        #expect(throws: JSONError.self) { try JSONReader.read(Array("9223372036854775808".utf8)) { try $0.readInt64() } }
        #expect(throws: JSONError.self) { try JSONReader.read(Array("1.5".utf8)) { try $0.readInt64() } }
    }

    @Test("the writer escapes what it must and the reader reads it back")
    func escaping() throws {
        let text = "quote \" backslash \\ newline \n tab \t bell \u{07} é 😀 'sql'); DROP TABLE x;--"
        var writer = JSONWriter()
        writer.beginArray()
        writer.string(text)
        writer.integer(Int64.min)
        writer.decimalString(UInt64.max)
        writer.number(0.25)
        writer.endArray()
        let value = try JSONValue.parse(writer.bytes)
        #expect(value == .array([.string(text), .integer(.min), .string("18446744073709551615"), .double(0.25)]))
    }
}

@Suite("Base64 and gzip")
struct CodingTests {
    @Test("base64 matches Foundation for every length and decodes back")
    func base64() {
        var random = SeededRandomNumberGenerator(seed: 5)
        for length in 0..<70 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &random) }
            let text = Base64.encode(bytes)
            #expect(text == Data(bytes).base64EncodedString())
            #expect(Base64.decode(text) == bytes)
        }
        for bad in ["A", "AB=", "A===", "AB=C", "ab$d", "AB==AB==", "AQ=A"] { #expect(Base64.decode(bad) == nil, "\(bad)") }
    }

    @Test("gzip round-trips, in one piece and in chunks")
    func gzipRoundTrip() throws {
        var random = SeededRandomNumberGenerator(seed: 9)
        let noise = (0..<300_000).map { _ in UInt8.random(in: 0...255, using: &random) }
        let text = Array(String(repeating: "{\"type\":\"asset.created\"},", count: 20_000).utf8)
        for input in [[], noise, text] {
            let packed = try Gzip.compress(input)
            #expect(Gzip.isGzip(packed))
            #expect(try Gzip.decompress(packed, limit: input.count) == input)
            let inflater = try GzipInflater(limit: input.count)
            for chunk in stride(from: 0, to: packed.count, by: 777) {
                try packed[chunk..<min(packed.count, chunk + 777)].withUnsafeBytes { try inflater.append($0) }
            }
            #expect(try inflater.finish() == input)
        }
        #expect(try Gzip.compress(text).count < text.count / 50)
    }

    @Test("truncated, damaged and oversized streams are refused")
    func gzipFailures() throws {
        let input = Array(String(repeating: "abc", count: 10_000).utf8)
        let packed = try Gzip.compress(input)
        #expect(throws: GzipError(.truncated)) { try Gzip.decompress(Array(packed.dropLast(10)), limit: 1 << 20) }
        #expect(throws: GzipError.self) { try Gzip.decompress(Array("not gzip at all".utf8), limit: 1 << 20) }
        #expect(throws: GzipError.self) { try Gzip.decompress(packed + [1, 2, 3], limit: 1 << 20) }
        // A zip bomb: 100 MB of zeros is ~100 KB of gzip; the limit stops it early.
        let bomb = try Gzip.compress([UInt8](repeating: 0, count: 100 << 20), level: 9)
        #expect(bomb.count < 200_000)
        #expect(throws: GzipError(.limitExceeded(limit: 1 << 20))) { try Gzip.decompress(bomb, limit: 1 << 20) }
    }

    @Test("a gzip body of more than 4 GiB, more than zlib counts at once, is read in pieces")
    func gzipHugeChunk() throws {
        // Zero pages that are never written take no memory; zeros are no gzip header.
        let count = Int(UInt32.max) + 2
        let memory = mmap(nil, count, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)
        try #require(memory != nil && memory != UnsafeMutableRawPointer(bitPattern: -1))
        defer { munmap(memory, count) }
        #expect(throws: GzipError.self) { try GzipInflater(limit: 1 << 20).append(UnsafeRawBufferPointer(start: memory, count: count)) }
    }

    @Test("zstd round-trips; truncated, damaged and oversized frames are refused")
    func zstd() throws {
        var random = SeededRandomNumberGenerator(seed: 11)
        let noise = (0..<300_000).map { _ in UInt8.random(in: 0...255, using: &random) }
        let text = Array(String(repeating: "{\"type\":\"asset.created\"},", count: 20_000).utf8)
        for input in [[], noise, text] {
            let packed = try Zstd.compress(input)
            #expect(Zstd.isZstd(packed) && !Gzip.isGzip(packed))
            #expect(try Zstd.decompress(packed, limit: input.count) == input)
        }
        let packed = try Zstd.compress(text)
        #expect(packed.count < text.count / 50)
        #expect(throws: ZstdError.self) { try Zstd.decompress(Array(packed.dropLast(5)), limit: 1 << 20) }
        #expect(throws: ZstdError.self) { try Zstd.decompress(Array("not zstd at all".utf8), limit: 1 << 20) }
        #expect(throws: ZstdError.self) { try Zstd.decompress([], limit: 1 << 20) }
        let bomb = try Zstd.compress([UInt8](repeating: 0, count: 100 << 20), level: 19)
        #expect(bomb.count < 100_000)
        #expect(throws: ZstdError.self) { try Zstd.decompress(bomb, limit: 1 << 20) }
        #expect(try Zstd.decompress(packed + packed, limit: 1 << 22) == text + text)
    }
}
