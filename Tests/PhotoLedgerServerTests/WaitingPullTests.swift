import Foundation
import LedgerCore
import PhotoLedgerServer
import SyncProtocol
import Testing

/// `GET …/events?since=N&wait=S` on loopback against the real server. Waits are long (300 s)
/// wherever a test expects a wake-up: an answer that comes at all, within the generous read
/// timeout, came from the wake-up and not from the end of the wait.
@Suite("Waiting pulls")
struct WaitingPullTests {
    let eventsPath = SyncRoutes.events(library: "family")

    func waitingPull(
        _ fixture: ServerFixture, device: String = "ben-laptop", since: Int64, wait: Int = 300, eventPages: Bool = false,
        from source: String = "127.0.0.1"
    ) throws -> RawConnection {
        let connection = try RawConnection(port: fixture.server.port, from: source)
        ask(connection, fixture, device: device, since: since, wait: wait, eventPages: eventPages)
        return connection
    }

    /// Sends a waiting pull on `connection`.
    func ask(
        _ connection: RawConnection, _ fixture: ServerFixture, device: String = "ben-laptop", since: Int64, wait: Int = 300,
        eventPages: Bool = false
    ) {
        let accept = eventPages ? ["Accept: \(EventPage.contentType)"] : []
        connection.send(
            rawRequest("GET", SyncRoutes.pull(library: "family", since: since, wait: wait), token: fixture.tokens[device], fields: accept))
    }

    @Test("a waiting pull returns the event another device pushes, long before its wait ends, in JSON and in event pages")
    func wakesOnPush() async throws {
        for eventPages in [false, true] {
            let fixture = try ServerFixture()
            let waiting = try waitingPull(fixture, since: 0, eventPages: eventPages)
            try await waitUntil("the pull waits") { fixture.server.waitingPulls == 1 }
            try await waitUntil("nothing is in flight") { fixture.server.requestsInFlight == 0 }
            #expect(!waiting.hasData)

            var factory = EventFactory()
            let events = factory.make(2)
            let pushed = try await fixture.client("anna-phone").pushResponse(events)
            #expect(pushed.results.map(\.status) == [.stored(serverSequence: 1), .stored(serverSequence: 2)])

            let reply = try waiting.response()
            #expect(reply.status == 200)
            let page: PullResponse
            if eventPages {
                #expect(reply.header("Content-Type") == EventPage.contentType)
                page = try EventPage.decode(reply.body)
            } else {
                page = try PullResponse.decode(reply.body)
            }
            #expect(page.events.map(\.event) == events)
            #expect(page.nextCursor == 2)
            #expect(fixture.server.waitingPulls == 0)
            // The log line follows the response.
            func logged() -> LogRecord? {
                fixture.logger.records.first { $0.message == "request" && $0["path"] == eventsPath && $0["method"] == "GET" }
            }
            try await waitUntil("the pull is logged") { logged() != nil }
            #expect(logged()?["status"] == "200")
            #expect(logged()?["waited_ms"] != nil)
        }
    }

    @Test("a wait that ends returns an empty page at the cursor, in JSON and in event pages")
    func waitEnds() async throws {
        let fixture = try ServerFixture()
        var factory = EventFactory()
        _ = try await fixture.client().pushResponse(factory.make(3))
        for eventPages in [false, true] {
            let reply = try waitingPull(fixture, since: 3, wait: 1, eventPages: eventPages).response()
            #expect(reply.status == 200)
            let page = try eventPages ? EventPage.decode(reply.body) : PullResponse.decode(reply.body)
            #expect(page.events.isEmpty)
            #expect(page.nextCursor == 3)
            #expect(page.hasMore == false)
        }
        #expect(fixture.server.waitingPulls == 0)
    }

