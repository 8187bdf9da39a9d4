import Foundation
import LedgerCore
import PhotoLedgerServer
import SyncProtocol
import Testing

@Suite("Blob downloads resumed from a byte offset")
struct BlobRangeTests {
    @Test("Range bytes=N- answers the rest with 206 and Content-Range; a start beyond the end 416; other forms the whole blob")
    func ranges() async throws {
        let fixture = try ServerFixture()
        let client = fixture.client()
        let blob = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 8) }
        let path = SyncRoutes.blob(library: "family", hash: Hex.encode(SHA256.hash(blob)))
        #expect(try await client.send("PUT", path, body: blob, contentType: nil).status == 201)

        let whole = try await client.send("GET", path)
        #expect(whole.status == 200)
        #expect(whole.body == blob)
        #expect(whole.header("Accept-Ranges") == "bytes")

        let rest = try await client.send("GET", path, headers: ["Range": "bytes=40000-"])
        #expect(rest.status == 206)
        #expect(rest.header("Content-Range") == "bytes 40000-99999/100000")
        #expect(rest.body == Array(blob[40000...]))
        #expect(try await client.send("GET", path, headers: ["Range": "bytes=99999-"]).body == [blob[99999]])

        let beyond = try await client.send("GET", path, headers: ["Range": "bytes=100000-"])
        #expect(beyond.status == 416)
        #expect(beyond.header("Content-Range") == "bytes */100000")
        #expect(beyond.errorMessage.contains("download it again from the start"), "\(beyond.errorMessage)")

        // Forms a resumed download never sends are ignored, as HTTP allows: the whole blob.
        for form in ["bytes=0-10", "bytes=-5", "bytes=5-,10-", "items=3-", "bytes=x-", "bytes=99999999999999999999-"] {
            let reply = try await client.send("GET", path, headers: ["Range": form])
            #expect(reply.status == 200, "\(form)")
            #expect(reply.body == blob, "\(form)")
        }
        // A range never reveals a blob of another library, nor one that does not exist.
        let other = try await fixture.client("work-phone").send(
            "GET", SyncRoutes.blob(library: "work", hash: Hex.encode(SHA256.hash(blob))), headers: ["Range": "bytes=5-"])
        #expect(other.status == 404)
    }
}
