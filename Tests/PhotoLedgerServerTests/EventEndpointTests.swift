import Foundation
import LedgerCore
import LedgerStore
import PhotoLedgerServer
import SyncProtocol
import Testing

@Suite("Push and pull over HTTP")
struct EventEndpointTests {
    @Test("health answers without a token")
    func health() async throws {
        let fixture = try ServerFixture()
        let reply = try await fixture.client(nil).send("GET", SyncRoutes.health)
        #expect(reply.status == 200)
        #expect(try reply.decode(HealthResponse.self) == HealthResponse(version: photoLedgerServerVersion))
    }

    @Test("pushed events come back in server order with the server's hash chain")
    func pushThenPull() async throws {
        let fixture = try ServerFixture()
        var factory = EventFactory()
        let events = factory.make(5)
        let response = try await fixture.client().pushResponse(events)
        #expect(response.results.map(\.status) == (1...5).map { .stored(serverSequence: Int64($0)) })
        #expect(response.lastDeviceSequence == 5)

        let pulled = try await fixture.client("ben-laptop").pullAll()
        #expect(pulled.map(\.event) == events)
        var chain = HashChain()
        for (index, wire) in pulled.enumerated() {
            #expect(wire.serverSequence == Int64(index + 1))
            #expect(wire.hasValidHash)
            #expect(wire.chainHash == chain.link(wire.event))
        }
        let summary = try await fixture.client().send("GET", SyncRoutes.chain(library: "family")).decode(ChainSummary.self)
        #expect(summary == ChainSummary(count: 5, headHash: chain.head, lastServerSequence: 5))
        let verification = try await fixture.client().send("GET", SyncRoutes.verify(library: "family")).decode(ChainVerification.self)
        #expect(verification == .intact(count: 5))
    }

    @Test("the content hash checked at push is stored and sent with pulls; events stored without one get theirs computed")
    func storedContentHash() async throws {
        let fixture = try ServerFixture()
        var factory = EventFactory()
        let events = factory.make(4)
        _ = try await fixture.client().pushResponse(events)
        let db = try Database(path: fixture.databasePath)
        let stored = try db.rows("SELECT content_hash FROM server_events ORDER BY server_seq") { $0.blob(0) }
        #expect(stored == events.map(\.contentHash))
        // Rows stored before the column existed hold NULL.
        try db.execute("UPDATE server_events SET content_hash = NULL WHERE server_seq IN (2, 4)")
        let pulled = try await fixture.client("ben-laptop").pullAll()
        #expect(pulled.map(\.event) == events)
        #expect(pulled.map(\.hash) == events.map(\.contentHash))
        let valid = pulled.allSatisfy { $0.hasValidHash }
        #expect(valid)
    }

    @Test("pushing the same batch again acknowledges duplicates and changes nothing")
    func idempotentRepush() async throws {
        let fixture = try ServerFixture()
        var factory = EventFactory()
        let events = factory.make(3)
        let client = fixture.client()
        _ = try await client.pushResponse(events)
        let again = try await client.pushResponse(events)
        #expect(again.results.map(\.status) == (1...3).map { .duplicate(serverSequence: Int64($0)) })
        #expect(again.lastDeviceSequence == 3)
        // A batch mixing old and new events stores only the new one.
        let next = factory.make()
        let mixed = try await client.pushResponse(events + [next])
        #expect(mixed.results.last?.status == .stored(serverSequence: 4))
        #expect(try await client.pullAll().count == 4)
    }

    @Test("a stored event's identifier sent again with other content under the next sequence is rejected, and consumes it")
    func duplicateOnNextSequence() async throws {
        let fixture = try ServerFixture()
        var factory = EventFactory()
        var event = factory.make()
        let client = fixture.client()
        _ = try await client.pushResponse([event])
        event.deviceSequence = 2
        let response = try await client.pushResponse([event])
        guard case .rejected(let reason) = response.results[0].status else { Issue.record("expected a rejection"); return }
        #expect(reason.contains("an identifier names one event"))
        #expect(response.lastDeviceSequence == 2)
        _ = factory.make()
        #expect(try await client.pushResponse([factory.make()]).results[0].status == .stored(serverSequence: 2))
    }

