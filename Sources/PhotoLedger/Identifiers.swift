import Foundation
import LedgerCore

/// A local identifier in PhotoKit's form, `<UUID>/L0/001` for assets, `<UUID>/L0/040` for
/// albums and `<UUID>/L0/010` for folders (collection lists). A placeholder's identifier is the created object's final identifier, on this device
/// and on every other device after sync.
public struct LocalIdentifier: Hashable, Sendable, CustomStringConvertible {
    /// The object's UUID, shared by every device.
    public let uuid: UUID
    /// The kind of object.
    public let kind: ObjectKind

    /// Creates an identifier.
    public init(uuid: UUID, kind: ObjectKind) {
        self.uuid = uuid
        self.kind = kind
    }

    /// Parses `<UUID>/L0/001`, `<UUID>/L0/040` or `<UUID>/L0/010`; nil for anything else.
    public init?(_ text: String) {
        let utf8 = text.utf8
        guard utf8.count == 43, let kind = ObjectKind(rawValue: String(text.suffix(3))), text.dropLast(3).hasSuffix("/L0/") else {
            return nil
        }
        guard let uuid = UUID(uuidString: String(text.prefix(36))) else { return nil }
        self.uuid = uuid
        self.kind = kind
    }

    /// The identifier text.
    public var description: String { "\(uuid.uuidString)/L0/\(kind.rawValue)" }
}

/// A read-only stand-in for an object created in a change block. Its local identifier is the
/// created object's identifier; use it inside the same block (to add a new asset to an album)
/// and to fetch the object after the block commits.
public struct ObjectPlaceholder: Hashable, Sendable, ObjectReference {
    /// The identifier of the created object.
    public let localIdentifier: String
    let identifier: LocalIdentifier

    init(_ identifier: LocalIdentifier) {
        self.identifier = identifier
        self.localIdentifier = identifier.description
    }
}

/// Anything that names an object of the library: a fetched ``Asset`` or ``AssetCollection``,
/// an ``ObjectPlaceholder``, or a local identifier string.
public protocol ObjectReference {
    /// The local identifier of the object.
    var localIdentifier: String { get }
}

extension String: ObjectReference {
    /// The string itself, as a local identifier.
    public var localIdentifier: String { self }
}

extension ObjectKind {
    /// The kind's name in messages.
    var name: String {
        switch self {
        case .asset: return "asset"
        case .album: return "album"
        case .collectionList: return "folder"
        }
    }
}
