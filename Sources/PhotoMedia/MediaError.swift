/// A failure of the media layer: bytes that are not a usable photo or video, a file that is not
/// there, a stored resource whose bytes no longer match their hash, or a file-system failure.
///
/// `kind` is what callers match on; the library maps it to its own PhotoKit-style codes
/// (`invalidResource` → `invalidResource`, `missingResource` → `missingResource`). `description`
/// names the resource and says what is wrong, e.g.
/// `IMG_1.jpg: truncated JPEG (no image data after the header)`.
public struct MediaError: Error, Equatable, Sendable, CustomStringConvertible {
    /// What went wrong, at the level a caller acts on.
    public enum Kind: String, Equatable, Sendable {
        /// The bytes are empty, truncated, unreadable or not a supported photo or video format.
        case invalidResource
        /// The file does not exist.
        case missingResource
        /// A stored resource's bytes no longer match its SHA-256: the store's copy is damaged.
        case corruptedResource
        /// The file system refused an operation (permissions, full disk, existing destination…).
        case fileSystem
    }

    /// What went wrong.
    public var kind: Kind
    /// The resource concerned: a file name, a content hash, or a path.
    public var resource: String
    /// Why, in words a user can act on.
    public var reason: String

    /// Creates an error of `kind` about `resource`.
    public init(_ kind: Kind, resource: String, reason: String) {
        self.kind = kind
        self.resource = resource
        self.reason = reason
    }

    /// `resource: reason`.
    public var description: String { "\(resource): \(reason)" }
}

/// The reason a parser gave up on some bytes; the inspector turns it into a `MediaError` that
/// names the file.
struct InvalidMedia: Error {
    let reason: String
    init(_ reason: String) { self.reason = reason }
}
