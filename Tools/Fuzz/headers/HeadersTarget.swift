import Foundation
import FuzzSupport
import SyncProtocol
import SyncTransport

/// The header fields of blob transfers, read without a server: `Range` as the web view reads it
/// (`ByteRange.parse`) and as the sync server reads it on blob downloads (`ByteRange.openStart`),
/// the `Content-Range` of a resumed download as the client reads it
/// (`HTTPHeaders.contentRangeStart`), and the `Upload-Offset` and `Upload-Length` of a resumable
/// upload with the body's length and the server's limit (`ResumableUploadFields.read`).
///
/// The first byte chooses the reader. A range accepted lies within the body; the server's and
/// the web view's readings of one `Range` agree; what a formatter writes (`Range: bytes=N-`,
/// `Content-Range`, the upload fields) reads back as what was formatted; upload fields accepted
/// keep the body within the blob and the blob within the limit.
@main
enum HeadersTarget: FuzzTarget {
    static func seeds() -> [Seed] {
        // File names of letters, digits and dashes.
        func named(_ text: String) -> String {
            String(text.map { $0.isASCII && ($0.isLetter || $0.isNumber) ? $0 : "-" })
        }
        func range(_ size: UInt64, _ header: String, refused: Bool = false) -> Seed {
            var writer = FuzzInputWriter()
            writer.byte(0)
            writer.uint64(size)
            writer.raw(Array(header.utf8))
            return Seed(name: named("range-\(size)-\(header)"), bytes: writer.bytes, refused: refused)
        }
        func upload(_ name: String, offset: String?, length: String?, body: UInt64?, maximum: UInt64, refused: Bool = false) -> Seed {
            var writer = FuzzInputWriter()
            writer.byte(1)
            writer.byte((offset == nil ? 0 : 1) | (length == nil ? 0 : 2) | (body == nil ? 0 : 4))
            writer.uint64(body ?? 0)
            writer.uint64(maximum)
            writer.counted(Array((offset ?? "").utf8))
            writer.counted(Array((length ?? "").utf8))
            return Seed(name: "upload-\(name)", bytes: writer.bytes, refused: refused)
        }
        func contentRange(_ text: String, refused: Bool = false) -> Seed {
            Seed(name: named("content-range-\(text)"), bytes: [2] + Array(text.utf8), refused: refused)
        }
        func formatted(_ name: String, _ values: [UInt64]) -> Seed {
            var writer = FuzzInputWriter()
            writer.byte(3)
            for value in values { writer.uint64(value) }
            return Seed(name: "formatted-\(name)", bytes: writer.bytes)
        }
        return [
            range(1000, "bytes=0-499"), range(1000, "bytes=500-"), range(1000, "bytes=-500"), range(1000, "bytes=990-2000"),
            range(1000, "bytes=1000-"), range(0, "bytes=-0"), range(1000, " Bytes= 7 - "), range(1000, "bytes=0-1,5-6", refused: true),
            range(UInt64.max, "bytes=18446744073709551614-"), range(1000, "lines=1-2", refused: true),
            range(1000, "bytes=+5-", refused: true),
            upload("start", offset: "0", length: "1048576", body: 1_048_576, maximum: 1 << 30),
            upload("resume", offset: " 65536 ", length: "1048576", body: nil, maximum: 1 << 30),
            upload("largest", offset: "9223372036854775807", length: "9223372036854775807", body: 0, maximum: UInt64(Int64.max)),
            upload("no-offset", offset: nil, length: "10", body: nil, maximum: 100, refused: true),
            upload("sign", offset: "+1", length: "10", body: nil, maximum: 100, refused: true),
            upload("too-large", offset: "0", length: "101", body: nil, maximum: 100, refused: true),
            upload("body-beyond", offset: "5", length: "10", body: 6, maximum: 100, refused: true),
            contentRange("bytes 100-999/1000"), contentRange("BYTES 0-0/1"), contentRange("bytes */1000", refused: true),
            formatted("small", [10, 20, 30]), formatted("largest", [UInt64(Int64.max) - 1, UInt64(Int64.max) - 1, UInt64(Int64.max)]),
        ]
    }

    static func accepts(_ input: [UInt8]) -> Bool {
        var fuzz = FuzzInput(input)
        switch fuzz.byte() % 4 {
        case 0:
            let size = fuzz.uint64()
            return ByteRange.parse(String(decoding: fuzz.rest(), as: UTF8.self), size: size) != .whole
        case 1: return (try? readUpload(&fuzz)) != nil
        case 2: return HTTPHeaders.contentRangeStart(String(decoding: fuzz.rest(), as: UTF8.self)) != nil
        default: return true
        }
    }