    @Test("a pull that finds events answers at once, whatever its wait")
    func eventsAnswerAtOnce() async throws {
        let fixture = try ServerFixture()
        var factory = EventFactory()
        let events = factory.make(4)
        _ = try await fixture.client().pushResponse(events)
        let reply = try await fixture.client("ben-laptop").send("GET", SyncRoutes.pull(library: "family", since: 1, wait: 300))
        #expect(reply.status == 200)
        #expect(try reply.decode(PullResponse.self).events.map(\.event) == Array(events.dropFirst()))
        #expect(fixture.server.waitingPulls == 0)
    }

    @Test("many waiting pulls and one push: every one wakes and gets the event")
    func manyWake() async throws {
        let fixture = try ServerFixture { $0.maximumConnectionsPerAddress = 0 }
        let count = 200
        let connections = try (0..<count).map { index in
            try waitingPull(fixture, device: index % 2 == 0 ? "ben-laptop" : "frame", since: 0, eventPages: index % 3 == 0)
        }
        try await waitUntil("every pull waits") { fixture.server.waitingPulls == count }
        try await waitUntil("nothing is in flight") { fixture.server.requestsInFlight == 0 }
        var factory = EventFactory()
        let event = factory.make()
        _ = try await fixture.client("anna-phone").pushResponse([event])
        for (index, connection) in connections.enumerated() {
            let reply = try connection.response()
            #expect(reply.status == 200)
            let page = try index % 3 == 0 ? EventPage.decode(reply.body) : PullResponse.decode(reply.body)
            #expect(page.events.map(\.event) == [event], "pull \(index)")
        }
        #expect(fixture.server.waitingPulls == 0)
    }

    @Test("round after round, every woken pull is answered and waits again on its connection")
    func repeatedWakeUps() async throws {
        let fixture = try ServerFixture()
        // More than a full batch of 128 ready connections per thread, from several addresses.
        let count = 300
        let connections = try (0..<count).map { try waitingPull(fixture, since: 0, from: "127.0.1.\(1 + $0 / 100)") }
        var factory = EventFactory()
        for round in 1...8 {
            try await waitUntil("every pull waits in round \(round)") { fixture.server.waitingPulls == count }
            let event = factory.make()
            _ = try await fixture.client("anna-phone").pushResponse([event])
            for connection in connections {
                #expect(try PullResponse.decode(connection.response().body).events.map(\.event) == [event])
                ask(connection, fixture, since: Int64(round))
            }
        }
        try await waitUntil("every pull waits after the last round") { fixture.server.waitingPulls == count }
    }

    @Test("a push of another library, or one that stores nothing new, wakes no one")
    func onlyStoredEventsOfTheLibraryWake() async throws {
        let fixture = try ServerFixture()
        var factory = EventFactory()
        let first = factory.make(2)
        _ = try await fixture.client().pushResponse(first)
        let waiting = try waitingPull(fixture, since: 2)
        try await waitUntil("the pull waits") { fixture.server.waitingPulls == 1 }

        // Duplicates store nothing; another library's events are not this library's.
        let again = try await fixture.client().pushResponse(first)
        #expect(again.results.map(\.status) == [.duplicate(serverSequence: 1), .duplicate(serverSequence: 2)])
        var work = EventFactory(device: "work-phone", seed: 9)
        let other = try await fixture.client("work-phone").push(work.make(1), device: "work-phone", library: "work")
        #expect(other.status == 200)
        // A wake-up happens before the push is answered: the pull would have stopped waiting.
        #expect(fixture.server.waitingPulls == 1)
        #expect(!waiting.hasData)

        let third = factory.make()
        _ = try await fixture.client().pushResponse([third])
        #expect(try PullResponse.decode(waiting.response().body).events.map(\.event) == [third])
    }

