import Foundation
import LedgerCore
import SyncProtocol

/// What a device token allows.
public enum TokenScope: String, Sendable, Hashable, CaseIterable {
    /// Push and pull events; upload and download blobs.
    case readWrite
    /// Push asset creations and upload their blobs only; no pull, no download.
    case addOnly
    /// Pull events and download blobs only.
    case readOnly

    /// Whether the scope allows pulling events and downloading blobs.
    public var canRead: Bool { self != .addOnly }
    /// Whether the scope allows pushing events and uploading blobs.
    public var canWrite: Bool { self != .readOnly }

    /// The event types an addOnly token may push: asset creations and their resources.
    public static let addOnlyEventTypes: Set<String> = ["asset.created", "resource.added"]
}

/// The identity behind a valid token: one library, one device, one scope.
public struct Credential: Sendable, Hashable {
    /// The library's row identifier in the store.
    public var libraryID: Int64
    /// The library's name.
    public var library: String
    /// The device the token was issued to.
    public var device: DeviceID
    /// What the token allows.
    public var scope: TokenScope

    /// Creates a credential.
    public init(libraryID: Int64, library: String, device: DeviceID, scope: TokenScope) {
        self.libraryID = libraryID
        self.library = library
        self.device = device
        self.scope = scope
    }
}

/// A device registered with a library, as the admin tool lists it.
public struct DeviceRecord: Sendable, Hashable {
    /// The device's name.
    public var device: DeviceID
    /// The scope of its newest token that is not revoked, or of its newest token when all are revoked.
    public var scope: TokenScope?
    /// The highest device sequence the server consumed.
    public var lastDeviceSequence: Int64
    /// The `since` of the device's last pull: its compaction watermark.
    public var lastPulledSequence: Int64
    /// Whether every token of the device is revoked.
    public var revoked: Bool

    /// Creates a record.
    public init(device: DeviceID, scope: TokenScope?, lastDeviceSequence: Int64, lastPulledSequence: Int64, revoked: Bool) {
        self.device = device
        self.scope = scope
        self.lastDeviceSequence = lastDeviceSequence
        self.lastPulledSequence = lastPulledSequence
        self.revoked = revoked
    }
}

/// One pushed event after the stateless checks: either an event to store (its content hash
/// verified) or a rejection with its reason.
public enum PushCandidate: Sendable, Hashable {
    /// A valid event, to be stored unless it is a duplicate or out of sequence, with its content
    /// hash when it was verified (stored with the event, so pulls need not compute it again).
    case accept(Event, contentHash: [UInt8]? = nil)
    /// A permanently invalid event, to be acknowledged as rejected and consume its sequence.
    case reject(id: UUID, deviceSequence: Int64, reason: String)

    /// The event's identifier.
    public var id: UUID {
        switch self {
        case .accept(let event, _): return event.id
        case .reject(let id, _, _): return id
        }
    }

    /// The event's device sequence.
    public var deviceSequence: Int64 {
        switch self {
        case .accept(let event, _): return event.deviceSequence
        case .reject(_, let sequence, _): return sequence
        }
    }
}

/// An event in the server's log.
public struct ServerEvent: Sendable, Hashable {
    /// The event.
    public var event: Event
    /// Its position in the library's server order.
    public var serverSequence: Int64
    /// The chain value after it: SHA-256(previous chain value ‖ canonical bytes).
    public var chainHash: [UInt8]
    /// Its content hash (SHA-256 of the canonical bytes) as stored at push, or nil when the store
    /// does not hold it (the event's ``LedgerStore/Event/contentHash`` is then computed).
    public var contentHash: [UInt8]?

    /// Creates a server event.
    public init(event: Event, serverSequence: Int64, chainHash: [UInt8], contentHash: [UInt8]? = nil) {
        self.event = event
        self.serverSequence = serverSequence
        self.chainHash = chainHash
        self.contentHash = contentHash
    }
}

/// One page of the server log.
public struct ServerPage: Sendable, Hashable {
    /// The events, in server order.
    public var events: [ServerEvent]
    /// Whether more events follow the page.
    public var hasMore: Bool

    /// Creates a page.
    public init(events: [ServerEvent], hasMore: Bool) {
        self.events = events
        self.hasMore = hasMore
    }
}

/// A refused administration request (unknown library, name taken, …), with what to do.
public struct ServerStoreError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong and what to do.
    public let message: String

    /// Creates an error.
    public init(_ message: String) { self.message = message }

    public var description: String { message }
}

/// The server's persistent state: libraries, devices, tokens, the per-library event log in
/// server order, rejected events and the blob index.
///
/// The sync rules that depend on stored state (duplicates, device sequences, gaps, the hash
/// chain) live in ``push(_:for:receivedAt:)``, which every backend implements with the same
/// semantics inside one transaction. ``SQLiteServerStore`` is the embedded implementation; a
/// PostgreSQL backend can implement the same protocol for several stateless server processes.
public protocol ServerStore: Sendable {
    // Administration

    /// Creates a library; throws when the name is taken.
    func createLibrary(named name: String, at milliseconds: UInt64) throws
    /// The names of all libraries.
    func libraryNames() throws -> [String]
    /// Registers `device` with `library` (when new) and stores a token by its SHA-256.
    func registerToken(hash: [UInt8], library: String, device: DeviceID, scope: TokenScope, at milliseconds: UInt64) throws
    /// Revokes every token of `device` in `library`; returns how many were revoked now.
    @discardableResult
    func revokeTokens(library: String, device: DeviceID, at milliseconds: UInt64) throws -> Int
    /// The devices registered with `library`.
    func devices(library: String) throws -> [DeviceRecord]

    // Requests

    /// The credential of the token whose SHA-256 is `tokenHash`, or nil when unknown or revoked.
    func authenticate(tokenHash: [UInt8]) throws -> Credential?
    /// Applies a push in one transaction: duplicates, sequence rules, storage, chain, device state.
    func push(_ candidates: [PushCandidate], for credential: Credential, receivedAt milliseconds: UInt64) throws -> PushResponse
    /// Reads events after `since`, at most `limit`, and records `since` as the device's pull watermark.
    func pull(for credential: Credential, since: Int64, limit: Int) throws -> ServerPage
    /// The library's log length and chain head.
    func chainSummary(libraryID: Int64) throws -> ChainSummary
    /// Recomputes the library's chain from the first event.
    func verifyChain(libraryID: Int64) throws -> ChainVerification
    /// The lowest server sequence that every counted device of the library has pulled, with the
    /// library's last server sequence and the number of devices counted.
    ///
    /// A device counts when it has a token that is not revoked and may pull (`readWrite` or
    /// `readOnly`); its position is the `since` of its last pull (0 when it never pulled). The
    /// watermark is the lowest position, capped at the last server sequence, or the last server
    /// sequence when no device counts. Reads one consistent state.
    func compactionWatermark(libraryID: Int64) throws -> CompactionWatermark
    /// Whether the library holds the blob, and its size.
    func blobSize(libraryID: Int64, hash: [UInt8]) throws -> Int64?
    /// Records that the library holds the blob; returns false when it already did.
    func recordBlob(libraryID: Int64, hash: [UInt8], size: Int64, at milliseconds: UInt64) throws -> Bool
    /// The hashes among `hashes` that the library does not hold, in the order given.
    func missingBlobs(libraryID: Int64, hashes: [[UInt8]]) throws -> [[UInt8]]
}