    @Test("a gap answers the expected sequence for that event and all after it, storing none")
    func gap() async throws {
        let fixture = try ServerFixture()
        var factory = EventFactory()
        let events = factory.make(6)
        let client = fixture.client()
        _ = try await client.pushResponse(Array(events[0..<3]))
        let response = try await client.pushResponse(Array(events[4..<6]))
        #expect(response.results.map(\.status) == [.gap(expectedDeviceSequence: 4), .gap(expectedDeviceSequence: 4)])
        #expect(response.lastDeviceSequence == 3)
        #expect(try await client.pullAll().count == 3)
        let filled = try await client.pushResponse(Array(events[3..<6]))
        #expect(filled.results.map(\.status) == [.stored(serverSequence: 4), .stored(serverSequence: 5), .stored(serverSequence: 6)])
    }

    @Test("an invalid event is rejected, recorded, and consumes its sequence")
    func rejectedConsumesSequence() async throws {
        let fixture = try ServerFixture()
        var factory = EventFactory()
        let events = factory.make(3)
        var wire = events.map { WireEvent($0) }
        wire[1].hash = SHA256.hash([0])
        let client = fixture.client()
        let body = PushRequest(device: "anna-phone", events: wire).encoded()
        let response = try await client.send("POST", SyncRoutes.events(library: "family"), body: body).decode(PushResponse.self)
        #expect(response.results[0].status == .stored(serverSequence: 1))
        #expect(response.results[1].status == .rejected(reason: "the content hash does not match the event's canonical bytes"))
        #expect(response.results[2].status == .stored(serverSequence: 2))
        #expect(response.lastDeviceSequence == 3)
        // Pushing the rejected event again gets the same answer; a new id on a used sequence is refused.
        let again = try await client.send("POST", SyncRoutes.events(library: "family"), body: body).decode(PushResponse.self)
        #expect(again.results[1].status == response.results[1].status)
        var reused = events[1]
        reused.id = factory.ids.next()
        let reuse = try await client.pushResponse([reused])
        guard case .rejected(let reason) = reuse.results[0].status else { Issue.record("expected a rejection"); return }
        #expect(reason.contains("already used"))
        #expect(try await client.pullAll().map(\.event) == [events[0], events[2]])
    }

    @Test("an event of another device is rejected; a request for another device is forbidden")
    func otherDevice() async throws {
        let fixture = try ServerFixture()
        var anna = EventFactory()
        var ben = EventFactory(device: "ben-laptop", seed: 2)
        let client = fixture.client()
        let mixed = [anna.make(), ben.make()]
        var request = PushRequest(device: "anna-phone", events: mixed)
        request.events[1].event.deviceSequence = 2
        request.events[1].hash = request.events[1].event.contentHash
        let response = try await client.send("POST", SyncRoutes.events(library: "family"), body: request.encoded()).decode(
            PushResponse.self)
        #expect(response.results[0].status == .stored(serverSequence: 1))
        guard case .rejected(let reason) = response.results[1].status else { Issue.record("expected a rejection"); return }
        #expect(reason.contains("not the token's device"))
        let forbidden = try await client.push([ben.make()], device: "ben-laptop")
        #expect(forbidden.status == 403)
        #expect(forbidden.errorCode == "forbidden")
    }

    @Test("an event stamped too far ahead refuses the whole request with 422 and stores nothing")
    func clockSkew() async throws {
        let fixture = try ServerFixture()
        var factory = EventFactory()
        factory.milliseconds = fixture.clock.read() - 10
        var events = factory.make(3)
        events[2].timestamp = HLCTimestamp(milliseconds: fixture.clock.read() + 10 * 60 * 1000, counter: 0)
        let reply = try await fixture.client().push(events)
        #expect(reply.status == 422)
        #expect(reply.errorCode == "clockSkew")
        #expect(reply.errorMessage.contains("600 s ahead"))
        #expect(reply.json?["error"]?["serverTime"]?.int64Value == Int64(fixture.clock.read()))
        #expect(try await fixture.client().pullAll().isEmpty)
        // Once the server clock catches up, the same events are accepted.
        fixture.clock.set(fixture.clock.read() + 6 * 60 * 1000)
        #expect(try await fixture.client().push(events).status == 200)
    }

