import Foundation
import LedgerCore
import PhotoLedgerServer
import SyncProtocol
import Testing

/// The key store entry of an asset's key.
private func assetKey(_ object: UUID) -> String { "asset/\(object.uuidString.lowercased())" }

@Suite("Pushes that carry their keys: stored with the events, under the key store's rules")
struct KeyedPushTests {
    let path = SyncRoutes.events(library: "family")

    @Test("a keyed batch stores its keys and its events; the answer names only the refused keys, with the store's positions")
    func keysStoredWithTheEvents() async throws {
        let fixture = try ServerFixture()
        let anna = fixture.client()
        var factory = EventFactory()
        let events = factory.make(3)
        let keys =
            events.map { KeyChange(name: assetKey($0.object), value: [1, 2, 3]) } + [KeyChange(name: "device/ben-laptop", value: [9])]
        let reply = try await anna.send(
            "POST", path, body: EventBatch.encode(device: "anna-phone", keys: keys, events: events),
            contentType: EventBatch.keyedContentType)
        #expect(reply.status == 200, "\(reply.errorMessage)")
        let response = try reply.decode(PushResponse.self)
        #expect(response.results.map(\.status) == (1...3).map { .stored(serverSequence: Int64($0)) })
        let answer = try #require(response.keys)
        #expect(answer.from == 0 && answer.through == 3)
        #expect(answer.refused.map(\.index) == [3] && answer.refused[0].result.status == .forbidden)
        #expect(answer.refused[0].result.reason?.contains("only its own key") == true)
        #expect(try answer.response(to: keys).results.map(\.status) == [.stored, .stored, .stored, .forbidden])
        let held = try fixture.store.keyEntries(libraryID: 1, after: 0)
        #expect(Set(held.entries.map(\.name)) == Set(events.map { assetKey($0.object) }) && held.last == 3)
        #expect(try await anna.pullAll().map(\.event) == events)

        // The same batch again: its events are duplicates, its keys written again.
        let again = try await anna.send(
            "POST", path, body: EventBatch.encode(device: "anna-phone", keys: keys, events: events),
            contentType: EventBatch.keyedContentType)
        let repeated = try again.decode(PushResponse.self)
        #expect(repeated.results.map(\.status) == (1...3).map { .duplicate(serverSequence: Int64($0)) })
        #expect(repeated.keys?.from == 3 && repeated.keys?.through == 6)
    }

