import Foundation
import SyncProtocol
import Testing

@Suite("Byte ranges and resumable upload fields")
struct ByteRangeTests {
    @Test(
        "a Range header reads as the part of the body it asks for, cut to the body",
        arguments: [
            ("bytes=0-499", ByteRange.part(0..<500)), ("bytes=500-", .part(500..<1000)), ("bytes=-300", .part(700..<1000)),
            ("bytes=990-2000", .part(990..<1000)), ("bytes=-5000", .part(0..<1000)), (" BYTES= 7 - 9 ", .part(7..<10)),
            ("bytes=1000-", .unsatisfiable), ("bytes=-0", .unsatisfiable), ("bytes=0-1,5-6", .whole), ("lines=1-2", .whole),
            ("bytes=9-3", .whole), ("bytes=x-", .whole), ("bytes=-", .whole), ("bytes=18446744073709551616-", .whole),
        ])
    func rangeHeader(header: String, expected: ByteRange) {
        #expect(ByteRange.parse(header, size: 1000) == expected)
        #expect(ByteRange.parse(nil, size: 1000) == .whole)
    }

    @Test(
        "a position with a sign is a syntax error, so the whole body is sent",
        arguments: ["bytes=+5-", "bytes=-+5", "bytes=0--0", "bytes=+0-+9"])
    func signedPositions(header: String) {
        // Swift's integer parsing takes "+5" and "-0": a position is digits only (RFC 9110).
        #expect(ByteRange.parse(header, size: 1000) == .whole)
        #expect(ByteRange.openStart(header) == nil)
    }

    @Test("the server's open ranges and the answers' Content-Range read back as what was written")
    func formattedRanges() {
        for start: Int64 in [0, 1, 65536, Int64.max] {
            #expect(ByteRange.openStart(ByteRange.openRange(from: start)) == start)
        }
        #expect(ByteRange.openStart("bytes=5-9") == nil && ByteRange.openStart("bytes=9223372036854775808-") == nil)
        #expect(ByteRange.part(100..<1000).contentRange(size: 1000) == "bytes 100-999/1000")
        #expect(ByteRange.unsatisfiable.contentRange(size: 1000) == "bytes */1000")
        #expect(ByteRange.part(0..<0).contentRange(size: 0) == "bytes */0")
        #expect(ByteRange.whole.contentRange(size: 1000) == nil)
    }

    @Test("resumable upload fields read back as the client writes them, and are checked against the body and the limit")
    func uploadFields() throws {
        let fields = ResumableUploadFields(offset: 65536, length: 1 << 20)
        let headers = fields.headerFields
        #expect(headers == [SyncRoutes.uploadOffsetField: "65536", SyncRoutes.uploadLengthField: "1048576"])
        let read = try ResumableUploadFields.read(
            offset: headers[SyncRoutes.uploadOffsetField], length: headers[SyncRoutes.uploadLengthField], bodyLength: (1 << 20) - 65536,
            maximumBlobBytes: 1 << 30)
        #expect(read == fields)
        #expect(
            try ResumableUploadFields.read(offset: " 0 ", length: "10", bodyLength: nil, maximumBlobBytes: 10)
                == .init(offset: 0, length: 10))

        let refusals: [(String?, String?, UInt64?, UploadFieldError.Kind, String)] = [
            ("0", nil, nil, .invalid, "a resumable upload needs the field 'Upload-Length' (a number of bytes)"),
            (nil, "10", nil, .invalid, "a resumable upload needs the field 'Upload-Offset' (a number of bytes)"),
            ("+1", "10", nil, .invalid, "field 'Upload-Offset': must be a whole number of bytes, not '+1'"),
            ("0", "9223372036854775808", nil, .invalid, "field 'Upload-Length': must be a whole number of bytes"),
            ("0", "101", nil, .tooLarge, "the blob (101 bytes) is larger than the server's limit of 100 bytes"),
            ("11", "10", nil, .invalid, "field 'Upload-Offset': 11 is beyond the blob's Upload-Length of 10 bytes"),
            ("5", "10", 6, .invalid, "the body (6 bytes) goes beyond the blob's Upload-Length of 10 bytes from byte 5"),
        ]
        for (offset, length, body, kind, message) in refusals {
            #expect {
                _ = try ResumableUploadFields.read(offset: offset, length: length, bodyLength: body, maximumBlobBytes: 100)
            } throws: { error in
                (error as? UploadFieldError).map { $0.kind == kind && $0.message.hasPrefix(message) } ?? false
            }
        }
    }
}
