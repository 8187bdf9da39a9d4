import Foundation
import LedgerCore
import PhotoLedgerServer
import SyncProtocol
import Testing

@Suite("Key store: every backend keeps entries the same way; the endpoint enforces who may write what")
struct KeyStoreTests {
    @Test("entries are written, replaced, created once, deleted, and read from a position on", arguments: StoreBackend.all)
    func contract(backend: StoreBackend) throws {
        let fixture = try ContractFixture(backend)
        let library = try fixture.credential(0).libraryID
        let store = fixture.store
        #expect(try store.keyEntries(libraryID: library, after: 0).entries.isEmpty)
        #expect(try store.keyEntries(libraryID: library, after: 0).last == 0)
        let first = try store.applyKeyChanges(
            libraryID: library,
            [
                KeyChange(name: "library/public", value: [1, 2, 3], createOnly: true),
                KeyChange(name: "asset/0193a5b2-7c00-7000-8000-000000000006", value: [9]),
            ], by: "anna-phone", at: 5)
        #expect(first == [.stored, .stored])
        let (entries, last) = try store.keyEntries(libraryID: library, after: 0)
        #expect(
            entries == [
                KeyEntry(name: "asset/0193a5b2-7c00-7000-8000-000000000006", value: [9]),
                KeyEntry(name: "library/public", value: [1, 2, 3]),
            ])
        // Created once: the same bytes again are fine, other bytes conflict and change nothing.
        #expect(
            try store.applyKeyChanges(
                libraryID: library, [KeyChange(name: "library/public", value: [1, 2, 3], createOnly: true)], by: "ben", at: 6) == [.stored])
        #expect(
            try store.applyKeyChanges(
                libraryID: library, [KeyChange(name: "library/public", value: [7], createOnly: true)], by: "ben", at: 6) == [.conflict])
        #expect(try store.keyEntry(libraryID: library, name: "library/public") == [1, 2, 3])
        // Later writes are read from the position on; deletions remove the entry.
        #expect(
            try store.applyKeyChanges(
                libraryID: library,
                [KeyChange(name: "asset/0193a5b2-7c00-7000-8000-000000000006", value: [10]), KeyChange(name: "ring/ben", value: [4])],
                by: "anna-phone", at: 7) == [.stored, .stored])
        let later = try store.keyEntries(libraryID: library, after: last)
        #expect(
            later.entries == [
                KeyEntry(name: "asset/0193a5b2-7c00-7000-8000-000000000006", value: [10]), KeyEntry(name: "ring/ben", value: [4]),
            ])
        #expect(later.last > last)
        #expect(
            try store.applyKeyChanges(
                libraryID: library, [KeyChange(name: "asset/0193a5b2-7c00-7000-8000-000000000006", value: nil)], by: "anna-phone", at: 8)
                == [.deleted])
        #expect(try store.keyEntry(libraryID: library, name: "asset/0193a5b2-7c00-7000-8000-000000000006") == nil)
        #expect(try store.keyEntries(libraryID: library, after: later.last).entries.isEmpty)
        // Another library's store is its own.
        let work = try #require(try store.authenticate(tokenHash: SHA256.hash([0]))).libraryID
        #expect(work == library)
        #expect(try store.keyEntry(libraryID: library + 1, name: "ring/ben") == nil)
    }

    @Test(
        "a request of many changes takes effect in order: a name written twice keeps its later bytes, creations and deletions see the writes before them",
        arguments: StoreBackend.all)
    func manyChangesInOrder(backend: StoreBackend) throws {
        let fixture = try ContractFixture(backend)
        let library = try fixture.credential(0).libraryID
        let store = fixture.store
        func asset(_ index: Int) -> String { "asset/0193a5b2-7c00-7000-8000-\(String(format: "%012d", index))" }
        var changes = (0..<250).map { KeyChange(name: asset($0), value: [UInt8(truncatingIfNeeded: $0)]) }
        changes.append(KeyChange(name: asset(7), value: [0xAA]))  // written again: the later bytes stay
        changes.append(KeyChange(name: asset(8), value: [0xBB], createOnly: true))  // held with other bytes: a conflict
        changes.append(KeyChange(name: asset(9), value: nil))  // deleted after its write
        changes.append(KeyChange(name: asset(9), value: [0xCC], createOnly: true))  // created again after the deletion
        changes += (250..<300).map { KeyChange(name: asset($0), value: [1]) }
        let applied = try store.applyKeyChangesReportingPositions(libraryID: library, changes, by: "anna-phone", at: 5)
        #expect(
            applied.statuses == Array(repeating: .stored, count: 251) + [.conflict, .deleted, .stored]
                + Array(repeating: .stored, count: 50))
        // 250 writes, the second write of one name, the creation after the deletion, 50 more.
        #expect(applied.from == 0)
        #expect(applied.through == 302)
        let (entries, last) = try store.keyEntries(libraryID: library, after: 0)
        #expect(entries.count == 300)
        #expect(last == 302)
        #expect(try store.keyEntry(libraryID: library, name: asset(7)) == [0xAA])
        #expect(try store.keyEntry(libraryID: library, name: asset(8)) == [8])
        #expect(try store.keyEntry(libraryID: library, name: asset(9)) == [0xCC])
        #expect(try store.keyEntry(libraryID: library, name: asset(250)) == [1])
        #expect(try store.keyEntries(libraryID: library, after: 301).entries == [KeyEntry(name: asset(299), value: [1])])
    }

    @Test("the rules: identity key once by readWrite, a device's key by itself, asset keys created by addOnly, deleted by readWrite only")
    func rules() throws {
        let library = UUID()
        func credential(_ device: String, _ scope: TokenScope) -> Credential {
            Credential(libraryID: 1, library: "family", libraryUUID: library, device: DeviceID(device), scope: scope)
        }
        let anna = credential("anna", .readWrite), kiosk = credential("kiosk", .addOnly), frame = credential("frame", .readOnly)
        #expect(KeyStoreRules.problem(with: KeyChange(name: "library/public", value: [1], createOnly: true), for: anna) == nil)
        #expect(KeyStoreRules.problem(with: KeyChange(name: "library/public", value: [1]), for: anna) != nil)
        #expect(KeyStoreRules.problem(with: KeyChange(name: "library/public", value: nil), for: anna) != nil)
        #expect(KeyStoreRules.problem(with: KeyChange(name: "library/public", value: [1], createOnly: true), for: kiosk) != nil)
        // The current identity (after a revocation) is replaced by readWrite devices, never deleted.
        #expect(KeyStoreRules.problem(with: KeyChange(name: "library/current", value: [1]), for: anna) == nil)
        #expect(
            KeyStoreRules.problem(with: KeyChange(name: "library/current", value: nil), for: anna)?.contains("never deleted") == true)
        #expect(KeyStoreRules.problem(with: KeyChange(name: "library/current", value: [1]), for: kiosk) != nil)
        #expect(KeyStoreRules.problem(with: KeyChange(name: "library/current", value: [1]), for: frame) != nil)
        #expect(KeyStoreRules.problem(with: KeyChange(name: "library/other", value: [1]), for: anna) != nil)
        #expect(KeyStoreRules.problem(with: KeyChange(name: "device/frame", value: [1]), for: frame) == nil)
        #expect(KeyStoreRules.problem(with: KeyChange(name: "device/anna", value: [1]), for: frame)?.contains("only its own key") == true)
        #expect(KeyStoreRules.problem(with: KeyChange(name: "device/frame", value: nil), for: anna) == nil)
        #expect(KeyStoreRules.problem(with: KeyChange(name: "ring/frame", value: [1]), for: anna) == nil)
        #expect(KeyStoreRules.problem(with: KeyChange(name: "ring/anna", value: [1]), for: frame) != nil)
        #expect(KeyStoreRules.problem(with: KeyChange(name: "ring/frame", value: [1]), for: frame) == nil)
        #expect(KeyStoreRules.problem(with: KeyChange(name: "ring/recovery", value: [1]), for: kiosk) != nil)
        #expect(
            KeyStoreRules.problem(
                with: KeyChange(name: "asset/0193a5b2-7c00-7000-8000-000000000010", value: [1], createOnly: true), for: kiosk) == nil)
        #expect(
            KeyStoreRules.problem(with: KeyChange(name: "asset/0193a5b2-7c00-7000-8000-000000000010", value: [1]), for: kiosk)?.contains(
                "only create") == true)
        #expect(KeyStoreRules.problem(with: KeyChange(name: "asset/0193a5b2-7c00-7000-8000-000000000010", value: nil), for: kiosk) != nil)
        #expect(KeyStoreRules.problem(with: KeyChange(name: "asset/0193a5b2-7c00-7000-8000-000000000010", value: [1]), for: frame) != nil)
        #expect(KeyStoreRules.problem(with: KeyChange(name: "asset/0193a5b2-7c00-7000-8000-000000000010", value: nil), for: anna) == nil)
        #expect(KeyStoreRules.problem(with: KeyChange(name: "writer/kiosk", value: [1]), for: kiosk) == nil)
        #expect(KeyStoreRules.problem(with: KeyChange(name: "writer/anna", value: [1]), for: kiosk)?.contains("only its own key") == true)
        #expect(KeyStoreRules.problem(with: KeyChange(name: "writer/kiosk", value: nil), for: anna) == nil)
        #expect(KeyStoreRules.problem(with: KeyChange(name: "grant/kiosk", value: [1]), for: anna) == nil)
        #expect(KeyStoreRules.problem(with: KeyChange(name: "grant/kiosk", value: [1]), for: kiosk)?.contains("approve") == true)
        #expect(KeyStoreRules.problem(with: KeyChange(name: "grant/kiosk", value: nil), for: frame) != nil)
        #expect(KeyStoreRules.problem(with: KeyChange(name: "asset/x", value: [1]), for: anna) != nil)
        #expect(KeyStoreRules.problem(with: KeyChange(name: "other/thing", value: [1]), for: anna) != nil)
        // Key packs: written, replaced and deleted by readWrite devices only, under a block's UUID and a number.
        let pack = "pack/0193a5b2-7c00-7000-8000-000000000010"
        for name in [pack + ".0", pack + ".7", pack + ".123456"] {
            #expect(KeyStoreRules.problem(with: KeyChange(name: name, value: [1]), for: anna) == nil, "\(name)")
            #expect(KeyStoreRules.problem(with: KeyChange(name: name, value: nil), for: anna) == nil, "\(name)")
        }
        #expect(
            KeyStoreRules.problem(with: KeyChange(name: pack + ".0", value: [1], createOnly: true), for: kiosk)?.contains("readWrite")
                == true)
        #expect(KeyStoreRules.problem(with: KeyChange(name: pack + ".0", value: nil), for: kiosk) != nil)
        #expect(KeyStoreRules.problem(with: KeyChange(name: pack + ".0", value: [1]), for: frame) != nil)
        for name in [
            pack, pack + ".", pack + ".01", pack + ".1234567", pack + ".1a", pack + "..1", "pack/0193A5B2-7C00-7000-8000-000000000010.0",
            "pack/0193a5b2-7c00-7000-8000-00000000001.0", "pack/x.0",
        ] {
            #expect(
                KeyStoreRules.problem(with: KeyChange(name: name, value: [1]), for: anna)?.contains("a key pack is named") == true,
                "\(name)")
        }
    }

    @Test("over HTTP: changes answer per entry, reads go from a position, the library says it is encrypted, bad bodies are refused")
    func endpoint() async throws {
        let fixture = try ServerFixture()
        let anna = fixture.client(), kiosk = fixture.client("kiosk"), frame = fixture.client("frame")
        let path = SyncRoutes.keys(library: "family")
        var info = try await anna.send("GET", SyncRoutes.library("family")).decode(LibraryInfo.self)
        #expect(!info.endToEndEncrypted)
        let changes = KeyChangesRequest(changes: [
            KeyChange(name: "library/public", value: Array(repeating: 1, count: 32), createOnly: true),
            KeyChange(name: "device/ben-laptop", value: [2]),
            KeyChange(name: "asset/0193a5b2-7c00-7000-8000-000000000006", value: [3]),
        ])
        let answer = try await anna.send("POST", path, body: changes.encoded()).decode(KeyChangesResponse.self)
        #expect(answer.results.map(\.status) == [.stored, .forbidden, .stored])
        #expect(answer.from == 0 && answer.through == 2, "the two writes took positions 1 and 2")
        #expect(answer.results[1].reason?.contains("only its own key") == true)
        info = try await frame.send("GET", SyncRoutes.library("family")).decode(LibraryInfo.self)
        #expect(info.endToEndEncrypted)
        let all = try await kiosk.send("GET", path).decode(KeyEntriesResponse.self)
        #expect(all.entries.map(\.name) == ["asset/0193a5b2-7c00-7000-8000-000000000006", "library/public"])
        let none = try await kiosk.send("GET", SyncRoutes.keys(library: "family", after: all.last)).decode(KeyEntriesResponse.self)
        #expect(none.entries.isEmpty && none.last == all.last)
        // An addOnly device creates the key of a new asset, never replaces one, nor makes one for an asset the log holds.
        let replace = try await kiosk.send(
            "POST", path,
            body: KeyChangesRequest(changes: [
                KeyChange(name: "asset/0193a5b2-7c00-7000-8000-000000000006", value: [4], createOnly: true),
                KeyChange(name: "asset/0193a5b2-7c00-7000-8000-000000000006", value: [3], createOnly: true),
                KeyChange(name: "asset/0193a5b2-7c00-7000-8000-000000000007", value: [5], createOnly: true),
            ]).encoded()
        ).decode(KeyChangesResponse.self)
        #expect(replace.results.map(\.status) == [.forbidden, .stored, .stored])
        #expect(replace.results[0].reason?.contains("exists already and is never replaced") == true)
        let shred = try await kiosk.send(
            "POST", path,
            body: KeyChangesRequest(changes: [KeyChange(name: "asset/0193a5b2-7c00-7000-8000-000000000006", value: nil)]).encoded())
        #expect(try shred.decode(KeyChangesResponse.self).results.map(\.status) == [.forbidden])
        let badName = try await anna.send("POST", path, body: Array(#"{"changes":[{"name":"Asset/6","value":"AA=="}]}"#.utf8))
        #expect(badName.status == 400)
        #expect(String(decoding: badName.body, as: UTF8.self).contains("changes[0].name"))
        let badAfter = try await anna.send("GET", path + "?after=-1")
        #expect(badAfter.status == 400)
        let noToken = try await fixture.client(nil).send("GET", path)
        #expect(noToken.status == 401)
        let put = try await anna.send("PUT", path, body: [])
        #expect(put.status == 405)
    }

    @Test("over HTTP in the binary form: changes and answers, reads, refusals naming the change; JSON clients still get JSON")
    func binaryEndpoint() async throws {
        let fixture = try ServerFixture()
        let anna = fixture.client(), kiosk = fixture.client("kiosk")
        let path = SyncRoutes.keys(library: "family")
        let binary = KeyStoreBody.contentType
        let accept = ["Accept": "\(binary), application/json;q=0.5"]
        let changes = KeyChangesRequest(changes: [
            KeyChange(name: "library/public", value: Array(repeating: 1, count: 32), createOnly: true),
            KeyChange(name: "device/ben-laptop", value: [2]),
            KeyChange(name: "asset/0193a5b2-7c00-7000-8000-000000000006", value: [3]),
        ])
        let reply = try await anna.send("POST", path, body: KeyStoreBody.encode(changes), contentType: binary, headers: accept)
        #expect(reply.status == 200 && reply.headers["Content-Type"] == binary)
        let answer = try KeyStoreBody.decodeResults(reply.body)
        #expect(answer.results.map(\.status) == [.stored, .forbidden, .stored])
        #expect(answer.from == 0 && answer.through == 2)
        #expect(answer.results[1].reason?.contains("only its own key") == true)
        // A binary change without the binary Accept is answered in JSON, and a read without it too.
        let again = try await anna.send(
            "POST", path, body: KeyStoreBody.encode(KeyChangesRequest(changes: [changes.changes[2]])), contentType: binary)
        #expect(try again.decode(KeyChangesResponse.self).results.map(\.status) == [.stored])
        let json = try await kiosk.send("GET", path).decode(KeyEntriesResponse.self)
        let read = try await kiosk.send("GET", path, headers: accept)
        #expect(read.headers["Content-Type"] == binary)
        #expect(try KeyStoreBody.decodeEntries(read.body) == json)
        #expect(json.entries.map(\.name) == ["asset/0193a5b2-7c00-7000-8000-000000000006", "library/public"])
        let after = try await kiosk.send("GET", SyncRoutes.keys(library: "family", after: json.last), headers: accept)
        #expect(try KeyStoreBody.decodeEntries(after.body) == KeyEntriesResponse(entries: [], last: json.last))
        // Damaged bodies are refused with the place named; nothing is stored.
        var bad = KeyStoreBody.encode(KeyChangesRequest(changes: [KeyChange(name: "asset/1", value: [1])]))
        bad[bad.count - 2] = 9  // the value's length: past the end
        let refused = try await anna.send("POST", path, body: bad, contentType: binary, headers: accept)
        #expect(refused.status == 400)
        #expect(String(decoding: refused.body, as: UTF8.self).contains("changes[0].value"))
        let cut = try await anna.send("POST", path, body: Array(bad.prefix(7)), contentType: binary)
        #expect(cut.status == 400)
        #expect(String(decoding: cut.body, as: UTF8.self).contains("the key change list is invalid"))
        // The binary form is for changes of the key store only.
        let elsewhere = try await anna.send(
            "POST", SyncRoutes.missingBlobs(library: "family"), body: KeyStoreBody.encode(changes), contentType: binary)
        #expect(elsewhere.status == 415)
        #expect(try fixture.store.keyEntries(libraryID: 1, after: 0).entries.count == 2)
    }
}
