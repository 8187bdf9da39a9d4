import Foundation
import LedgerCore
import SyncProtocol
import Testing

@Suite("Binary key store bodies")
struct KeyStoreBodyTests {
    static let changes = KeyChangesRequest(changes: [
        KeyChange(name: "library/public", value: Array(repeating: 1, count: 32), createOnly: true),
        KeyChange(name: "asset/0193a5b2-7c00-7000-8000-000000000006", value: []),
        KeyChange(name: "grant/anna-phone", value: nil),
    ])
    static let results = KeyChangesResponse(
        results: [
            .init(name: "library/public", status: .stored), .init(name: "asset/6", status: .deleted),
            .init(name: "device/ben", status: .forbidden, reason: "a device writes only its own key — « é »"),
            .init(name: "asset/7", status: .conflict),
        ], from: 41, through: 43)
    static let entries = KeyEntriesResponse(
        entries: [KeyEntry(name: "library/public", value: [1, 2, 3]), KeyEntry(name: "asset/9", value: [])], last: 42)

    /// The error `decode` throws for `bytes`, as text.
    func failure(_ bytes: [UInt8], _ decode: ([UInt8]) throws -> some Any) -> String {
        do {
            _ = try decode(bytes)
            return "decoded"
        } catch {
            return "\(error)"
        }
    }

    @Test("each message reads back as itself, and as its JSON form reads")
    func roundTrip() throws {
        #expect(try KeyStoreBody.decodeChanges(KeyStoreBody.encode(Self.changes)) == Self.changes)
        #expect(try KeyStoreBody.decodeResults(KeyStoreBody.encode(Self.results)) == Self.results)
        #expect(try KeyStoreBody.decodeEntries(KeyStoreBody.encode(Self.entries)) == Self.entries)
        #expect(try KeyChangesRequest.decode(Self.changes.encoded()) == Self.changes)
        let silent = KeyChangesResponse(results: [.init(name: "asset/1", status: .stored)])
        #expect(try KeyStoreBody.decodeResults(KeyStoreBody.encode(silent)) == silent)
        let empty = KeyEntriesResponse(entries: [], last: 0)
        #expect(try KeyStoreBody.decodeEntries(KeyStoreBody.encode(empty)) == empty)
    }

    @Test("a thousand asset keys take at most three quarters of the bytes of JSON")
    func size() {
        let keys = (0..<1000).map { index in
            KeyEntry(name: "asset/0193a5b2-7c00-7000-8000-\(String(format: "%012d", index))", value: Array(repeating: 7, count: 120))
        }
        let response = KeyEntriesResponse(entries: keys, last: 1000)
        #expect(KeyStoreBody.encode(response).count * 4 < response.encoded().count * 3)
    }

    @Test("another body, another version, a body cut short anywhere, or bytes after it are refused, naming the place")
    func framing() {
        let bodies: [([UInt8], ([UInt8]) throws -> Any, String)] = [
            (KeyStoreBody.encode(Self.changes), { try KeyStoreBody.decodeChanges($0) }, "PLKC"),
            (KeyStoreBody.encode(Self.results), { try KeyStoreBody.decodeResults($0) }, "PLKR"),
            (KeyStoreBody.encode(Self.entries), { try KeyStoreBody.decodeEntries($0) }, "PLKE"),
        ]
        for (good, decode, magic) in bodies {
            #expect(failure(Array("PLEB".utf8) + good.dropFirst(4), decode).contains("does not start with '\(magic)'"))
            #expect(failure(Array(good.prefix(4)) + [2] + good.dropFirst(5), decode).contains("format version 2 is not supported"))
            #expect(failure(good + [0], decode).contains("1 byte follows the last"))
            #expect(failure(good + [0, 0], decode).contains("2 bytes follow the last"))
            for length in 0..<good.count {
                let error = failure(Array(good.prefix(length)), decode)
                #expect(error != "decoded", "a body cut to \(length) bytes decodes")
            }
        }
        #expect(failure([], { try KeyStoreBody.decodeEntries($0) }).contains("not a key entry list"))
        let cut = failure(Array(KeyStoreBody.encode(Self.changes).dropLast(3)), { try KeyStoreBody.decodeChanges($0) })
        #expect(cut.contains("changes[2].name"), "\(cut)")
    }

