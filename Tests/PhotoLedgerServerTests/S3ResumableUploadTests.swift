import Foundation
import LedgerCore
import SyncProtocol
import Testing

@testable import PhotoLedgerServer

/// Appends `bytes` to `upload` in chunks, as the HTTP layer hands them over.
private func feed(_ bytes: some Collection<UInt8>, to upload: any BlobUpload, chunk: Int = 100_000) throws {
    let all = Array(bytes)
    var offset = 0
    while offset < all.count {
        let end = min(offset + chunk, all.count)
        try all[offset..<end].withUnsafeBytes { try upload.append($0) }
        offset = end
    }
}

/// The multipart uploads S3 holds in the bucket, and the keys of the upload markers.
private func leftovers(_ bucket: S3TestBucket) throws -> (uploads: [String], markers: [String]) {
    let client = try S3Client(configuration: bucket.configuration)
    let uploads = try client.send("GET", key: "", query: [("uploads", "")])
    let markers = try client.send("GET", key: "", query: [("list-type", "2"), ("prefix", bucket.configuration.prefix + "/uploads/")])
    return (S3XML.blocks("UploadId", in: uploads.body), S3XML.blocks("Key", in: markers.body))
}

@Suite("S3 blob store: resumable uploads as multipart uploads that continue their parts")
struct S3ResumableUploadTests {
    let blob = sampleBytes(12 << 20, seed: 11)
    var hash: String { Hex.encode(SHA256.hash(blob)) }
    var key: PartialUploadKey { PartialUploadKey(libraryID: 1, device: "anna-phone", hash: hash) }
    let now = UInt64(Date().timeIntervalSince1970 * 1000)

    @Test(
        "an interrupted upload continues after its last part, in a new store as after a restart, and completes once the whole hashed to its name",
        .enabled(if: S3TestBucket.available, S3TestBucket.skipReason))
    func continuesItsParts() throws {
        let bucket = try S3TestBucket(partSize: 5 << 20)
        do {
            let store = try S3BlobStore(configuration: bucket.configuration)
            let upload = try store.resumeUpload(key, from: 0, length: Int64(blob.count), now: now)
            try feed(blob[..<(7 << 20)], to: upload)
            #expect(upload.size == 7 << 20)
        }  // released without a commit: the connection broke

        let restarted = try S3BlobStore(configuration: bucket.configuration)
        // The bytes after the last part are not kept.
        #expect(try restarted.heldBytes(of: key, now: now + 1) == 5 << 20)
        #expect(throws: UploadResumeRefusal.offsetMismatch(held: 5 << 20)) {
            _ = try restarted.resumeUpload(key, from: 7 << 20, length: Int64(blob.count), now: now + 2)
        }
        let upload = try restarted.resumeUpload(key, from: 5 << 20, length: Int64(blob.count), now: now + 3)
        try feed(blob[(5 << 20)...], to: upload)
        #expect(try upload.commit(as: hash))
        #expect(try read(restarted.content(of: hash)) == blob)
        #expect(try restarted.heldBytes(of: key, now: now + 4) == 0)
        let left = try leftovers(bucket)
        #expect(left.uploads.isEmpty && left.markers.isEmpty, "\(left)")
    }

    @Test(
        "held parts with wrong bytes fail the hash at the end: the multipart upload is aborted, its marker removed, nothing stored",
        .enabled(if: S3TestBucket.available, S3TestBucket.skipReason))
    func wrongBytesAreDiscarded() throws {
        let bucket = try S3TestBucket(partSize: 5 << 20)
        let store = try S3BlobStore(configuration: bucket.configuration)
        var forged = Array(blob[..<(6 << 20)])
        forged[77] ^= 0x01
        do {
            let upload = try store.resumeUpload(key, from: 0, length: Int64(blob.count), now: now)
            try feed(forged, to: upload)
        }
        let upload = try store.resumeUpload(key, from: 5 << 20, length: Int64(blob.count), now: now + 1)
        try feed(blob[(5 << 20)...], to: upload)
        #expect(throws: BlobUploadFailure.hashMismatch(actual: Hex.encode(SHA256.hash(Array(forged[..<(5 << 20)]) + blob[(5 << 20)...])))) {
            _ = try upload.commit(as: hash)
        }
        #expect(try read(store.content(of: hash)) == nil)
        #expect(try store.heldBytes(of: key, now: now + 2) == 0)
        let left = try leftovers(bucket)
        #expect(left.uploads.isEmpty && left.markers.isEmpty, "\(left)")
    }

    @Test(
        "abandoned uploads are aborted once idle past the limit, and so are multipart uploads no marker names",
        .enabled(if: S3TestBucket.available, S3TestBucket.skipReason))
    func abandonedUploadsAreAborted() throws {
        let bucket = try S3TestBucket(partSize: 5 << 20)
        let store = try S3BlobStore(configuration: bucket.configuration)
        do {
            let upload = try store.resumeUpload(key, from: 0, length: Int64(blob.count), now: now)
            try feed(blob[..<(6 << 20)], to: upload)
        }
        let idle: UInt64 = 60 * 60 * 1000
        #expect(store.collectAbandonedUploads(now: now + idle / 2, idleMilliseconds: idle) == 0)
        #expect(try store.heldBytes(of: key, now: now) == 5 << 20)  // touched at `now` again
        // A whole upload cut short by a crash leaves a multipart upload and no marker; its age is
        // what S3 reports (moto, the test server, reports a time long past).
        let orphan = try store.client.send("POST", key: bucket.configuration.key(for: hash), query: [("uploads", "")], body: [])
        #expect(orphan.status == 200)
        #expect(try leftovers(bucket).uploads.count == 2)
        #expect(store.collectAbandonedUploads(now: now + idle + 60_000, idleMilliseconds: idle) == 2)
        let left = try leftovers(bucket)
        #expect(left.uploads.isEmpty && left.markers.isEmpty, "\(left)")
        #expect(try store.heldBytes(of: key, now: now) == 0)
    }

    @Test(
        "over HTTP: an upload cut in the middle resumes from the server's offset, the last part boundary",
        .enabled(if: S3TestBucket.available, S3TestBucket.skipReason))
    func serverResumes() async throws {
        let bucket = try S3TestBucket(partSize: 5 << 20)
        let fixture = try ServerFixture { $0.blobStore = try? S3BlobStore(configuration: bucket.configuration) }
        let client = fixture.client()
        try cutUpload(
            port: fixture.server.port, token: fixture.tokens["anna-phone"]!, hash: hash, offset: 0, length: blob.count,
            body: blob[..<(8 << 20)])
        #expect(try await client.uploadStatus(hash) == UploadStatus(offset: 5 << 20))
        let done = try await client.continueUpload(blob, hash: hash, from: 5 << 20)
        #expect(done.status == 201, "\(done.errorMessage)")
        #expect(try await client.send("GET", SyncRoutes.blob(library: "family", hash: hash)).body == blob)
        let left = try leftovers(bucket)
        #expect(left.uploads.isEmpty && left.markers.isEmpty, "\(left)")
    }
}
