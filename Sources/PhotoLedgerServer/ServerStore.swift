import Foundation
import LedgerCore
import SyncProtocol

/// The identity behind a valid token: one library, one device, one scope.
public struct Credential: Sendable, Hashable {
    /// The library's row identifier in the store.
    public var libraryID: Int64
    /// The library's name.
    public var library: String
    /// The library's identifier, which bound events name.
    public var libraryUUID: UUID
    /// The device the token was issued to.
    public var device: DeviceID
    /// What the token allows.
    public var scope: TokenScope

    /// Creates a credential.
    public init(libraryID: Int64, library: String, libraryUUID: UUID, device: DeviceID, scope: TokenScope) {
        self.libraryID = libraryID
        self.library = library
        self.libraryUUID = libraryUUID
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
    /// An event that is not the pushing device's at all (another device's name): refused without
    /// touching the pushing device's sequence or recording anything under its identifier, which
    /// belongs to another device.
    case refuse(id: UUID, reason: String)

    /// The event's identifier.
    public var id: UUID {
        switch self {
        case .accept(let event, _): return event.id
        case .reject(let id, _, _), .refuse(let id, _): return id
        }
    }

    /// The event's device sequence (0 for a refused event: it is not the pushing device's).
    public var deviceSequence: Int64 {
        switch self {
        case .accept(let event, _): return event.deviceSequence
        case .reject(_, let sequence, _): return sequence
        case .refuse: return 0
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
    /// does not hold it (the event's `Event.contentHash` is then computed).
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

/// A library's position in its server log: the last server sequence and the chain value after it.
public struct LibraryHead: Sendable, Hashable {
    /// The last server sequence (0 for an empty log).
    public var sequence: Int64
    /// The chain value after the last event (32 zero bytes for an empty log).
    public var chainHash: [UInt8]

    /// Creates a head.
    public init(sequence: Int64, chainHash: [UInt8]) {
        self.sequence = sequence
        self.chainHash = chainHash
    }
}

/// Whether a library's log holds events about an object, and of which kind the object is.
public enum ObjectPresence: Sendable, Hashable {
    /// No event about the object is stored.
    case absent
    /// Events about it are stored; the kind is the one their type names (nil for a type this
    /// build does not know).
    case held(ObjectKind?)
}

/// A blob that events about an object refer to, as a writing device declares it before it
/// pushes them (``ServerStore/recordBlobReferences(libraryID:_:at:)``): the server cannot read
/// payloads, so this is what its blob garbage collection marks from.
public struct BlobReference: Sendable, Hashable {
    /// The object (an asset) the events are about.
    public var object: UUID
    /// The blob's SHA-256.
    public var hash: [UInt8]

    /// Creates a reference.
    public init(object: UUID, hash: [UInt8]) {
        self.object = object
        self.hash = hash
    }
}

/// A blob that ``ServerStore/collectBlobs(library:storedBefore:dryRun:)`` took out of a library.
public struct CollectedBlob: Sendable, Hashable {
    /// The library's name.
    public var library: String
    /// The blob's SHA-256.
    public var hash: [UInt8]
    /// Its size in bytes.
    public var size: Int64

    /// Creates a record.
    public init(library: String, hash: [UInt8], size: Int64) {
        self.library = library
        self.hash = hash
        self.size = size
    }
}

/// The storage primitives of one push, inside one transaction on one library's log: what
/// ``PushRules`` reads and writes. A backend opens it with the library's head locked against
/// other pushes (``ServerStore/withPushTransaction(library:device:at:_:)``), so the server
/// sequence it assigns has no gap and no duplicate even with several server processes.
public protocol PushTransaction {
    /// The library's head when the transaction began.
    var head: LibraryHead { get }
    /// The highest device sequence the server consumed for the pushing device (0 for a new one).
    var lastDeviceSequence: Int64 { get }
    /// The server sequence and content hash (when stored with it) of a stored event, or nil.
    func storedEvent(_ id: UUID) throws -> (serverSequence: Int64, contentHash: [UInt8]?)?
    /// The reason an event was rejected with, or nil when it never was.
    func rejectionReason(ofEvent id: UUID) throws -> String?
    /// Whether the log holds events about `object` (including ones inserted in this transaction).
    func presence(ofObject object: UUID) throws -> ObjectPresence
    /// Whether this transaction checks new events when it writes them, so the rules need not look
    /// each one up first: an event at the device's next sequence is inserted without asking
    /// ``storedEvent(_:)`` and ``presence(ofObject:)``, and the write (at ``finish(head:lastDeviceSequence:)``)
    /// throws when an inserted identifier is stored already, or an event inserted with
    /// `requiringNewObject` names an object the log held before it. The backend then runs the
    /// push again on a transaction that answers every lookup (see
    /// ``ServerStore/withPushTransaction(library:device:at:readingAheadFor:_:)``), so the answers
    /// never depend on which one ran. False by default.
    var checksNewEventsOnWrite: Bool { get }
    /// Stores an event at `serverSequence`; returns false, storing nothing, when an event with
    /// its identifier is stored already. `requiringNewObject` is set only when
    /// ``checksNewEventsOnWrite``: the event is valid only if no event about its object comes
    /// before it.
    func insert(_ event: Event, serverSequence: Int64, chainHash: [UInt8], contentHash: [UInt8]?, requiringNewObject: Bool) throws
        -> Bool
    /// Records a rejection (kept so a repeated push gets the same answer).
    func recordRejection(ofEvent id: UUID, deviceSequence: Int64, reason: String) throws
    /// Retires every snapshot of the library at a position before `position`, where the push
    /// stored a purge (such a snapshot may hold the purged asset): their records are deleted,
    /// their blobs taken out of the library and queued for deletion from the blob store
    /// (``ServerStore/retiredBlobs(limit:)``), and no snapshot before `position` is recorded
    /// from then on.
    func retireSnapshots(before position: Int64) throws
    /// Saves the library's new head and the device's last sequence; called once, at the end.
    func finish(head: LibraryHead, lastDeviceSequence: Int64) throws
    /// The bytes of the library's key store entry `name`, as this transaction sees it, or nil.
    func keyEntry(named name: String) throws -> [UInt8]?
    /// Applies key store changes for the pushing device in this transaction, as
    /// ``ServerStore/applyKeyChangesReportingPositions(libraryID:_:by:at:)`` does in one of its
    /// own: they commit with the push's events, or not at all.
    func applyKeyChanges(_ changes: [KeyChange]) throws -> (statuses: [KeyChangeStatus], from: Int64, through: Int64)
    /// Reads ahead what the rules may ask about `candidates` (their identifiers, the objects
    /// they name), so that a backend across a network asks its database once per push rather
    /// than once per event. Called before the rules run; the answers must stay those of the
    /// lookups. The default reads nothing.
    func prefetch(for candidates: [PushCandidate]) throws
}

/// A check a push left to its write failed (``PushTransaction/checksNewEventsOnWrite``): the
/// backend rolls the push back and runs it again with every lookup.
struct DeferredCheckFailed: Error {}

extension PushTransaction {
    /// Reads nothing ahead: every lookup asks the store when the rules make it.
    public func prefetch(for candidates: [PushCandidate]) throws {}

    /// Every lookup is made: nothing is left to the write.
    public var checksNewEventsOnWrite: Bool { false }
}

/// The server's persistent state: libraries, devices, tokens, the per-library event log in
/// server order, rejected events and the blob index.
///
/// A backend provides storage primitives; the sync rules that depend on stored state
/// (duplicates, device sequences, gaps, the hash chain, scopes, library binding) live in
/// ``PushRules``, over a ``PushTransaction``, the same for every backend. ``SQLiteServerStore``
/// is the embedded backend. Every backend passes the same contract tests.
/// A commit of events to a library's log, as a store publishes it to the server processes in
/// front of it.
public struct StoreCommit: Sendable, Hashable {
    /// The library's internal identifier.
    public var libraryID: Int64
    /// The last server sequence the commit stored.
    public var through: Int64

    /// A commit of `libraryID`'s events up to `through`.
    public init(libraryID: Int64, through: Int64) {
        self.libraryID = libraryID
        self.through = through
    }
}

/// A subscription to a store's commits; ``stop()`` ends it (and waits for its thread).
public protocol CommitWatch: Sendable {
    /// Stops telling of commits. Safe to call more than once.
    func stop()
}

public protocol ServerStore: Sendable {
    /// Starts telling `handler` of the commits of events that *other* processes make on this
    /// store (a shared database), so their waiting pulls wake in this process too; `nil` when
    /// nothing but this process writes (an embedded file). After a lost subscription the
    /// handler is told `nil`: commits may have been missed. Returns once the subscription is in
    /// place (or its first attempt failed), so that a pull waiting after this returns is told of
    /// every later commit.
    func watchCommits(_ handler: @escaping @Sendable (StoreCommit?) -> Void) throws -> (any CommitWatch)?

    // Administration

    /// Creates a library with the identifier `uuid` (a new one when nil); throws when the name
    /// or the identifier is taken.
    func createLibrary(named name: String, uuid: UUID?, at milliseconds: UInt64) throws
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
    /// Runs `body` in one transaction on the library's log, with its head locked against other
    /// pushes; `device` is registered with the library when new. Everything `body` wrote commits
    /// together, or nothing does when it throws.
    func withPushTransaction<T>(library: Int64, device: DeviceID, at milliseconds: UInt64, _ body: (any PushTransaction) throws -> T) throws
        -> T
    /// ``withPushTransaction(library:device:at:_:)`` for a push of `candidates`: what the rules
    /// will ask about them may be read as the transaction opens (``PushTransaction/prefetch(for:)``
    /// by default, once it is open), or the transaction may check new events when it writes them
    /// (``PushTransaction/checksNewEventsOnWrite``). When such a check fails, the backend rolls
    /// the transaction back and runs `body` again, on a transaction that checks each event as
    /// the rules ask: `body` must act through its transaction only.
    func withPushTransaction<T>(
        library: Int64, device: DeviceID, at milliseconds: UInt64, readingAheadFor candidates: [PushCandidate],
        _ body: (any PushTransaction) throws -> T
    ) throws -> T
    /// Applies a push with `rules` in one transaction: the answers of ``PushRules/apply(_:for:in:)``
    /// on ``withPushTransaction(library:device:at:readingAheadFor:_:)``, which the default
    /// implementation runs; a backend may reach the same answers another way.
    func push(_ candidates: [PushCandidate], for credential: Credential, receivedAt milliseconds: UInt64, rules: PushRules) throws
        -> PushResponse
    /// Events after `since` in server order, at most `limit`.
    func events(library: Int64, after since: Int64, limit: Int) throws -> ServerPage
    /// Records `since` as the position the device has pulled to: its compaction watermark.
    func recordPull(library: Int64, device: DeviceID, since: Int64, at milliseconds: UInt64) throws
    /// The library's log length and chain head.
    func chainSummary(libraryID: Int64) throws -> ChainSummary
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
    /// Records that the library holds the blob whose bytes an upload just stored, if `stored`
    /// says the blob store still holds them; returns false when the library held it already,
    /// nil when the bytes are gone (nothing recorded: upload the blob again).
    ///
    /// `stored` is asked under the blob's lock, which ``deleteRetiredBlob(_:removing:)`` holds
    /// while it deletes a retired copy of the same bytes: an upload that raced with that
    /// deletion either is recorded first (and the deletion then leaves the bytes alone) or
    /// finds its bytes gone, never a record of bytes deleted after it.
    func recordBlob(libraryID: Int64, hash: [UInt8], size: Int64, at milliseconds: UInt64, ifStored stored: () throws -> Bool) throws
        -> Bool?
    /// The hashes among `hashes` that the library does not hold, in the order given.
    func missingBlobs(libraryID: Int64, hashes: [[UInt8]]) throws -> [[UInt8]]

    // MARK: Snapshots

    /// Records a snapshot that passed ``offerSnapshot(_:for:at:)``'s checks, in one
    /// transaction: refused (``SnapshotRecording/precedesPurge(at:)``) when the library's log
    /// holds a purge after its position; otherwise recorded (or the record kept for the same
    /// position and blob answered), then every snapshot beyond the `keeping` newest is retired:
    /// its record deleted and, when no snapshot kept names it, its blob taken out of the
    /// library and queued for deletion from the blob store (``retiredBlobs(limit:)``).
    func recordSnapshot(_ record: SnapshotRecord, libraryID: Int64, keeping: Int) throws -> SnapshotRecording
    /// The library's newest snapshot (highest position; of two at one position, the one
    /// recorded last), or nil when it has none.
    func latestSnapshot(libraryID: Int64) throws -> SnapshotRecord?
    /// Every snapshot the library keeps, newest first.
    func snapshots(libraryID: Int64) throws -> [SnapshotRecord]
    /// Blobs of retired snapshots waiting to be deleted from the blob store, oldest first, at
    /// most `limit`; a queued blob that a library holds again (uploaded since) leaves the queue
    /// instead. Delete each with ``deleteRetiredBlob(_:removing:)``.
    func retiredBlobs(limit: Int) throws -> [[UInt8]]
    /// Deletes one blob of ``retiredBlobs(limit:)`` under the blob's lock (the one
    /// ``recordBlob(libraryID:hash:size:at:ifStored:)`` takes): when it is still queued and no
    /// library holds it, runs `remove` (which deletes its bytes from the blob store) and takes it
    /// off the queue; when a library holds it again (uploaded since the queue was read), only
    /// takes it off the queue. Returns whether `remove` ran. When `remove` throws, the blob stays
    /// queued, to be deleted again; so does it after a crash.
    func deleteRetiredBlob(_ hash: [UInt8], removing remove: () throws -> Void) throws -> Bool

    // MARK: Blob garbage collection

    /// Records that the events about each reference's object refer to its blob, as declared at
    /// `milliseconds` (declaring a reference again moves its time forward).
    func recordBlobReferences(libraryID: Int64, _ references: [BlobReference], at milliseconds: UInt64) throws
    /// Blob garbage collection for `library` (every library when nil): takes out of the library
    /// each blob it holds that was stored before `cutoff` (Unix milliseconds), that events were
    /// declared to refer to, and that no reference keeps any more, and queues it for deletion
    /// from the blob store (``retiredBlobs(limit:)``, which deletes it once no library holds it).
    ///
    /// A reference keeps its blob while its object is not purged (the log holds no
    /// `asset.purged` event about it) and either the log holds events about the object or the
    /// reference was declared at or after `cutoff`: an upload whose events are not pushed yet is
    /// kept through the grace period, one whose events never came is collected after it. A blob
    /// a snapshot the library keeps names stays, and so does a blob no reference was ever
    /// declared for (uploaded by a client that does not declare them): its use is unknown. With
    /// `dryRun`, nothing changes. Returns the blobs taken out (or that would be), by library.
    func collectBlobs(library: String?, storedBefore cutoff: UInt64, dryRun: Bool) throws -> [CollectedBlob]

    // MARK: Key store

    /// The entries of the library's key store written after position `after` (0: all), by
    /// name, and the store's position.
    func keyEntries(libraryID: Int64, after: Int64) throws -> (entries: [KeyEntry], last: Int64)
    /// The bytes of one entry of the library's key store, or nil.
    func keyEntry(libraryID: Int64, name: String) throws -> [UInt8]?
    /// Applies `changes` in order, in one transaction, for `device`: a write replaces the entry
    /// (unless `createOnly` and an entry with other bytes exists: `conflict`), a change without a
    /// value deletes it. Returns the status of each, and the store's position before and after
    /// the changes (the writes take the positions between, one after another).
    func applyKeyChangesReportingPositions(libraryID: Int64, _ changes: [KeyChange], by device: DeviceID, at milliseconds: UInt64) throws
        -> (statuses: [KeyChangeStatus], from: Int64, through: Int64)
}

extension ServerStore {
    /// Applies `changes` (see ``applyKeyChangesReportingPositions(libraryID:_:by:at:)``) and
    /// returns the status of each.
    public func applyKeyChanges(libraryID: Int64, _ changes: [KeyChange], by device: DeviceID, at milliseconds: UInt64) throws
        -> [KeyChangeStatus]
    {
        try applyKeyChangesReportingPositions(libraryID: libraryID, changes, by: device, at: milliseconds).statuses
    }
}

extension ServerStore {
    /// Applies a push with `rules` in one transaction (see ``PushRules/apply(_:for:in:)``).
    public func push(_ candidates: [PushCandidate], for credential: Credential, receivedAt milliseconds: UInt64, rules: PushRules)
        throws -> PushResponse
    {
        try withPushTransaction(library: credential.libraryID, device: credential.device, at: milliseconds, readingAheadFor: candidates) {
            try rules.apply(candidates, for: credential, in: $0)
        }
    }

    /// Applies a push with the default rules in one transaction.
    public func push(_ candidates: [PushCandidate], for credential: Credential, receivedAt milliseconds: UInt64) throws -> PushResponse {
        try push(candidates, for: credential, receivedAt: milliseconds, rules: PushRules())
    }

    /// Opens the transaction, then reads ahead with ``PushTransaction/prefetch(for:)``.
    public func withPushTransaction<T>(
        library: Int64, device: DeviceID, at milliseconds: UInt64, readingAheadFor candidates: [PushCandidate],
        _ body: (any PushTransaction) throws -> T
    ) throws -> T {
        try withPushTransaction(library: library, device: device, at: milliseconds) { transaction in
            try transaction.prefetch(for: candidates)
            return try body(transaction)
        }
    }

    /// Reads events after `since`, at most `limit`, and records `since` as the device's pull
    /// watermark.
    public func pull(for credential: Credential, since: Int64, limit: Int, at milliseconds: UInt64) throws -> ServerPage {
        let page = try events(library: credential.libraryID, after: since, limit: limit)
        try recordPull(library: credential.libraryID, device: credential.device, since: since, at: milliseconds)
        return page
    }

    /// Recomputes the library's chain from the first event, in pages.
    public func verifyChain(libraryID: Int64) throws -> ChainVerification {
        var chain = HashChain()
        var cursor: Int64 = 0
        while true {
            let page = try events(library: libraryID, after: cursor, limit: 1000)
            for stored in page.events {
                let expected = chain.link(stored.event)
                guard stored.serverSequence == cursor + 1, constantTimeEquals(expected, stored.chainHash) else {
                    return .broken(serverSequence: stored.serverSequence, eventID: stored.event.id)
                }
                cursor = stored.serverSequence
            }
            if !page.hasMore { break }
        }
        let summary = try chainSummary(libraryID: libraryID)
        guard summary.lastServerSequence == cursor, constantTimeEquals(summary.headHash, chain.head) else {
            return .broken(
                serverSequence: summary.lastServerSequence, eventID: UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)))
        }
        return .intact(count: cursor)
    }
}

extension ServerStore {
    /// No other process writes the store: this process's own pushes wake its waiting pulls.
    public func watchCommits(_ handler: @escaping @Sendable (StoreCommit?) -> Void) throws -> (any CommitWatch)? { nil }
}
