import Foundation
import LedgerCore
import SyncProtocol
import Testing

@testable import PhotoLedgerServer

/// The blob directory gathers an upload's pieces and writes them a buffer at a time: the bytes
/// stored must be exactly those sent, whatever the body's size against the buffer's.
@Suite("Blob uploads written a buffer at a time")
struct BlobUploadBufferTests {
    @Test("blobs of one byte less than, exactly, and one byte more than whole buffers are stored and served whole")
    func sizesAroundTheBuffer() async throws {
        let fixture = try ServerFixture()
        let client = fixture.client()
        var random = SeededRandomNumberGenerator(seed: 11)
        let buffer = BlobFileUpload.bufferBytes
        for size in [buffer - 1, buffer, buffer + 1, 3 * buffer, 3 * buffer + 7] {
            let blob = (0..<size).map { _ in UInt8.random(in: 0...255, using: &random) }
            let hash = Hex.encode(SHA256.hash(blob))
            let path = SyncRoutes.blob(library: "family", hash: hash)
            #expect(try await client.send("PUT", path, body: blob, contentType: "application/octet-stream").status == 201, "\(size)")
            #expect(try await client.send("GET", path).body == blob, "\(size)")
            let stored = try Data(contentsOf: URL(fileURLWithPath: "\(fixture.blobPath)/\(hash.prefix(2))/\(hash)"))
            #expect(stored == Data(blob), "\(size)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: fixture.blobPath + "/tmp").isEmpty)
    }

    @Test("a blob of several buffers whose last byte differs from its name's is refused, and nothing of it is kept")
    func mismatchAfterSeveralBuffers() async throws {
        let fixture = try ServerFixture()
        let client = fixture.client()
        var random = SeededRandomNumberGenerator(seed: 12)
        let blob = (0..<(2 * BlobFileUpload.bufferBytes + 100)).map { _ in UInt8.random(in: 0...255, using: &random) }
        var sent = blob
        sent[sent.count - 1] ^= 0xFF
        let path = SyncRoutes.blob(library: "family", hash: Hex.encode(SHA256.hash(blob)))
        let reply = try await client.send("PUT", path, body: sent, contentType: "application/octet-stream")
        #expect(reply.status == 400)
        #expect(reply.errorCode == "hashMismatch")
        #expect(reply.errorMessage.contains(Hex.encode(SHA256.hash(sent))), "\(reply.errorMessage)")
        #expect(try await client.send("HEAD", path).status == 404)
        #expect(try FileManager.default.contentsOfDirectory(atPath: fixture.blobPath).sorted() == ["tmp"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: fixture.blobPath + "/tmp").isEmpty)
    }
}
