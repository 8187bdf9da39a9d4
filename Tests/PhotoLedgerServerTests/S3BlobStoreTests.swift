import Foundation
import LedgerCore
import SyncProtocol
import Testing

@testable import PhotoLedgerServer

/// A bucket of its own for one test, in the S3-compatible server that `Tools/test.sh` starts.
struct S3TestBucket {
    static let endpointVariable = "PHOTOLEDGER_TEST_S3_ENDPOINT"
    static var environment: [String: String] { ProcessInfo.processInfo.environment }
    static var available: Bool { environment[endpointVariable].map { !$0.isEmpty } ?? false }
    static let skipReason: Comment =
        "S3 tests skipped: set PHOTOLEDGER_TEST_S3_ENDPOINT, PHOTOLEDGER_TEST_S3_ACCESS_KEY_ID and PHOTOLEDGER_TEST_S3_SECRET_ACCESS_KEY (Tools/test.sh starts a local S3 server and sets them)"

    let configuration: S3Configuration

    /// The environment a server process needs to use the bucket.
    var serverEnvironment: [String: String] {
        [
            S3Configuration.endpointVariable: configuration.endpoint.absoluteString, "AWS_REGION": configuration.region,
            "AWS_ACCESS_KEY_ID": configuration.accessKeyID, "AWS_SECRET_ACCESS_KEY": configuration.secretAccessKey,
        ]
    }

    var url: String { "s3://\(configuration.bucket)/\(configuration.prefix)" }

    init(partSize: Int = 8 << 20) throws {
        let environment = Self.environment
        var configuration = S3Configuration(
            endpoint: URL(string: environment[Self.endpointVariable] ?? "")!, region: "us-east-1",
            bucket: "photoledger-" + UUID().uuidString.lowercased().prefix(18), prefix: "blobs/test",
            accessKeyID: environment["PHOTOLEDGER_TEST_S3_ACCESS_KEY_ID"] ?? "",
            secretAccessKey: environment["PHOTOLEDGER_TEST_S3_SECRET_ACCESS_KEY"] ?? "",
            addressing: .path)
        configuration.partSize = partSize
        self.configuration = configuration
        let created = try S3Client(configuration: configuration).send("PUT", key: "", body: [])
        guard created.status == 200 else {
            throw S3Error(.failed, "cannot create the test bucket: \(created.status) \(created.errorSummary)", url: url)
        }
    }
}

/// Uploads `bytes` in chunks of `chunk` bytes and commits them as `hash`.
func upload(_ bytes: [UInt8], as hash: String, to store: any BlobStore, chunk: Int = 100_000) throws -> Bool {
    let upload = try store.beginUpload(of: hash, limit: 1 << 30)
    var offset = 0
    while offset < bytes.count {
        let end = min(offset + chunk, bytes.count)
        try bytes[offset..<end].withUnsafeBytes { try upload.append($0) }
        offset = end
    }
    return try upload.commit(as: hash)
}

/// Reads a blob's whole content.
func read(_ content: BlobContent?) throws -> [UInt8]? {
    switch content {
    case nil: return nil
    case .file(let descriptor, let offset, let size):
        defer { close(descriptor) }
        var bytes = [UInt8](repeating: 0, count: Int(size))
        _ = bytes.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, Int(size), off_t(offset)) }
        return bytes
    case .stream(let stream):
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = try buffer.withUnsafeMutableBytes { try stream.read(into: $0) }
            if count == 0 { break }
            bytes += buffer[0..<count]
        }
        #expect(Int64(bytes.count) == stream.size)
        return bytes
    }
}