    @Test("pulling 10,000 events in pages loses nothing and keeps order")
    func paging() async throws {
        let fixture = try ServerFixture()
        var factory = EventFactory()
        let events = factory.make(10_000)
        let client = fixture.client()
        for start in stride(from: 0, to: events.count, by: 1000) {
            let response = try await client.pushResponse(Array(events[start..<start + 1000]))
            #expect(response.lastDeviceSequence == Int64(start + 1000))
        }
        var cursor: Int64 = 0
        var pulled: [WireEvent] = []
        var pages = 0
        while true {
            let page = try await client.pull(since: cursor, limit: 997).decode(PullResponse.self)
            pages += 1
            pulled += page.events
            #expect(page.nextCursor == page.events.last?.serverSequence ?? cursor)
            #expect(page.hasMore == (pulled.count < events.count))
            cursor = page.nextCursor
            if !page.hasMore { break }
        }
        #expect(pages == 11)
        #expect(pulled.map(\.event) == events)
        #expect(pulled.map { $0.serverSequence! } == (1...10_000).map { Int64($0) })
        // Limits: the default page is 1,000, the largest 5,000; past the end is empty.
        #expect(try await client.pull(since: 0).decode(PullResponse.self).events.count == 1000)
        #expect(try await client.pull(since: 0, limit: 100_000).decode(PullResponse.self).events.count == 5000)
        let end = try await client.pull(since: 10_000).decode(PullResponse.self)
        #expect(end == PullResponse(events: [], nextCursor: 10_000, hasMore: false))
        // The device's last pull is recorded as its watermark.
        let devices = try fixture.store.devices(library: "family")
        #expect(devices.first { $0.device == "anna-phone" }?.lastPulledSequence == 10_000)
    }

    @Test("pulls are binary event pages for a client that asks, JSON for every other")
    func pullNegotiation() async throws {
        let fixture = try ServerFixture()
        var factory = EventFactory()
        let events = factory.make(30)
        _ = try await fixture.client().pushResponse(events)
        let client = fixture.client("ben-laptop")
        let path = "\(SyncRoutes.events(library: "family"))?since=5&limit=20"
        let json = try await client.send("GET", path)
        #expect(json.header("Content-Type") == SyncRoutes.jsonContentType)
        let expected = try json.decode(PullResponse.self)
        #expect(expected.events.count == 20 && expected.hasMore && expected.nextCursor == 25)

        for accept in [EventPage.contentType, "application/json;q=0.5, \(EventPage.contentType)", "APPLICATION/VND.PHOTOLEDGER.EVENT-PAGE"]
        {
            let binary = try await client.send("GET", path, headers: ["Accept": accept])
            #expect(binary.status == 200)
            #expect(binary.header("Content-Type") == EventPage.contentType, "Accept: \(accept)")
            #expect(binary.header("Vary")?.contains("Accept") == true)
            #expect(try EventPage.decode(binary.body) == expected)
        }
        // Refused with q=0, or only reached through a wildcard: JSON.
        for accept in ["\(EventPage.contentType);q=0", "*/*", "application/*", "application/json"] {
            let reply = try await client.send("GET", path, headers: ["Accept": accept])
            #expect(reply.header("Content-Type") == SyncRoutes.jsonContentType, "Accept: \(accept)")
            #expect(try reply.decode(PullResponse.self) == expected)
        }
        // The end of the log is an empty page in either form.
        let end = try await client.send(
            "GET", "\(SyncRoutes.events(library: "family"))?since=30", headers: ["Accept": EventPage.contentType])
        #expect(try EventPage.decode(end.body) == PullResponse(events: [], nextCursor: 30, hasMore: false))
        // Errors stay JSON whatever was accepted.
        let bad = try await client.send(
            "GET", "\(SyncRoutes.events(library: "family"))?since=-1", headers: ["Accept": EventPage.contentType])
        #expect(bad.status == 400)
        #expect(bad.errorCode == "badRequest")
    }

