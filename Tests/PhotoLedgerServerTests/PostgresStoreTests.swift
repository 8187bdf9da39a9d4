import Foundation
import LedgerCore
import LedgerStore
import SyncProtocol
import Synchronization
import Testing

@testable import PhotoLedgerServer

@Suite("PostgreSQL store: connections, errors, migrations and concurrent servers")
struct PostgresStoreTests {
    static var available: Bool { PostgresTestDatabase.adminURL != nil }

    @Test("an unreachable PostgreSQL is an error that names the database, says what to do, and never shows the password")
    func unreachable() throws {
        let error = try #require(throws: PostgresError.self) {
            _ = try PostgresServerStore(url: "postgresql://photo:s3cret-word@127.0.0.1:1/ledger?connect_timeout=2")
        }
        #expect(error.code == .unreachable)
        #expect(error.description.contains("postgresql://photo@127.0.0.1:1/ledger"))
        #expect(error.description.contains("check that PostgreSQL runs"))
        #expect(!error.description.contains("s3cret-word"))
    }

    @Test("a database URL libpq cannot read is refused as such")
    func invalidURL() throws {
        let error = try #require(throws: PostgresError.self) { _ = try PostgresServerStore(url: "mysql-server-somewhere") }
        #expect(error.code == .invalidURL)
        #expect(error.description.contains("postgresql://USER@HOST:PORT/NAME"))
    }

    @Test("the test PostgreSQL is reachable and recent enough", .enabled(if: available, PostgresTestDatabase.skipReason))
    func availability() throws {
        let database = try PostgresTestDatabase()
        let store = try PostgresServerStore(url: database.url)
        try store.pool.withConnection { #expect($0.serverVersion >= PostgresServerStore.minimumServerVersion) }
    }

    @Test(
        "migrations keep their rules on PostgreSQL: order, names, checksums, newer schemas",
        .enabled(if: available, PostgresTestDatabase.skipReason))
    func migrations() throws {
        let database = try PostgresTestDatabase()
        let connection = try PostgresConnection(conninfo: database.url, database: "test", connectTimeoutSeconds: 5, settings: [])
        let version1 = [(name: "0001_create.sql", sql: "CREATE TABLE albums (id bigint PRIMARY KEY, title text);")]
        let version2 = version1 + [(name: "0002_cover.sql", sql: "ALTER TABLE albums ADD COLUMN cover bytea;")]
        #expect(try Migrator(set: "Test", files: version1).migrate(connection) == [1])
        #expect(try Migrator(set: "Test", files: version2).migrate(connection) == [2])
        #expect(try Migrator(set: "Test", files: version2).migrate(connection) == [])

        let edited = [(name: "0001_create.sql", sql: "CREATE TABLE albums (id bigint PRIMARY KEY, name text);"), version2[1]]
        #expect(
            try #require(throws: MigrationError.self) { try Migrator(set: "Test", files: edited).migrate(connection) }.reason
                == .edited(id: 1, name: "create"))
        let renamed = [(name: "0001_make.sql", sql: version1[0].sql), version2[1]]
        #expect(
            try #require(throws: MigrationError.self) { try Migrator(set: "Test", files: renamed).migrate(connection) }.reason
                == .renamedOrReordered(id: 1, appliedName: "create", currentName: "make"))
        #expect(
            try #require(throws: MigrationError.self) { try Migrator(set: "Test", files: version1).migrate(connection) }.reason
                == .newerSchema(databaseVersion: 2, supportedVersion: 1))

        let broken = version2 + [(name: "0003_broken.sql", sql: "CREATE TABLE covers (id bigint); INSERT INTO nowhere VALUES (1);")]
        let failure = try #require(throws: MigrationError.self) { try Migrator(set: "Test", files: broken).migrate(connection) }
        guard case .failed(3, "broken", let cause) = failure.reason else {
            Issue.record("expected a failed migration, got \(failure.reason)"); return
        }
        #expect(cause.contains("nowhere"))
        #expect(try Migrator(set: "Test", files: version2).currentVersion(connection) == 2)
        #expect(try connection.query("SELECT 1 FROM pg_tables WHERE tablename = 'covers'", []).count == 0)
    }

    @Test(
        "several servers pushing into one library at once: consecutive sequences, one chain",
        .enabled(if: available, PostgresTestDatabase.skipReason))
    func concurrentServers() throws {
        let database = try PostgresTestDatabase()
        let servers = try (0..<3).map { _ in try PostgresServerStore(url: database.url) }
        try servers[0].createLibrary(named: "family", uuid: nil, at: 1)
        let devices = (0..<6).map { DeviceID("device-\($0)") }
        for (index, device) in devices.enumerated() {
            try servers[0].registerToken(hash: SHA256.hash([UInt8(index)]), library: "family", device: device, scope: .readWrite, at: 1)
        }
        let failures = Mutex<[String]>([])
        let rules = PushRules()
        DispatchQueue.concurrentPerform(iterations: devices.count) { index in
            do {
                var factory = EventFactory(device: devices[index], seed: UInt64(index + 1))
                let credential = try #require(try servers[0].authenticate(tokenHash: SHA256.hash([UInt8(index)])))
                for batch in 0..<15 {
                    let store = servers[(index + batch) % servers.count]
                    let candidates = factory.make(10).map { rules.candidate(for: .valid(WireEvent($0)), credential: credential) }
                    let results = try store.push(candidates, for: credential, receivedAt: 10, rules: rules).results
                    for result in results {
                        guard case .stored = result.status else { throw ServerStoreError("event \(result.id) answered \(result.status)") }
                    }
                }
            } catch {
                failures.withLock { $0.append("\(error)") }
            }
        }
        #expect(failures.withLock { $0 } == [])
        let library = try #require(try servers[1].authenticate(tokenHash: SHA256.hash([0]))).libraryID
        let stored = try servers[2].events(library: library, after: 0, limit: 10_000).events
        #expect(stored.map(\.serverSequence) == Array(1...Int64(devices.count * 150)))
        for device in devices {
            #expect(stored.filter { $0.event.device == device }.map(\.event.deviceSequence) == Array(1...150))
        }
        #expect(try servers[1].verifyChain(libraryID: library) == .intact(count: Int64(devices.count * 150)))
    }

    @Test("a pool whose connections all stay busy answers with a clear error", .enabled(if: available, PostgresTestDatabase.skipReason))
    func poolExhausted() throws {
        let database = try PostgresTestDatabase()
        var options = PostgresServerStore.Options()
        options.maximumConnections = 1
        options.acquireTimeout = .milliseconds(200)
        let store = try PostgresServerStore(url: database.url, options: options)
        try store.createLibrary(named: "family", uuid: nil, at: 1)
        let held = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            _ = try? store.withPushTransaction(library: 1, device: "anna-phone", at: 1) { _ in
                held.signal()
                release.wait()
            }
        }
        held.wait()
        let error = try #require(throws: PostgresError.self) { _ = try store.libraryNames() }
        release.signal()
        #expect(error.code == .poolExhausted)
        #expect(error.description.contains("all 1 connections stayed busy"))
        #expect(try store.libraryNames() == ["family"])
    }

    @Test(
        "a push waiting longer than the statement timeout fails, and the store goes on",
        .enabled(if: available, PostgresTestDatabase.skipReason))
    func statementTimeout() throws {
        let database = try PostgresTestDatabase()
        var options = PostgresServerStore.Options()
        options.statementTimeout = .milliseconds(300)
        let store = try PostgresServerStore(url: database.url, options: options)
        try store.createLibrary(named: "family", uuid: nil, at: 1)
        let blocker = try PostgresConnection(conninfo: database.url, database: "test", connectTimeoutSeconds: 5, settings: [])
        try blocker.execute("BEGIN")
        try blocker.execute("SELECT last_seq FROM libraries FOR UPDATE")
        let error = try #require(throws: PostgresError.self) {
            try store.withPushTransaction(library: 1, device: "anna-phone", at: 1) { _ in }
        }
        #expect(error.code == .statementTimeout)
        #expect(error.sqlState == "57014")
        try blocker.execute("ROLLBACK")
        try store.withPushTransaction(library: 1, device: "anna-phone", at: 1) { #expect($0.head.sequence == 0) }
    }

    @Test("connections PostgreSQL closed are replaced without failing a request", .enabled(if: available, PostgresTestDatabase.skipReason))
    func reconnects() throws {
        let database = try PostgresTestDatabase()
        let store = try PostgresServerStore(url: database.url)
        try store.createLibrary(named: "family", uuid: nil, at: 1)
        let admin = try PostgresConnection(conninfo: database.url, database: "test", connectTimeoutSeconds: 5, settings: [])
        let terminated = try admin.query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()", [])
        #expect(terminated.count >= 1)
        #expect(try store.libraryNames() == ["family"])
    }
}