func sampleBytes(_ count: Int, seed: UInt64) -> [UInt8] {
    var generator = SeededRandomNumberGenerator(seed: seed)
    return (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
}

@Suite("S3 blob store: configuration, signed requests, multipart uploads, streamed downloads")
struct S3BlobStoreTests {
    @Test("s3:// URLs and the environment make the configuration; what is missing is named, secrets never shown")
    func configuration() throws {
        let environment = [
            "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": "very-secret-key", "AWS_REGION": "eu-west-1",
            S3Configuration.endpointVariable: "http://127.0.0.1:9000",
        ]
        let configuration = try S3Configuration.fromEnvironment("s3://family-photos/server/blobs/", environment: environment)
        #expect(configuration.bucket == "family-photos" && configuration.prefix == "server/blobs" && configuration.region == "eu-west-1")
        #expect(configuration.addressing == .path)
        #expect(configuration.url(key: configuration.key(for: "ab12")) == "http://127.0.0.1:9000/family-photos/server/blobs/ab/ab12")
        #expect(!configuration.description.contains("very-secret-key"))

        var aws = environment
        aws[S3Configuration.endpointVariable] = nil
        let virtual = try S3Configuration.fromEnvironment("s3://family-photos", environment: aws)
        #expect(virtual.addressing == .virtualHosted)
        #expect(
            virtual.url(key: "ab/ab12", query: [("uploadId", "x/y+z"), ("partNumber", "2")])
                == "https://family-photos.s3.eu-west-1.amazonaws.com/ab/ab12?partNumber=2&uploadId=x/y%2Bz")

        let missing = try #require(throws: S3Error.self) { try S3Configuration.fromEnvironment("s3://family-photos", environment: [:]) }
        #expect(missing.description.contains("AWS_ACCESS_KEY_ID"))
        #expect(throws: S3Error.self) { try S3Configuration.fromEnvironment("s3://No_Such/bucket", environment: environment) }
        var badAddressing = environment
        badAddressing[S3Configuration.addressingVariable] = "sideways"
        #expect(throws: S3Error.self) { try S3Configuration.fromEnvironment("s3://family-photos", environment: badAddressing) }
    }

    @Test(
        "a small blob is stored under its hash once verified, found once, and streamed back",
        .enabled(if: S3TestBucket.available, S3TestBucket.skipReason))
    func smallBlob() throws {
        let store = try S3BlobStore(configuration: try S3TestBucket().configuration)
        let bytes = sampleBytes(300_000, seed: 1)
        let hash = Hex.encode(SHA256.hash(bytes))
        #expect(try read(store.content(of: hash)) == nil)
        #expect(try !store.holds(hash))
        #expect(try upload(bytes, as: hash, to: store))
        #expect(try store.holds(hash))
        #expect(try !upload(bytes, as: hash, to: store), "an identical blob is there already")
        #expect(try read(store.content(of: hash)) == bytes)
        // The rest from an offset, as a resumed download asks for it (a ranged GET).
        #expect(try read(store.content(of: hash, from: 123_456)) == Array(bytes[123_456...]))
        // The first bytes alone (a snapshot's header); then the blob deleted (a retired snapshot's).
        #expect(try store.prefix(of: hash, count: 66) == Array(bytes[..<66]))
        try store.remove(hash)
        #expect(try read(store.content(of: hash)) == nil)
        #expect(try !store.holds(hash))
        #expect(try store.prefix(of: hash, count: 66) == nil)
        try store.remove(hash)  // deleting a missing blob succeeds
    }

    @Test(
        "a large blob goes up in parts and appears only once its hash matched",
        .enabled(if: S3TestBucket.available, S3TestBucket.skipReason))
    func multipart() throws {
        let store = try S3BlobStore(configuration: try S3TestBucket(partSize: 5 << 20).configuration)
        let bytes = sampleBytes(12 << 20, seed: 2)
        let hash = Hex.encode(SHA256.hash(bytes))
        let pending = try store.beginUpload(of: hash, limit: 1 << 30)
        try bytes[0..<(11 << 20)].withUnsafeBytes { try pending.append($0) }
        #expect(try read(store.content(of: hash)) == nil, "parts sent are not a blob yet")
        try bytes[(11 << 20)...].withUnsafeBytes { try pending.append($0) }
        #expect(try pending.commit(as: hash))
        #expect(try read(store.content(of: hash)) == bytes)

        // Bytes that do not hash to the name they claim never take it.
        var forged = bytes
        forged[7] ^= 0xFF
        let claimed = Hex.encode(SHA256.hash(sampleBytes(10, seed: 3)))
        #expect(throws: BlobUploadFailure.hashMismatch(actual: Hex.encode(SHA256.hash(forged)))) {
            try upload(forged, as: claimed, to: store, chunk: 3 << 20)
        }
        #expect(try read(store.content(of: claimed)) == nil)
    }

    @Test(
        "wrong credentials are refused with an error that says what to check and shows no secret",
        .enabled(if: S3TestBucket.available, S3TestBucket.skipReason))
    func wrongCredentials() throws {
        var configuration = try S3TestBucket().configuration
        configuration.secretAccessKey = "not-the-secret"
        let error = try #require(throws: S3Error.self) { _ = try S3BlobStore(configuration: configuration) }
        #expect(error.code == .denied)
        #expect(error.description.contains("AWS_SECRET_ACCESS_KEY"))
        #expect(!error.description.contains("not-the-secret"))
    }

    @Test(
        "the server keeps blobs in S3: uploads checked by hash, downloads streamed",
        .enabled(if: S3TestBucket.available, S3TestBucket.skipReason))
    func serverEndToEnd() async throws {
        let bucket = try S3TestBucket(partSize: 5 << 20)
        let fixture = try ServerFixture { $0.blobStore = try? S3BlobStore(configuration: bucket.configuration) }
        let client = fixture.client()
        let blob = sampleBytes(6 << 20, seed: 4)
        let hash = Hex.encode(SHA256.hash(blob))
        #expect(try await client.send("PUT", SyncRoutes.blob(library: "family", hash: hash), body: blob, contentType: nil).status == 201)
        let fetched = try await client.send("GET", SyncRoutes.blob(library: "family", hash: hash))
        #expect(fetched.status == 200)
        #expect(fetched.body == blob)

        let wrongName = Hex.encode(SHA256.hash(Array("other".utf8)))
        let refused = try await client.send(
            "PUT", SyncRoutes.blob(library: "family", hash: wrongName), body: Array("forged".utf8), contentType: nil)
        #expect(refused.status == 400)
        #expect(try await client.send("GET", SyncRoutes.blob(library: "family", hash: wrongName)).status == 404)
        #expect(try read(S3BlobStore(configuration: bucket.configuration).content(of: wrongName)) == nil)
    }
}