    @Test("a restarted server keeps events, sequences, tokens and blobs")
    func restart() async throws {
        let fixture = try ServerFixture()
        var factory = EventFactory()
        _ = try await fixture.client().pushResponse(factory.make(20))
        let blob = Array("restart".utf8)
        let hash = Hex.encode(SHA256.hash(blob))
        #expect(
            try await fixture.client().send("PUT", SyncRoutes.blob(library: "family", hash: hash), body: blob, contentType: nil).status
                == 201)
        let before = try await fixture.client().pullAll()
        try fixture.restart()
        #expect(try await fixture.client().pullAll() == before)
        let next = try await fixture.client().pushResponse([factory.make()])
        #expect(next.results[0].status == .stored(serverSequence: 21))
        #expect(try await fixture.client().send("GET", SyncRoutes.blob(library: "family", hash: hash)).body == blob)
        #expect(
            try await fixture.client().send("GET", SyncRoutes.verify(library: "family")).decode(ChainVerification.self)
                == .intact(count: 21))
    }

    @Test("verify finds the first event whose stored chain value was altered")
    func verifyDetectsTampering() async throws {
        let fixture = try ServerFixture()
        var factory = EventFactory()
        let events = factory.make(10)
        _ = try await fixture.client().pushResponse(events)
        let database = try DatabaseQueue(path: fixture.databasePath)
        try database.write { db in
            try db.execute("UPDATE server_events SET payload = x'00' WHERE server_seq = 7")
        }
        let reply = try await fixture.client().send("GET", SyncRoutes.verify(library: "family"))
        #expect(try reply.decode(ChainVerification.self) == .broken(serverSequence: 7, eventID: events[6].id))
    }

    @Test("gzip request bodies are accepted and large responses are gzip for clients that ask")
    func gzip() async throws {
        let fixture = try ServerFixture()
        var factory = EventFactory()
        let body = try Gzip.compress(PushRequest(device: "anna-phone", events: factory.make(50)).encoded())
        let reply = try await fixture.client().send(
            "POST", SyncRoutes.events(library: "family"), body: body, headers: ["Content-Encoding": "gzip"])
        #expect(reply.status == 200)
        #expect(try reply.decode(PushResponse.self).lastDeviceSequence == 50)
        let request =
            "GET \(SyncRoutes.pull(library: "family", since: 0)) HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(fixture.tokens["anna-phone"]!)\r\n"
            + "Accept-Encoding: gzip\r\nConnection: close\r\n\r\n"
        let raw = try rawExchangeBytes(port: fixture.server.port, Array(request.utf8))
        let split = raw.firstRange(of: Array("\r\n\r\n".utf8))!
        let head = String(decoding: raw[..<split.lowerBound], as: UTF8.self).lowercased()
        #expect(head.contains("content-encoding: gzip"))
        let pulled = try PullResponse.decode(Gzip.decompress(Array(raw[split.upperBound...]), limit: 1 << 24))
        #expect(pulled.events.count == 50)
    }

    @Test("large responses are zstd for clients that list it, gzip for those that list only gzip or refuse zstd")
    func zstdResponses() async throws {
        let fixture = try ServerFixture()
        var factory = EventFactory()
        _ = try await fixture.client().pushResponse(factory.make(50))
        for (accept, coding) in [
            ("zstd", "zstd"), ("deflate, gzip, br, zstd", "zstd"), ("gzip, zstd;q=0", "gzip"), ("gzip", "gzip"), ("identity", nil),
        ] {
            let request =
                "GET \(SyncRoutes.pull(library: "family", since: 0)) HTTP/1.1\r\nHost: x\r\n"
                + "Authorization: Bearer \(fixture.tokens["anna-phone"]!)\r\nAccept-Encoding: \(accept)\r\nConnection: close\r\n\r\n"
            let raw = try rawExchangeBytes(port: fixture.server.port, Array(request.utf8))
            let split = raw.firstRange(of: Array("\r\n\r\n".utf8))!
            let head = String(decoding: raw[..<split.lowerBound], as: UTF8.self).lowercased()
            var body = Array(raw[split.upperBound...])
            switch coding {
            case "zstd":
                #expect(head.contains("content-encoding: zstd"), "\(accept)")
                body = try Zstd.decompress(body, limit: 1 << 24)
            case "gzip":
                #expect(head.contains("content-encoding: gzip"), "\(accept)")
                body = try Gzip.decompress(body, limit: 1 << 24)
            default:
                #expect(!head.contains("content-encoding"), "\(accept)")
            }
            #expect(try PullResponse.decode(body).events.count == 50)
        }
    }

    @Test("every request is logged once with id, method, path, status and duration, never the token")
    func logging() async throws {
        let fixture = try ServerFixture()
        _ = try await fixture.client().pull(since: 0)
        _ = try await fixture.client(nil).send("GET", "/nowhere")
        fixture.server.stop()
        let requests = fixture.logger.records.filter { $0.message == "request" }
        #expect(requests.count == 2)
        #expect(requests.map { $0["status"] } == ["200", "404"])
        for record in requests {
            #expect(record["id"] != nil && record["method"] == "GET" && record["duration_ms"] != nil)
        }
        let everything = fixture.logger.records.map(\.line).joined(separator: "\n")
        for token in fixture.tokens.values { #expect(!everything.contains(token)) }
    }
}