    /// A body with `magic` and version 1, then `fields` as the writer writes them.
    func body(_ magic: String, _ fields: (inout ByteWriter) -> Void) -> [UInt8] {
        var writer = ByteWriter()
        writer.write(raw: Array(magic.utf8))
        writer.write(byte: 1)
        fields(&writer)
        return writer.bytes
    }

    @Test("counts larger than the body or the limit, lengths past the end, unknown flags and statuses, invalid names and values")
    func badFields() {
        let changes = { (bytes: [UInt8]) in try KeyStoreBody.decodeChanges(bytes) }
        let entries = { (bytes: [UInt8]) in try KeyStoreBody.decodeEntries(bytes) }
        let results = { (bytes: [UInt8]) in try KeyStoreBody.decodeResults(bytes) }
        // A count of UInt64.max and one a little too large for the body.
        let huge = body("PLKC") { $0.write(varint: .max) }
        #expect(failure(huge, changes).contains("a count of 18446744073709551615 changes does not fit"))
        let fourInTen = body("PLKE") {
            $0.write(int: 0)
            $0.write(varint: 4)
            $0.write(string: "a")
            $0.write(bytes: [])
        }
        #expect(failure(fourInTen, entries).contains("does not fit"))
        // More changes than a request may hold, each of the fewest bytes.
        let limit = KeyStoreBody.maximumChanges
        let tooMany = body("PLKC") {
            $0.write(varint: UInt64(limit + 1))
            for _ in 0...limit {
                $0.write(byte: 0)
                $0.write(string: "a")
            }
        }
        #expect(failure(tooMany, changes).contains("at most \(limit) changes"))
        let flags = body("PLKC") {
            $0.write(varint: 1)
            $0.write(byte: 4)
            $0.write(string: "asset/1")
        }
        #expect(failure(flags, changes).contains("changes[0].flags") && failure(flags, changes).contains("unknown flags 4"))
        let badName = body("PLKC") {
            $0.write(varint: 1)
            $0.write(byte: 1)
            $0.write(string: "Asset/1")
            $0.write(bytes: [1])
        }
        #expect(failure(badName, changes).contains("changes[0].name"))
        // A value's length past the end, and a name's.
        let longValue = body("PLKE") {
            $0.write(int: 3)
            $0.write(varint: 1)
            $0.write(string: "asset/1")
            $0.write(varint: 1000)
            $0.write(raw: [1, 2, 3])
        }
        #expect(failure(longValue, entries).contains("entries[0].value") && failure(longValue, entries).contains("past the end"))
        let longName = body("PLKE") {
            $0.write(int: 3)
            $0.write(varint: 1)
            $0.write(varint: 200)
            $0.write(raw: Array("asset/1".utf8))
        }
        #expect(failure(longName, entries).contains("entries[0].name"))
        let oversized = body("PLKE") {
            $0.write(int: 3)
            $0.write(varint: 1)
            $0.write(string: "asset/1")
            $0.write(bytes: [UInt8](repeating: 0, count: KeyEntryName.maximumValueBytes + 1))
        }
        #expect(failure(oversized, entries).contains("must be at most \(KeyEntryName.maximumValueBytes) bytes"))
        let status = body("PLKR") {
            $0.write(byte: 0)
            $0.write(varint: 1)
            $0.write(byte: 4)
            $0.write(string: "asset/1")
        }
        #expect(failure(status, results).contains("results[0].status") && failure(status, results).contains("unknown status 4"))
        let resultFlags = body("PLKR") {
            $0.write(byte: 2)
            $0.write(varint: 0)
        }
        #expect(failure(resultFlags, results).contains("unknown flags 2"))
        let badReason = body("PLKR") {
            $0.write(byte: 0)
            $0.write(varint: 1)
            $0.write(byte: 0x83)
            $0.write(string: "asset/1")
            $0.write(bytes: [0xFF, 0xFE])
        }
        #expect(failure(badReason, results).contains("results[0].reason"))
    }
}
