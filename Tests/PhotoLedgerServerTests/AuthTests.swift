import Foundation
import LedgerCore
import LedgerStore
import PhotoLedgerServer
import SyncProtocol
import Testing

@Suite("Authentication and scopes")
struct AuthTests {
    @Test("no token, a wrong token and a revoked token get 401 with WWW-Authenticate")
    func unauthorized() async throws {
        let fixture = try ServerFixture()
        let path = SyncRoutes.pull(library: "family", since: 0)
        let none = try await fixture.client(nil).send("GET", path)
        #expect(none.status == 401)
        #expect(none.errorCode == "unauthorized")
        #expect(none.header("WWW-Authenticate")?.hasPrefix("Bearer") == true)
        let wrong = try await fixture.client(nil).with(token: "plt_not-a-real-token").send("GET", path)
        #expect(wrong.status == 401)
        let malformed = try await fixture.client(nil).send("GET", path, headers: ["Authorization": "Basic YW5uYTpwdw=="])
        #expect(malformed.status == 401)
        #expect(try await fixture.client().send("GET", path).status == 200)
        #expect(try fixture.store.revokeTokens(library: "family", device: "anna-phone", at: 2) == 1)
        let revoked = try await fixture.client().send("GET", path)
        #expect(revoked.status == 401)
        #expect(try fixture.store.devices(library: "family").first { $0.device == "anna-phone" }?.revoked == true)
    }

    @Test("a token of another library gets 403 that reveals nothing about the library")
    func otherLibrary() async throws {
        let fixture = try ServerFixture()
        let client = fixture.client("work-phone")
        let existing = try await client.send("GET", SyncRoutes.pull(library: "family", since: 0))
        let missing = try await client.send("GET", SyncRoutes.pull(library: "no-such-library", since: 0))
        #expect(existing.status == 403)
        #expect(missing.status == 403)
        #expect(existing.body == missing.body)
        #expect(!existing.errorMessage.contains("family"))
        var factory = EventFactory(device: "work-phone")
        #expect(try await client.push(factory.make(1), device: "work-phone", library: "family").status == 403)
        #expect(try await client.push(factory.make(1), device: "work-phone", library: "work").status == 200)
    }

    @Test("addOnly pushes asset creations and uploads blobs, but cannot pull, download or push other types")
    func addOnly() async throws {
        let fixture = try ServerFixture()
        let client = fixture.client("kiosk")
        var factory = EventFactory(device: "kiosk")
        let created = try await client.pushResponse(
            [factory.make(type: "asset.created"), factory.make(type: "asset.created")], device: "kiosk")
        #expect(created.results.map(\.status) == [.stored(serverSequence: 1), .stored(serverSequence: 2)])
        let rename = try await client.pushResponse([factory.make(type: "album.renamed")], device: "kiosk")
        guard case .rejected(let reason) = rename.results[0].status else { Issue.record("expected a rejection"); return }
        #expect(reason.contains("addOnly"))
        #expect(rename.lastDeviceSequence == 3)
        #expect(try await client.pull(since: 0).status == 403)
        let blob = Array("kiosk photo".utf8)
        let hash = Hex.encode(SHA256.hash(blob))
        let blobPath = SyncRoutes.blob(library: "family", hash: hash)
        #expect(try await client.send("PUT", blobPath, body: blob, contentType: nil).status == 201)
        #expect(try await client.send("HEAD", blobPath).status == 200)
        #expect(try await client.send("GET", blobPath).status == 403)
        let missing = try await client.send(
            "POST", SyncRoutes.missingBlobs(library: "family"), body: MissingBlobsRequest(hashes: [hash]).encoded())
        #expect(try missing.decode(MissingBlobsResponse.self).missing.isEmpty)
        #expect(try await client.send("GET", SyncRoutes.chain(library: "family")).status == 403)
    }

    @Test("readOnly pulls and downloads, but cannot push or upload")
    func readOnly() async throws {
        let fixture = try ServerFixture()
        let client = fixture.client("frame")
        var factory = EventFactory(device: "frame")
        let push = try await client.push(factory.make(1), device: "frame")
        #expect(push.status == 403)
        #expect(push.errorCode == "forbidden")
        #expect(try await client.pull(since: 0).status == 200)
        let blob = Array("frame".utf8)
        let path = SyncRoutes.blob(library: "family", hash: Hex.encode(SHA256.hash(blob)))
        #expect(try await client.send("PUT", path, body: blob, contentType: nil).status == 403)
        #expect(try await fixture.client().send("PUT", path, body: blob, contentType: nil).status == 201)
        #expect(try await client.send("GET", path).body == blob)
    }

