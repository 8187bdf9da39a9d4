import Foundation

/// The part of a body a `Range` header asks for (RFC 9110, section 14), and the
/// `Content-Range` of the answer. The sync server honours only ``openStart(_:)`` on blob
/// downloads (a download resumed after N bytes); the web view serves ``parse(_:size:)``'s
/// ranges of originals, for video players that seek.
public enum ByteRange: Sendable, Hashable {
    /// No range asked, or one the server may ignore (another unit, a syntax error, several
    /// ranges): the whole body, 200.
    case whole
    /// The bytes of `range` (upper bound excluded), within the body: 206.
    case part(Range<UInt64>)
    /// A range that starts at or past the end of the body: 416.
    case unsatisfiable

    /// Reads a `Range` header against a body of `size` bytes: `bytes=0-499`, `bytes=500-`
    /// (to the end), `bytes=-500` (the last 500). A last byte past the end is cut to the end;
    /// positions are decimal digits only, so anything else (a sign, another unit, several
    /// ranges) asks for the whole body.
    public static func parse(_ header: String?, size: UInt64) -> ByteRange {
        guard let header, let specification = specification(of: header) else { return .whole }
        // Several ranges would need a multipart answer; sending the whole body is allowed instead.
        guard !specification.contains(","), let dash = specification.firstIndex(of: "-") else { return .whole }
        let first = specification[..<dash].trimmingCharacters(in: .whitespaces)
        let last = specification[specification.index(after: dash)...].trimmingCharacters(in: .whitespaces)
        if first.isEmpty {
            // A suffix: the last N bytes.
            guard let count = position(last) else { return .whole }
            guard count > 0, size > 0 else { return .unsatisfiable }
            return .part((size - min(count, size))..<size)
        }
        guard let start = position(first) else { return .whole }
        let end: UInt64
        if last.isEmpty {
            end = size
        } else {
            guard let final = position(last), final >= start else { return .whole }
            end = final >= size ? size : final + 1
        }
        guard start < size else { return .unsatisfiable }
        return .part(start..<end)
    }

    /// The start of a `bytes=N-` range (one range, open-ended), or nil for any other form: the
    /// only form the sync server honours, to resume a blob download.
    public static func openStart(_ header: String) -> Int64? {
        guard let specification = specification(of: header), specification.hasSuffix("-") else { return nil }
        let digits = specification.dropLast().trimmingCharacters(in: .whitespaces)
        return position(digits).flatMap { Int64(exactly: $0) }
    }

    /// The `Range` header that resumes a download after `offset` bytes: `bytes=N-`.
    public static func openRange(from offset: Int64) -> String { "bytes=\(offset)-" }

    /// The answer's `Content-Range` for a body of `size` bytes: `bytes FIRST-LAST/SIZE` for a
    /// part, `bytes */SIZE` for an unsatisfiable range (an empty part included), nil for the
    /// whole body.
    public func contentRange(size: UInt64) -> String? {
        switch self {
        case .whole: nil
        case .part(let range) where !range.isEmpty: "bytes \(range.lowerBound)-\(range.upperBound - 1)/\(size)"
        case .part, .unsatisfiable: "bytes */\(size)"
        }
    }

    /// What follows `bytes=`, without blanks around it, or nil for another unit.
    private static func specification(of header: String) -> String? {
        let text = header.trimmingCharacters(in: .whitespaces)
        guard text.lowercased().hasPrefix("bytes=") else { return nil }
        return text.dropFirst("bytes=".count).trimmingCharacters(in: .whitespaces)
    }

    /// A byte position: one or more ASCII digits, nil beyond 2^64 - 1.
    private static func position(_ text: String) -> UInt64? {
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return UInt64(text)
    }
}

/// The fields of a resumable upload's `PUT …/uploads/{sha256}` (``SyncRoutes/uploadOffsetField``,
/// ``SyncRoutes/uploadLengthField``): the byte of the blob the body starts at and the blob's
/// whole size.
public struct ResumableUploadFields: Sendable, Hashable {
    /// The byte of the blob the body starts at: the bytes the server holds.
    public var offset: Int64
    /// The blob's whole size, in bytes.
    public var length: Int64

    /// Fields for a body that starts at `offset` of a blob of `length` bytes.
    public init(offset: Int64, length: Int64) {
        self.offset = offset
        self.length = length
    }

    /// The header fields a client sends, by name.
    public var headerFields: [String: String] {
        [SyncRoutes.uploadOffsetField: "\(offset)", SyncRoutes.uploadLengthField: "\(length)"]
    }

    /// Reads the fields as the server receives them (`offset` and `length` are the values of
    /// the two header fields, nil when absent) and checks them against the body's declared
    /// length and the server's largest blob: the offset within the blob, the body within what
    /// is left of it.
    ///
    /// - Throws: ``UploadFieldError`` naming the field and what is wrong with it.
    public static func read(offset: String?, length: String?, bodyLength: UInt64?, maximumBlobBytes: Int64) throws(UploadFieldError)
        -> ResumableUploadFields
    {
        let length = try byteCount(SyncRoutes.uploadLengthField, length)
        let offset = try byteCount(SyncRoutes.uploadOffsetField, offset)
        guard length <= maximumBlobBytes else {
            throw UploadFieldError(
                .tooLarge, "the blob (\(length) bytes) is larger than the server's limit of \(maximumBlobBytes) bytes")
        }
        guard offset <= length else {
            throw UploadFieldError(
                .invalid,
                "field '\(SyncRoutes.uploadOffsetField)': \(offset) is beyond the blob's \(SyncRoutes.uploadLengthField) of \(length) bytes"
            )
        }
        if let bodyLength, bodyLength > UInt64(length - offset) {
            throw UploadFieldError(
                .invalid,
                "the body (\(bodyLength) bytes) goes beyond the blob's \(SyncRoutes.uploadLengthField) of \(length) bytes from byte \(offset)"
            )
        }
        return ResumableUploadFields(offset: offset, length: length)
    }

    /// A whole number of bytes: decimal digits, blanks around them allowed.
    private static func byteCount(_ field: String, _ text: String?) throws(UploadFieldError) -> Int64 {
        guard let text else { throw UploadFieldError(.invalid, "a resumable upload needs the field '\(field)' (a number of bytes)") }
        let digits = text.trimmingCharacters(in: .whitespaces)
        guard !digits.isEmpty, digits.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let value = Int64(digits) else {
            throw UploadFieldError(.invalid, "field '\(field)': must be a whole number of bytes, not '\(text)'")
        }
        return value
    }
}

/// Why the fields of a resumable upload were refused.
public struct UploadFieldError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of refusal it is.
    public enum Kind: Sendable, Hashable {
        /// A field is missing or malformed, or the body does not fit in the blob: 400.
        case invalid
        /// The blob is larger than the server takes: 413.
        case tooLarge
    }

    /// What kind of refusal it is.
    public let kind: Kind
    /// What is wrong, naming the field.
    public let message: String

    init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }
}