    @Test(
        "an addOnly device's keyed batch creates only its new assets' keys: replacing a key, keying an asset the log holds, a ring, a deletion are refused"
    )
    func addOnlyRulesHold() async throws {
        let fixture = try ServerFixture()
        let anna = fixture.client(), kiosk = fixture.client("kiosk")
        var annas = EventFactory(), kiosks = EventFactory(device: "kiosk", seed: 2)
        let keyed = annas.make(), unkeyed = annas.make()
        let first = try await anna.send(
            "POST", path,
            body: EventBatch.encode(
                device: "anna-phone", keys: [KeyChange(name: assetKey(keyed.object), value: [1])], events: [keyed, unkeyed]),
            contentType: EventBatch.keyedContentType)
        #expect(first.status == 200)

        let created = kiosks.make()
        let keys = [
            KeyChange(name: assetKey(created.object), value: [5], createOnly: true),  // its new asset, created in this very batch
            KeyChange(name: assetKey(keyed.object), value: [6], createOnly: true),  // another device's asset's key, other bytes
            KeyChange(name: assetKey(unkeyed.object), value: [7], createOnly: true),  // an asset the log holds, without a key
            KeyChange(name: "ring/anna-phone", value: [8]),
            KeyChange(name: assetKey(created.object), value: nil),
            KeyChange(name: assetKey(UUID()), value: [9]),  // not create-only: a replacement
        ]
        let reply = try await kiosk.send(
            "POST", path, body: EventBatch.encode(device: "kiosk", keys: keys, events: [created]), contentType: EventBatch.keyedContentType)
        #expect(reply.status == 200, "\(reply.errorMessage)")
        let response = try reply.decode(PushResponse.self)
        #expect(response.results.map(\.status) == [.stored(serverSequence: 3)])
        let results = try #require(response.keys).response(to: keys).results
        #expect(results.map(\.status) == [.stored, .forbidden, .forbidden, .forbidden, .forbidden, .forbidden])
        #expect(results[1].reason?.contains("exists already and is never replaced") == true)
        #expect(results[2].reason?.contains("exists in this library already") == true)
        #expect(results[3].reason?.contains("only a readWrite device may seal the key ring") == true)
        #expect(results[4].reason?.contains("only a readWrite device may destroy an asset key") == true)
        #expect(results[5].reason?.contains("may only create asset keys") == true)
        let held = try fixture.store.keyEntries(libraryID: 1, after: 0).entries
        #expect(
            held
                == [KeyEntry(name: assetKey(keyed.object), value: [1]), KeyEntry(name: assetKey(created.object), value: [5])].sorted {
                    $0.name < $1.name
                })
    }

    @Test("a keyed batch refused as a whole stores none of its keys: clock skew, another device's token, a readOnly token, a damaged body")
    func refusedBatchStoresNoKeys() async throws {
        let fixture = try ServerFixture()
        var factory = EventFactory()
        factory.milliseconds += 86_400_000  // a day ahead of the server's clock
        let ahead = factory.make(2)
        let keys = ahead.map { KeyChange(name: assetKey($0.object), value: [1]) }
        let batch = EventBatch.encode(device: "anna-phone", keys: keys, events: ahead)
        let skewed = try await fixture.client().send("POST", path, body: batch, contentType: EventBatch.keyedContentType)
        #expect(skewed.status == 422 && skewed.errorCode == "clockSkew")
        let forged = try await fixture.client("ben-laptop").send("POST", path, body: batch, contentType: EventBatch.keyedContentType)
        #expect(forged.status == 403)
        let frame = try await fixture.client("frame").send(
            "POST", path, body: EventBatch.encode(device: "frame", keys: keys, events: []), contentType: EventBatch.keyedContentType)
        #expect(frame.status == 403)
        // Cut before the second key's value (the header and the device's name take 16 bytes, the
        // count 1, each change 46: flags, a name of 42 bytes with its length, a value of 1 with its
        // length): the place is named.
        let cut = Array(batch.prefix(16 + 1 + 2 * 46 - 1))
        let damaged = try await fixture.client().send("POST", path, body: cut, contentType: EventBatch.keyedContentType)
        #expect(damaged.status == 400 && damaged.errorMessage.contains("the keyed event batch is invalid"), "\(damaged.errorMessage)")
        #expect(damaged.errorMessage.contains("changes[1]"), "\(damaged.errorMessage)")
        // A keyed body in the plain batch's type is not a batch.
        let mislabelled = try await fixture.client().send("POST", path, body: batch, contentType: EventBatch.contentType)
        #expect(mislabelled.status == 400 && mislabelled.errorMessage.contains("does not start with 'PLEB'"))
        // The keyed form is a push's only.
        let elsewhere = try await fixture.client().send(
            "POST", SyncRoutes.keys(library: "family"), body: batch, contentType: EventBatch.keyedContentType)
        #expect(elsewhere.status == 415)
        #expect(try fixture.store.keyEntries(libraryID: 1, after: 0).entries.isEmpty)
        #expect(try await fixture.client().pullAll().isEmpty)
    }

    @Test("a push transaction stores key changes with its events, or neither", arguments: StoreBackend.all)
    func keysCommitWithTheEvents(backend: StoreBackend) throws {
        struct Abandoned: Error {}
        let fixture = try ContractFixture(backend)
        let store = fixture.store
        let anna = try fixture.credential(0), kiosk = try fixture.credential(1)
        var factory = EventFactory()
        let events = factory.make(2)
        let candidates = events.map { fixture.rules.candidate(for: .valid(WireEvent($0)), credential: anna) }
        let keys = events.map { KeyChange(name: assetKey($0.object), value: [3]) }
        func push(_ body: (any PushTransaction) throws -> Void = { _ in }) throws -> (KeyChangesResponse, PushResponse) {
            try store.withPushTransaction(library: anna.libraryID, device: anna.device, at: 10, readingAheadFor: candidates) {
                let answer = try KeyStoreRules.apply(keys, for: anna, in: $0)
                let response = try fixture.rules.apply(candidates, for: anna, in: $0)
                try body($0)
                return (answer, response)
            }
        }
        #expect(throws: Abandoned.self) { try push { _ in throw Abandoned() } }
        #expect(try store.keyEntries(libraryID: anna.libraryID, after: 0).entries.isEmpty && fixture.all().isEmpty)
        let (answer, response) = try push()
        #expect(answer.results.map(\.status) == [.stored, .stored] && answer.from == 0 && answer.through == 2)
        #expect(response.results.map(\.status) == [.stored(serverSequence: 1), .stored(serverSequence: 2)])
        #expect(try store.keyEntries(libraryID: anna.libraryID, after: 0).entries.count == 2 && fixture.all().count == 2)
        // An addOnly device's key for an asset the log holds is refused in the transaction too.
        let refused = try store.withPushTransaction(library: kiosk.libraryID, device: kiosk.device, at: 11) {
            try KeyStoreRules.apply([KeyChange(name: assetKey(events[0].object), value: [3], createOnly: true)], for: kiosk, in: $0)
        }
        #expect(refused.results.map(\.status) == [.stored])  // the same bytes: nothing to refuse
        let other = try store.withPushTransaction(library: kiosk.libraryID, device: kiosk.device, at: 11) {
            try KeyStoreRules.apply([KeyChange(name: assetKey(events[0].object), value: [4], createOnly: true)], for: kiosk, in: $0)
        }
        #expect(other.results.map(\.status) == [.forbidden] && other.from == 2 && other.through == 2)
    }
}