    @Test("tokens are random, prefixed, and stored only as their hash")
    func tokenStorage() throws {
        let fixture = try ServerFixture()
        let token = fixture.tokens["anna-phone"]!
        #expect(token.hasPrefix("plt_") && token.count == 47)
        #expect(Set(fixture.tokens.values).count == fixture.tokens.count)
        let file = try Data(contentsOf: URL(fileURLWithPath: fixture.databasePath))
        #expect(file.range(of: Data(token.utf8)) == nil)
        let database = try DatabaseQueue(path: fixture.databasePath)
        let stored = try database.read { db in try db.rows("SELECT token_hash FROM tokens") { $0.blob(0) } }
        #expect(stored.contains(DeviceToken.hash(token)))
    }
}

@Suite("Blobs over HTTP")
struct BlobTests {
    @Test("upload, download, HEAD and missing")
    func lifecycle() async throws {
        let fixture = try ServerFixture()
        let client = fixture.client()
        var random = SeededRandomNumberGenerator(seed: 3)
        let blob = (0..<3_000_000).map { _ in UInt8.random(in: 0...255, using: &random) }
        let hash = Hex.encode(SHA256.hash(blob))
        let path = SyncRoutes.blob(library: "family", hash: hash)
        let absent = Hex.encode(SHA256.hash([1, 2, 3]))
        #expect(try await client.send("HEAD", path).status == 404)
        let before = try await client.send(
            "POST", SyncRoutes.missingBlobs(library: "family"), body: MissingBlobsRequest(hashes: [hash, absent]).encoded())
        #expect(try before.decode(MissingBlobsResponse.self).missing == [hash, absent])
        #expect(try await client.send("PUT", path, body: blob, contentType: "application/octet-stream").status == 201)
        #expect(try await client.send("PUT", path, body: blob, contentType: nil).status == 200)
        let head = try await client.send("HEAD", path)
        #expect(head.status == 200)
        #expect(head.header("Content-Length") == "\(blob.count)")
        let download = try await client.send("GET", path)
        #expect(download.status == 200)
        #expect(download.body == blob)
        let after = try await client.send(
            "POST", SyncRoutes.missingBlobs(library: "family"), body: MissingBlobsRequest(hashes: [hash, absent]).encoded())
        #expect(try after.decode(MissingBlobsResponse.self).missing == [absent])
        #expect(FileManager.default.fileExists(atPath: "\(fixture.blobPath)/\(hash.prefix(2))/\(hash)"))
        // Another library cannot see the blob, even by its hash.
        #expect(try await fixture.client("work-phone").send("HEAD", SyncRoutes.blob(library: "work", hash: hash)).status == 404)
    }

    @Test("a blob whose bytes do not match its name is refused and nothing is stored")
    func hashMismatch() async throws {
        let fixture = try ServerFixture()
        let client = fixture.client()
        let name = Hex.encode(SHA256.hash(Array("expected".utf8)))
        let path = SyncRoutes.blob(library: "family", hash: name)
        let reply = try await client.send("PUT", path, body: Array("something else".utf8), contentType: nil)
        #expect(reply.status == 400)
        #expect(reply.errorCode == "hashMismatch")
        #expect(try await client.send("HEAD", path).status == 404)
        let leftovers = try FileManager.default.subpathsOfDirectory(atPath: fixture.blobPath).filter { $0 != "tmp" }
        #expect(leftovers.isEmpty)
    }

    @Test("blob names that are not a lowercase SHA-256 are refused, path separators included")
    func invalidNames() async throws {
        let fixture = try ServerFixture()
        let client = fixture.client()
        let upper = Hex.encode(SHA256.hash([1])).uppercased()
        #expect(try await client.send("GET", SyncRoutes.blob(library: "family", hash: upper)).status == 400)
        let traversal = try await client.send("GET", "/v1/libraries/family/blobs/..%2F..%2F..%2Fetc%2Fpasswd")
        #expect(traversal.status == 400)
        #expect(traversal.errorMessage.contains("hash"))
        let raw = try rawExchange(
            port: fixture.server.port,
            Array("GET /v1/libraries/family/blobs/../../../../etc/passwd HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".utf8))
        #expect(!raw.contains("root:"))
        #expect(raw.hasPrefix("HTTP/1.1 4"))
    }
}
