import Foundation
import LedgerCore
import PhotoLedgerServer
import SyncProtocol
import Testing

@Suite("Pushes in the binary form")
struct PushBatchTests {
    @Test("a binary batch is stored as the JSON push is; a damaged one is refused naming the place; other routes take JSON only")
    func binaryPush() async throws {
        let fixture = try ServerFixture()
        let client = fixture.client()
        var factory = EventFactory()
        let events = factory.make(5)
        let path = SyncRoutes.events(library: "family")
        let batch = EventBatch.encode(device: "anna-phone", events: events)
        let first = try await client.send("POST", path, body: batch, contentType: EventBatch.contentType)
        #expect(first.status == 200, "\(first.errorMessage)")
        #expect(try first.decode(PushResponse.self).results.map(\.status) == (1...5).map { .stored(serverSequence: Int64($0)) })
        let again = try await client.send("POST", path, body: batch, contentType: EventBatch.contentType)
        #expect(try again.decode(PushResponse.self).results.map(\.status) == (1...5).map { .duplicate(serverSequence: Int64($0)) })
        #expect(try await client.pullAll().map(\.event) == events)

        let damaged = try await client.send("POST", path, body: Array(batch.dropLast(2)), contentType: EventBatch.contentType)
        #expect(damaged.status == 400)
        #expect(damaged.errorMessage.contains("the event batch is invalid"), "\(damaged.errorMessage)")
        #expect(damaged.errorMessage.contains("events[4]"), "\(damaged.errorMessage)")
        let elsewhere = try await client.send(
            "POST", SyncRoutes.missingBlobs(library: "family"), body: batch, contentType: EventBatch.contentType)
        #expect(elsewhere.status == 415)
        // Another device's token cannot push a batch in this device's name.
        let forged = try await fixture.client("ben-laptop").send("POST", path, body: batch, contentType: EventBatch.contentType)
        #expect(forged.status == 403)
    }
}