/// Waiting pulls across server processes: each server listens for the commits the others make
/// on the shared PostgreSQL database (LISTEN/NOTIFY).
@Suite("Waiting pulls across servers on PostgreSQL")
struct CrossServerWakeTests {
    static let available = PostgresTestDatabase.adminURL != nil

    @Test(
        "a pull waiting on one server wakes when another server stores the library's events, long before its wait ends",
        .enabled(if: available, PostgresTestDatabase.skipReason))
    func wakesAcrossServers() async throws {
        let database = try PostgresTestDatabase()
        let stores = try (0..<2).map { _ in try PostgresServerStore(url: database.url) }
        try stores[0].createLibrary(named: "family", uuid: nil, at: 1)
        var tokens: [String: String] = [:]
        for device in ["anna-phone", "ben-laptop"] {
            let token = try DeviceToken.generate()
            try stores[0].registerToken(
                hash: DeviceToken.hash(token), library: "family", device: DeviceID(device), scope: .readWrite, at: 1)
            tokens[device] = token
        }
        let servers = try stores.map { store in
            var configuration = SyncServer.Configuration(store: store, blobDirectory: try TemporaryDirectory().path("blobs"))
            configuration.logger = CapturingLogger()
            configuration.threadCount = 2
            let server = try SyncServer(configuration: configuration)
            try server.start()
            return server
        }
        defer { for server in servers { server.stop() } }

        var factory = EventFactory()
        let events = factory.make(3)
        let (ports, tokensByDevice) = (servers.map(\.port), tokens)
        let waitingPulls = { @Sendable in servers[1].waitingPulls }
        // The pull's wait, the push and the answer follow each other on a thread of their own,
        // well within the pull's longest wait however long this task would wait its turn.
        let (pushReply, reply) = try await onThreadOfItsOwn {
            // Ben waits on server 1 (300 s: an answer at all within the read timeout is a wake-up).
            let waiting = try RawConnection(port: ports[1])
            waiting.send(rawRequest("GET", SyncRoutes.pull(library: "family", since: 0, wait: 300), token: tokensByDevice["ben-laptop"]))
            try blockUntil("the pull waits") { waitingPulls() == 1 }
            // Anna pushes through server 0.
            let pusher = try RawConnection(port: ports[0])
            pusher.send(
                rawRequest(
                    "POST", SyncRoutes.events(library: "family"), token: tokensByDevice["anna-phone"],
                    fields: ["Content-Type: application/json"], body: PushRequest(device: "anna-phone", events: events).encoded()))
            return (try pusher.response(), try waiting.response())
        }
        #expect(pushReply.status == 200)
        let pushed = try PushResponse.decode(pushReply.body)
        #expect(pushed.results.map(\.status) == [.stored(serverSequence: 1), .stored(serverSequence: 2), .stored(serverSequence: 3)])

        #expect(reply.status == 200)
        let page = try PullResponse.decode(reply.body)
        #expect(page.events.map(\.event) == events)
        #expect(page.nextCursor == 3)
    }

