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

@Suite("A blob upload racing with the deletion of a retired copy")
struct BlobUploadRaceTests {
    @Test("an upload whose bytes were deleted before they were recorded is answered 503 with Retry-After, and its retry is kept")
    func bytesGoneBeforeRecord() async throws {
        let directory = try TemporaryDirectory()
        let blobs = VanishingBlobs(try BlobDirectory(root: directory.path("vanishing-blobs")))
        let fixture = try ServerFixture { $0.blobStore = blobs }
        let client = fixture.client()
        let blob = Array("the bytes of a retired snapshot".utf8)
        let hash = Hex.encode(SHA256.hash(blob))
        let path = SyncRoutes.blob(library: "family", hash: hash)
        blobs.vanishAfterNextCommit()
        let refused = try await client.send("PUT", path, body: blob, contentType: nil)
        #expect(refused.status == 503)
        #expect(refused.header("Retry-After") == "1")
        #expect(
            refused.errorMessage.contains("deleted while they were uploaded") && refused.errorMessage.contains("upload the blob again"),
            "\(refused.errorMessage)")
        #expect(try await client.send("GET", path).status == 404)
        #expect(fixture.logger.records.contains { $0.message == "blob deleted during its upload" })
        #expect(try await client.send("PUT", path, body: blob, contentType: nil).status == 201)
        #expect(try await client.send("GET", path).body == blob)
    }
}

/// A blob directory whose next committed blob is deleted right after its commit, as the
/// deletion of a retired copy of the same bytes would between an upload's commit and its record.
final class VanishingBlobs: BlobStore, @unchecked Sendable {
    private let base: BlobDirectory
    private let lock = NSLock()
    private var armed = false

    init(_ base: BlobDirectory) { self.base = base }

    func vanishAfterNextCommit() { lock.withLock { armed = true } }

    func beginUpload(of hash: String, limit: Int64) throws -> any BlobUpload {
        let upload = try base.beginUpload(of: hash, limit: limit)
        return lock.withLock {
            defer { armed = false }
            return armed ? VanishingUpload(upload, base) : upload
        }
    }
    func content(of hash: String, from offset: Int64) throws -> BlobContent? { try base.content(of: hash, from: offset) }
    func remove(_ hash: String) throws { try base.remove(hash) }
    func holds(_ hash: String) throws -> Bool { try base.holds(hash) }
    func removeLeftoverUploads(now: UInt64) -> (place: String, removed: Int)? { base.removeLeftoverUploads(now: now) }
    func heldBytes(of key: PartialUploadKey, now: UInt64) throws -> Int64 { try base.heldBytes(of: key, now: now) }
    func resumeUpload(_ key: PartialUploadKey, from offset: Int64, length: Int64, now: UInt64) throws(UploadResumeRefusal) -> any BlobUpload
    {
        try base.resumeUpload(key, from: offset, length: length, now: now)
    }
    func collectAbandonedUploads(now: UInt64, idleMilliseconds: UInt64) -> Int {
        base.collectAbandonedUploads(now: now, idleMilliseconds: idleMilliseconds)
    }
}

/// An upload whose blob is deleted once committed.
final class VanishingUpload: BlobUpload {
    private let upload: any BlobUpload
    private let store: BlobDirectory

    init(_ upload: any BlobUpload, _ store: BlobDirectory) {
        self.upload = upload
        self.store = store
    }

    var size: Int64 { upload.size }
    func append(_ chunk: UnsafeRawBufferPointer) throws(BlobUploadFailure) { try upload.append(chunk) }
    func commit(as hash: String) throws(BlobUploadFailure) -> Bool {
        let stored = try upload.commit(as: hash)
        try? store.remove(hash)
        return stored
    }
}