    static func run(_ input: [UInt8]) {
        var fuzz = FuzzInput(input)
        switch fuzz.byte() % 4 {
        case 0:
            let size = fuzz.uint64()
            checkRange(String(decoding: fuzz.rest(), as: UTF8.self), size: size)
        case 1: checkUpload(&fuzz)
        case 2:
            let text = String(decoding: fuzz.rest(), as: UTF8.self)
            if let start = HTTPHeaders.contentRangeStart(text) { require(start >= 0, "Content-Range '\(text)' starts at \(start)") }
        default: checkFormatted(&fuzz)
        }
    }

    /// `header` against a body of `size` bytes, as the web view and the sync server read it.
    private static func checkRange(_ header: String, size: UInt64) {
        let range = ByteRange.parse(header, size: size)
        switch range {
        case .whole: break
        case .part(let part):
            require(!part.isEmpty && part.upperBound <= size, "'\(header)' gives \(part) of a body of \(size) bytes")
            let last = part.upperBound - 1
            require(
                ByteRange.parse("bytes=\(part.lowerBound)-\(last)", size: size) == range, "\(part) does not read back from its own form")
            let contentRange = range.contentRange(size: size)!
            require(
                HTTPHeaders.contentRangeStart(contentRange) == Int64(exactly: part.lowerBound),
                "the client reads '\(contentRange)' as another start than \(part.lowerBound)")
        case .unsatisfiable:
            require(range.contentRange(size: size) == "bytes */\(size)", "an unsatisfiable range's Content-Range")
        }
        guard let start = ByteRange.openStart(header) else { return }
        // What the sync server honours, the web view honours the same way.
        require(start >= 0, "'\(header)' starts at \(start)")
        let expected: ByteRange = UInt64(start) < size ? .part(UInt64(start)..<size) : .unsatisfiable
        require(range == expected, "the server reads '\(header)' from byte \(start), the web view as \(range)")
        require(ByteRange.openStart(ByteRange.openRange(from: start)) == start, "bytes=\(start)- does not read back")
    }

    /// The upload fields as they arrive: which are present, the body's length, the server's
    /// limit, the two texts.
    private static func readUpload(_ fuzz: inout FuzzInput) throws(UploadFieldError) -> (ResumableUploadFields, UInt64?, Int64) {
        let present = fuzz.byte()
        let body = fuzz.uint64()
        let maximum = Int64(truncatingIfNeeded: fuzz.uint64() & UInt64(Int64.max))
        let offset = String(decoding: fuzz.counted(), as: UTF8.self)
        let length = String(decoding: fuzz.counted(), as: UTF8.self)
        let bodyLength = present & 4 != 0 ? body : nil
        let fields = try ResumableUploadFields.read(
            offset: present & 1 != 0 ? offset : nil, length: present & 2 != 0 ? length : nil, bodyLength: bodyLength,
            maximumBlobBytes: maximum)
        return (fields, bodyLength, maximum)
    }

    private static func checkUpload(_ fuzz: inout FuzzInput) {
        let read: (fields: ResumableUploadFields, body: UInt64?, maximum: Int64)
        do { read = try readUpload(&fuzz) } catch {
            require(!error.message.isEmpty, "an upload refused without a reason")
            return
        }
        let fields = read.fields
        require(
            fields.offset >= 0 && fields.offset <= fields.length && fields.length <= read.maximum,
            "accepted an offset of \(fields.offset) in a blob of \(fields.length) bytes, limit \(read.maximum)")
        require(read.body.map { $0 <= UInt64(fields.length - fields.offset) } ?? true, "accepted a body beyond the blob")
        checkUploadFormat(fields, maximum: read.maximum)
    }

    /// The fields a client writes read back as themselves.
    private static func checkUploadFormat(_ fields: ResumableUploadFields, maximum: Int64) {
        let headers = fields.headerFields
        let again = try? ResumableUploadFields.read(
            offset: headers[SyncRoutes.uploadOffsetField], length: headers[SyncRoutes.uploadLengthField],
            bodyLength: UInt64(fields.length - fields.offset), maximumBlobBytes: maximum)
        require(again == fields, "the upload fields \(headers) do not read back as \(fields)")
    }

    /// Values the formatters write, from three numbers: a `Content-Range` of a body and upload
    /// fields, each read back.
    private static func checkFormatted(_ fuzz: inout FuzzInput) {
        let values = [fuzz.uint64(), fuzz.uint64(), fuzz.uint64()].sorted()
        let (start, last, size) = (values[0], values[1], values[2])
        if last < size {
            let contentRange = ByteRange.part(start..<last + 1).contentRange(size: size)!
            require(
                HTTPHeaders.contentRangeStart(contentRange) == Int64(exactly: start),
                "the client reads '\(contentRange)' as another start than \(start)")
            require(ByteRange.parse("bytes=\(start)-\(last)", size: size) == .part(start..<last + 1), "bytes=\(start)-\(last) of \(size)")
        }
        let signed = values.map { Int64(truncatingIfNeeded: $0 & UInt64(Int64.max)) }.sorted()
        checkUploadFormat(ResumableUploadFields(offset: signed[0], length: signed[1]), maximum: signed[2])
    }
}
