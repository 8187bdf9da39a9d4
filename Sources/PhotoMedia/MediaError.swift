/// A failure of the media layer: bytes that are not a usable photo or video, a file that is not
/// there, a stored resource whose bytes no longer match their hash, or a file-system failure.
///
/// `kind` is what callers match on; the library maps it to its own PhotoKit-style codes
/// (`invalidResource` → `invalidResource`, `missingResource` → `missingResource`). `description`
/// names the resource and says what is wrong, e.g.
/// `IMG_1.jpg: truncated JPEG: the image data ends before the last row; copy the file again from
/// its source`.
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

    /// Why the media layer refused a path or its bytes, for ``Kind/invalidResource``: an import
    /// reports bytes that are no photo or video at all as *not media*, a path it cannot or must
    /// not read as *skipped*, and a photo or video the decoder refuses as *failed*.
    public enum Refusal: String, Equatable, Sendable {
        /// The bytes are not a supported photo or video (an unknown format, an audio file, a
        /// raw image, an AVIF image sequence…); the reason names what they look like.
        case notMedia
        /// A supported format whose bytes the decoder refuses: damaged, truncated, or empty.
        case damaged
        /// The path is not a regular file (a folder, a FIFO, a device or a socket).
        case notRegularFile
        /// The file cannot be read (no permission, an I/O error).
        case unreadable
    }

    /// What went wrong.
    public var kind: Kind
    /// For ``Kind/invalidResource``, which kind of refusal; nil for the other kinds.
    public var refusal: Refusal?
    /// The resource concerned: a file name, a content hash, or a path.
    public var resource: String
    /// Why, in words a user can act on.
    public var reason: String

    /// Creates an error of `kind` about `resource`; `refusal` says more about an `invalidResource`.
    public init(_ kind: Kind, resource: String, reason: String, refusal: Refusal? = nil) {
        self.kind = kind
        self.refusal = refusal
        self.resource = resource
        self.reason = reason
    }

    /// `resource: reason`.
    public var description: String { "\(resource): \(reason)" }
}

/// Why a decoder refused some bytes; the inspector turns it into a `MediaError` that names the
/// file.
struct InvalidMedia: Error {
    let reason: String
    let refusal: MediaError.Refusal
    init(_ reason: String, _ refusal: MediaError.Refusal = .damaged) {
        self.reason = reason
        self.refusal = refusal
    }
}