    @Test("wait is a whole number of seconds from 0 to 300; anything else is 400 naming the field")
    func waitIsChecked() async throws {
        let fixture = try ServerFixture()
        for wait in ["301", "-1", "abc", "1.5", "99999999999999999999"] {
            let reply = try await fixture.client().send("GET", "\(eventsPath)?since=0&wait=\(wait)")
            #expect(reply.status == 400, "\(wait)")
            #expect(reply.errorCode == "badRequest")
            #expect(reply.errorMessage.contains("'wait'"), "\(reply.errorMessage)")
        }
        let zero = try await fixture.client().send("GET", "\(eventsPath)?since=0&wait=0")
        #expect(zero.status == 200)
        #expect(try zero.decode(PullResponse.self).events.isEmpty)
    }

    @Test("beyond the waiting-pull limit a pull is answered 503 with Retry-After; other requests still pass")
    func waitingLimit() async throws {
        let fixture = try ServerFixture {
            $0.maximumWaitingPulls = 3
            $0.maximumConnections = 4
        }
        let waiting = try (0..<3).map { _ in try waitingPull(fixture, since: 0) }
        try await waitUntil("three pulls wait") { fixture.server.waitingPulls == 3 }
        let refused = try waitingPull(fixture, since: 0).response()
        #expect(refused.status == 503)
        #expect(refused.header("Retry-After") == "5")
        #expect(refused.error?.code == "internalError")
        #expect(refused.error?.message.contains("waiting pulls") == true)
        // Room for other requests remains beside the waiting pulls.
        for _ in 0..<3 {
            let health = try RawConnection(port: fixture.server.port)
            health.send(rawRequest("GET", SyncRoutes.health))
            #expect(try health.response().status == 200)
        }
        #expect(fixture.server.waitingPulls == 3)
        #expect(waiting.allSatisfy { !$0.hasData })
    }

    @Test("stopping the server answers the waiting pulls with their page")
    func stopAnswersWaiting() async throws {
        let fixture = try ServerFixture()
        let waiting = try (0..<5).map { _ in try waitingPull(fixture, since: 0) }
        try await waitUntil("five pulls wait") { fixture.server.waitingPulls == 5 }
        fixture.server.stop()
        for connection in waiting {
            let reply = try connection.response()
            #expect(reply.status == 200)
            #expect(try PullResponse.decode(reply.body).events.isEmpty)
        }
        #expect(fixture.logger.records.last { $0.message == "stopped" }?["unfinished_requests"] == "0")
    }

    @Test("a waiting pull whose client goes away is let go long before its wait ends")
    func departedClients() async throws {
        let fixture = try ServerFixture()
        var connections = try (0..<3).map { _ in try waitingPull(fixture, since: 0) }
        try await waitUntil("three pulls wait") { fixture.server.waitingPulls == 3 }
        connections.removeFirst(2)
        try await waitUntil("the two departed pulls are let go") { fixture.server.waitingPulls == 1 }
        // Their requests end, whether libmicrohttpd notices the closed connection before or after
        // the answer is queued.
        func ended() -> [LogRecord] { fixture.logger.records.filter { $0.message == "request" && $0["path"] == eventsPath } }
        try await waitUntil("their requests end") { ended().count == 2 }
        try await waitUntil("nothing is in flight") { fixture.server.requestsInFlight == 0 }
        var factory = EventFactory()
        let event = factory.make()
        _ = try await fixture.client().pushResponse([event])
        #expect(try PullResponse.decode(connections[0].response().body).events.map(\.event) == [event])
    }

    @Test("the client's cursor is recorded by a waiting pull as by any pull")
    func waitingPullRecordsItsCursor() async throws {
        let fixture = try ServerFixture()
        var factory = EventFactory()
        _ = try await fixture.client().pushResponse(factory.make(2))
        let waiting = try waitingPull(fixture, since: 2)
        try await waitUntil("the pull waits") { fixture.server.waitingPulls == 1 }
        let ben = try fixture.store.devices(library: "family").first { $0.device == "ben-laptop" }
        #expect(ben?.lastPulledSequence == 2)
        _ = try await fixture.client().pushResponse([factory.make()])
        #expect(try waiting.response().status == 200)
    }
}