    @Test(
        "a commit made as soon as the commit listener is started is told: it listens before it returns",
        .enabled(if: available, PostgresTestDatabase.skipReason))
    func listenerListensOnReturn() async throws {
        let database = try PostgresTestDatabase()
        let store = try PostgresServerStore(url: database.url)
        let credential = try annaInFamily(store)
        var factory = EventFactory()
        let received = Mutex<[StoreCommit?]>([])
        // No wait between starting to listen and the commit: a commit the listener missed would
        // never be told, and the wait below would time out.
        let watch = try #require(try store.watchCommits { commit in received.withLock { $0.append(commit) } })
        defer { watch.stop() }
        try push(2, from: &factory, as: credential, to: store)
        try await waitUntil("the commit arrives") { received.withLock { $0 } == [StoreCommit(libraryID: credential.libraryID, through: 2)] }
    }

    @Test(
        "the commit listener wakes every waiting pull after it reconnects, and stops cleanly",
        .enabled(if: available, PostgresTestDatabase.skipReason))
    func listenerReconnects() async throws {
        let database = try PostgresTestDatabase()
        let store = try PostgresServerStore(url: database.url)
        let received = Mutex<[StoreCommit?]>([])
        let watch = try #require(try store.watchCommits { commit in received.withLock { $0.append(commit) } })
        defer { watch.stop() }
        let credential = try annaInFamily(store)
        var factory = EventFactory()
        // The session's query shows LISTEN from when it starts; it listens once its transaction
        // has committed, when the session is idle again (a commit before that is not notified).
        let listening = "datname = '\(database.name)' AND query LIKE 'LISTEN photoledger_commits%'"
        try await waitUntil("the listener listens") {
            (try? PostgresTestDatabase.adminCount(
                "SELECT count(*) FROM pg_stat_activity WHERE \(listening) AND state = 'idle'", database.url)) == 1
        }
        try push(2, from: &factory, as: credential, to: store)
        try await waitUntil("the commit arrives") { received.withLock { $0 } == [StoreCommit(libraryID: credential.libraryID, through: 2)] }

        // The listening session is ended by the database: the listener reconnects and says that
        // commits may have been missed.
        try PostgresTestDatabase.admin(database.url) {
            _ = try $0.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE \(listening)")
        }
        try await waitUntil("the listener reconnects") { received.withLock { $0.last == .some(nil) } }
        try push(1, from: &factory, as: credential, to: store)
        try await waitUntil("commits arrive again") {
            received.withLock { $0.last == StoreCommit(libraryID: credential.libraryID, through: 3) }
        }
    }

    /// The credential of anna-phone (readWrite) in a new library "family" of `store`.
    private func annaInFamily(_ store: PostgresServerStore) throws -> Credential {
        try store.createLibrary(named: "family", uuid: nil, at: 1)
        let token = try DeviceToken.generate()
        try store.registerToken(hash: DeviceToken.hash(token), library: "family", device: "anna-phone", scope: .readWrite, at: 1)
        return try #require(try store.authenticate(tokenHash: DeviceToken.hash(token)))
    }

    /// Pushes `count` new events of `factory` as `credential`, through the push rules.
    private func push(_ count: Int, from factory: inout EventFactory, as credential: Credential, to store: PostgresServerStore) throws {
        let rules = PushRules()
        _ = try store.push(
            factory.make(count).map { rules.candidate(for: .valid(WireEvent($0)), credential: credential) }, for: credential,
            receivedAt: 10, rules: rules)
    }
}
