import Foundation
import LedgerCore
import LedgerCrypto
import LedgerStore
import PhotoMedia
import Synchronization

/// What a device's token lets it do in the shared library, as the server says
/// (`PhotoLedgerSync` maps the protocol's scope onto it).
public enum ReplicaScope: String, Sendable, Hashable, CaseIterable {
    /// Push and pull: the library reads and changes as authorized.
    case readWrite
    /// Push the creation of new assets only: the library reports add-only access.
    case addOnly
    /// Pull only: change blocks fail at once with `accessRestricted`.
    case readOnly
}

/// This device's state as a replica of a shared library (`replica_state`).
public struct ReplicaState: Sendable, Hashable {
    /// The shared library's identifier, once learned from the server; new events name it.
    public var library: UUID?
    /// The server library URL and this device's token, when set.
    public var remote: (url: String, token: String)? {
        get { remoteURL.flatMap { url in remoteToken.map { (url, $0) } } }
        set {
            remoteURL = newValue?.url
            remoteToken = newValue?.token
        }
    }
    var remoteURL: String?
    var remoteToken: String?
    /// What the token allows, as the server last said.
    public var scope: ReplicaScope?
    /// The server sequence this device has pulled up to.
    public var pullCursor: Int64
    /// When the last sync finished (Unix milliseconds).
    public var lastSync: UInt64?

    public static func == (lhs: ReplicaState, rhs: ReplicaState) -> Bool {
        lhs.library == rhs.library && lhs.remoteURL == rhs.remoteURL && lhs.remoteToken == rhs.remoteToken && lhs.scope == rhs.scope
            && lhs.pullCursor == rhs.pullCursor && lhs.lastSync == rhs.lastSync
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(library)
        hasher.combine(remoteURL)
        hasher.combine(pullCursor)
    }
}

/// An event as a pull page delivers it: with its place in the server's log and the server's
/// chain value after it.
package struct SequencedEvent: Sendable, Hashable {
    /// The event.
    package var event: Event
    /// Its position in the server's log.
    package var serverSequence: Int64
    /// The server's chain value after it.
    package var serverChainHash: [UInt8]

    /// Creates a sequenced event.
    package init(event: Event, serverSequence: Int64, serverChainHash: [UInt8]) {
        self.event = event
        self.serverSequence = serverSequence
        self.serverChainHash = serverChainHash
    }
}

/// A pull page made ready to apply, off the thread that applies pages: its events linked after
/// the server's previous chain value and folded for the projections.
package struct PreparedPage: Sendable {
    let events: [Event]
    /// One server sequence per event, when the page comes from the server.
    let serverSequences: [Int64]?
    /// The server's chain value of each event reported with the page (none, or one per event).
    let chain: [ServerChainEntry]
    /// The cursor to record with the page (nil: none).
    package let cursor: Int64?
    /// The events' local chain values when this device's log ends where the server's chain was
    /// before the page (its log follows the server's order): the apply need not hash them again.
    let localChain: EventLog.PrecomputedChain?
    /// The page folded as if every event were new here.
    let folded: FoldedEvents
}

/// What applying a pull page did.
package struct AppliedPage: Sendable, Hashable {
    /// Events new to this library.
    package var newEvents = 0
    /// New events quarantined (kept, not folded), with the reasons.
    package var quarantined: [QuarantineEntry] = []
    /// Events whose verdict changed because of the page (an earlier creation arrived).
    package var changedVerdicts = 0
}

/// What acknowledging a push did.
package struct Acknowledgement: Sendable, Hashable {
    /// Events the server refused for good, with its reasons.
    package var rejected: [(id: UUID, reason: String)] = []

    package static func == (lhs: Acknowledgement, rhs: Acknowledgement) -> Bool {
        lhs.rejected.map(\.id) == rhs.rejected.map(\.id) && lhs.rejected.map(\.reason) == rhs.rejected.map(\.reason)
    }

    package func hash(into hasher: inout Hasher) { hasher.combine(rejected.map(\.id)) }
}

/// The library as a replica of a shared library: everything the sync engine needs, typed, and no
/// access to the database behind it. Cursors and acknowledgements commit in the transactions
/// that apply what they describe.
///
/// ```swift
/// let replica = library.replica
/// let page = replica.prepare(events, cursor: next, after: previousChainValue)   // any thread
/// let applied = try replica.apply(page)                                          // the cursor moves with it
/// ```
package struct Replica: Sendable {
    let library: PhotoLibrary

    // MARK: State

    /// The replica's state.
    package func state() throws -> ReplicaState {
        try library.readDatabase { try ReplicaState.read($0) }
    }

    /// Records what the server said of this device's library: its identifier (new events name it)
    /// and the token's scope. A library that holds events of another shared library cannot be
    /// bound to this one.
    ///
    /// - Throws: ``PhotoLibraryError`` `.changeNotSupported` when the library is bound to another
    ///   shared library.
    package func bind(to libraryID: UUID, scope: ReplicaScope) throws {
        try library.withDatabase { db in
            let state = try ReplicaState.read(db)
            if let bound = state.library, bound != libraryID {
                throw PhotoLibraryError(
                    .changeNotSupported,
                    "this library belongs to the shared library \(bound.uuidString), but the remote's library is \(libraryID.uuidString); "
                        + "a library syncs with one shared library: set the remote back, or start a new library for this one")
            }
            try db.execute("UPDATE replica_state SET library = ?, scope = ? WHERE id = 1", [libraryID.bytes, scope.rawValue])
        }
        library.binding.withLock { $0 = (libraryID, scope) }
        if scope == .readOnly { try foldOutUnsendable() }
    }

    /// Sets (or, with nil, removes) the remote. Another URL restarts pulling from the new
    /// server's beginning.
    package func setRemote(url: String?, token: String?) throws {
        try library.withDatabase { db in
            let previous = try ReplicaState.read(db).remoteURL
            try db.execute("UPDATE replica_state SET remote_url = ?, remote_token = ? WHERE id = 1", [url, token])
            if previous != url { try db.execute("UPDATE replica_state SET pull_cursor = 0 WHERE id = 1") }
        }
    }

    /// Records that a sync finished now.
    package func recordSync() throws {
        try library.withDatabase { db in
            try db.execute("UPDATE replica_state SET last_sync = ? WHERE id = 1", [Int64(library.options.clock())])
        }
        library.removeSealedBlobFiles()
    }

    /// The library's physical clock reading, in Unix milliseconds.
    package var currentTimeMilliseconds: UInt64 { library.options.clock() }

    // MARK: Outbox

    /// One of this device's events as the push reads it: the event and its position in this
    /// device's log, from which the next read of the outbox goes on.
    package struct PendingEvent: Sendable {
        /// The event.
        package var event: Event
        /// Its position in this device's log.
        package var localSequence: Int64
    }

    /// This device's events the server has neither acknowledged nor rejected (the outbox), in
    /// log order, after the event at `localSequence` in this device's log. Read as one range of
    /// the index of pending events from that position, so a batch costs the same after a
    /// million events were read as after none: pass the last batch's ``StoredEvent/localSequence``
    /// to read the next.
    package func outbox(after localSequence: Int64 = 0, limit: Int) throws -> [PendingEvent] {
        try library.readDatabase { db in
            try db.rows(
                """
                SELECT \(EventLog.columns) FROM events INDEXED BY events_pending
                WHERE server_seq IS NULL AND local_seq > ? AND device_id = ?
                AND event_id NOT IN (SELECT event_id FROM sync_rejections) ORDER BY local_seq LIMIT ?
                """, [localSequence, library.device.rawValue, Int64(limit)]
            ) { row in
                let stored = try EventLog.decode(row)
                return PendingEvent(event: stored.event, localSequence: stored.localSequence)
            }
        }
    }

    /// The number of events in the outbox.
    package func outboxCount() throws -> Int {
        try library.readDatabase { db in try ReplicaStatistics.outboxCount(db, device: library.device) }
    }

    /// Whether any event of this device waits to be pushed: cheaper than ``outboxCount()``, for
    /// noticing commits made by another process on the same library.
    package func hasOutbox() throws -> Bool {
        try library.readDatabase { db in
            try db.firstRow(
                """
                SELECT EXISTS (SELECT 1 FROM events INDEXED BY events_pending WHERE server_seq IS NULL AND device_id = ?
                AND event_id NOT IN (SELECT event_id FROM sync_rejections))
                """, [library.device.rawValue]
            ) { $0.int64(0) } == 1
        }
    }

    /// This device's events from `deviceSequence` on, acknowledged or not (to answer a gap).
    package func ownEvents(fromDeviceSequence deviceSequence: Int64, limit: Int) throws -> [PendingEvent] {
        try library.readDatabase { db in
            try EventLog(db).events(fromDevice: library.device, afterDeviceSequence: deviceSequence - 1, limit: limit).map {
                PendingEvent(event: $0.event, localSequence: $0.localSequence)
            }
        }
    }

    /// Records the server's answers to a push in one transaction. Rejected events leave the
    /// outbox and are folded out of the views (no other device holds them), so this device shows
    /// what every other device shows.
    ///
    /// Stored events are acknowledged in runs: events whose device sequences and server
    /// sequences both follow one another (what one push stores) take one statement per run.
    package func acknowledge(stored: [(deviceSequence: Int64, serverSequence: Int64)], rejected: [(UUID, String)]) throws {
        try library.withDatabase { db in
            try PhotoLibrary.acknowledge(stored, device: library.device, db: db)
            for (id, reason) in rejected {
                try db.execute(
                    "INSERT INTO sync_rejections (event_id, reason, rejected_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                    [id.bytes, reason, Int64(library.options.clock())])
            }
        }
        if !rejected.isEmpty { try library.foldOut(rejected.map(\.0)) }
    }

    /// Acknowledges a batch the server stored in full, in order, together with the server's head
    /// after it: when the events sit right after the pull cursor, they are confirmed from the
    /// head's chain value and the cursor moves past them, so the pull need not bring them back
    /// (``PhotoLibrary/confirmPushed(_:serverSequences:head:)``); otherwise they are acknowledged
    /// as ``acknowledge(stored:rejected:)`` does.
    package func acknowledge(
        pushed batch: [PendingEvent], serverSequences: [Int64], head: (serverSequence: Int64, chainHash: [UInt8])
    ) throws {
        if try library.confirmPushed(batch.map(\.event), serverSequences: serverSequences, head: head) { return }
        try acknowledge(stored: zip(batch, serverSequences).map { ($0.event.deviceSequence, $1) }, rejected: [])
    }

    /// With a readOnly token nothing this device makes can reach the server: its outbox is
    /// rejected here, with that reason, and folded out.
    private func foldOutUnsendable() throws {
        let pending = try outbox(limit: Int.max).map(\.event.id)
        guard !pending.isEmpty else { return }
        try acknowledge(
            stored: [], rejected: pending.map { ($0, "this device's token is readOnly: its changes cannot be sent to the shared library") })
    }

    // MARK: Pulls

    /// Prepares a pull page off the applying thread: links its events after `previous` (the
    /// server's chain value before the page, when known) and folds them.
    package func prepare(_ events: [SequencedEvent], cursor: Int64, after previous: [UInt8]?) -> PreparedPage {
        let plain = events.map(\.event)
        // This device's own events coming back are echoes, confirmed when applied and neither
        // appended nor folded: the work ahead is done for the others only. (An own event this
        // device does not hold, after a restore, is folded in the writer instead.)
        let device = library.device
        let hasOwn = plain.contains { $0.device == device }
        return PreparedPage(
            events: plain, serverSequences: events.map(\.serverSequence),
            chain: events.map { ServerChainEntry(serverSequence: $0.serverSequence, eventID: $0.event.id, chainHash: $0.serverChainHash) },
            cursor: cursor, localChain: hasOwn ? nil : previous.map { EventLog.PrecomputedChain(linking: plain, after: $0) },
            folded: FoldedEvents.fold(hasOwn ? plain.filter { $0.device != device } : plain, context: library.foldContext))
    }

    /// Applies a prepared page in one transaction with the log, the server's chain values and the
    /// pull cursor: new events are appended and folded (those that fail validation quarantined,
    /// not folded), events held already acknowledged.
    ///
    /// - Throws: ``PhotoLibrary/ServerChainMismatch`` when the page does not match the server's
    ///   chain as recorded here; nothing of the page is applied then.
    package func apply(_ page: PreparedPage) throws -> AppliedPage {
        try library.applyRemoteEvents(page)
    }

    /// Checks the server's chain head against what this device received.
    package func verifyServerChainHead(lastServerSequence: Int64, headHash: [UInt8]) throws -> ChainFailure? {
        try library.verifyServerChainHead(lastServerSequence: lastServerSequence, headHash: headHash)
    }

    // MARK: Resources

    /// The blobs (hex SHA-256 names) of the resources that `events` refer to: the resources
    /// themselves in a plain library, their encryptions in an encrypted one
    /// (``PhotoLibrary/encryptedBlobNames(for:)``).
    package func resourceHashes(referencedBy events: [Event]) throws -> Set<String> {
        let blobs = try blobs(referencedBy: events)
        return blobs.resources.union(blobs.renditions)
    }

    /// The blobs `events` refer to, the resources' apart from the recorded renditions'.
    package func blobs(referencedBy events: [Event]) throws -> (resources: Set<String>, renditions: Set<String>) {
        let references = try blobReferences(of: events)
        return (references.resources, references.renditions)
    }

    /// The blobs a list of events refers to, in all and by object.
    package struct BlobReferences: Sendable {
        /// The blobs of resources (originals, edits' renders and adjustment data).
        package var resources: Set<String> = []
        /// The blobs of recorded renditions.
        package var renditions: Set<String> = []
        /// Every blob the events about each object refer to (objects referring to none are left
        /// out).
        package var byObject: [UUID: Set<String>] = [:]
    }

    /// The blobs `events` refer to: the resources themselves in a plain library, their
    /// encryptions in an encrypted one (``PhotoLibrary/encryptedBlobNames(for:)``), in all and by
    /// object.
    ///
    /// The library's rows answer for an asset's creation and content edit folded here (the
    /// asset's creation event and its content stamp name the event), without opening its
    /// payload; the payload of any other event that may refer to a blob (a recorded rendition, an
    /// event its object's row does not name) is read, as the fold reads it.
    package func blobReferences(of events: [Event]) throws -> BlobReferences {
        var result = BlobReferences()
        typealias Sealed = [(asset: UUID, sha256: String, keyID: UInt32)]
        var sealed: (resources: Sealed, renditions: Sealed) = ([], [])
        let folded = try foldedReferences(of: events)
        let context = library.foldContext
        for event in events {
            var referenced: [String] = []
            var isRendition = false
            switch EventType(rawValue: event.type) {
            case .assetCreated?, .assetContentEdited?, .assetRenditionRecorded?: break
            default: continue  // refers to no blob whatever its payload
            }
            if let known = folded[event.id] {
                referenced = known
            } else {
                let stamp = WriterStamp(hlc: Int64(bitPattern: event.timestamp.rawValue), device: event.device.rawValue)
                switch context.verdict(on: event, stamp: stamp, keepingClaims: false) {
                case .fold(.assetCreated(let creation), _): referenced = creation.resources.map { Hex.encode($0.sha256) }
                case .fold(.assetContentEdited(let edit), _):
                    referenced = [edit.rendered, edit.adjustment].compactMap { $0.map { Hex.encode($0.sha256) } }
                case .fold(.renditionRecorded(let rendition), _):
                    referenced = [Hex.encode(rendition.sha256)]
                    isRendition = true
                default: break
                }
            }
            guard !referenced.isEmpty else { continue }
            switch (event.seal.flatMap { KeyKind.isAssetKey($0.keyID) ? $0.keyID : nil }, isRendition) {
            case (let keyID?, false): sealed.resources += referenced.map { (event.object, $0, keyID) }
            case (let keyID?, true): sealed.renditions += referenced.map { (event.object, $0, keyID) }
            case (nil, false):
                result.resources.formUnion(referenced)
                result.byObject[event.object, default: []].formUnion(referenced)
            case (nil, true):
                result.renditions.formUnion(referenced)
                result.byObject[event.object, default: []].formUnion(referenced)
            }
        }
        for (references, isRendition) in [(sealed.resources, false), (sealed.renditions, true)] where !references.isEmpty {
            for (asset, names) in try library.encryptedBlobNamesByAsset(for: references) {
                if isRendition { result.renditions.formUnion(names) } else { result.resources.formUnion(names) }
                result.byObject[asset, default: []].formUnion(names)
            }
        }
        return result
    }

    /// The resources (hex SHA-256) of the asset creations and content edits among `events` that
    /// the library's rows name as folded, by event: a creation that is its asset's only one
    /// (the asset's resources are the ones it was created with), an edit whose stamp is the
    /// asset's content stamp (its render and adjustment data are the asset's content). An asset
    /// purged, or whose row is gone, is left to its events' payloads.
    func foldedReferences(of events: [Event]) throws -> [UUID: [String]] {
        var candidates: [UUID: [Event]] = [:]
        for event in events
        where event.type == EventType.assetCreated.rawValue || event.type == EventType.assetContentEdited.rawValue {
            candidates[event.object, default: []].append(event)
        }
        guard !candidates.isEmpty else { return [:] }
        let assets = Array(candidates.keys)
        var result: [UUID: [String]] = [:]
        try library.readDatabase { db in
            for start in stride(from: 0, to: assets.count, by: 250) {
                let chunk = Array(assets[start..<min(start + 250, assets.count)])
                let list = Array(repeating: "?", count: chunk.count).joined(separator: ", ")
                let ids: [any SQLBindable] = chunk.map(\.bytes)
                var creations: [UUID: UUID] = [:]  // asset → its creation event
                try db.forEachRow(
                    """
                    SELECT asset_id, creation_event, content_hlc, content_device, content_sha256, adjustment_sha256 FROM assets
                    WHERE asset_id IN (\(list)) AND purged = 0
                    """, ids
                ) { row in
                    guard let asset = UUID(bytes: row.blob(0)) else { return }
                    let content = (hlc: row.int64(2), device: row.text(3))
                    for event in candidates[asset] ?? [] {
                        if event.type == EventType.assetCreated.rawValue {
                            if !row.isNull(1), UUID(bytes: row.blob(1)) == event.id { creations[asset] = event.id }
                        } else if content.hlc == Int64(bitPattern: event.timestamp.rawValue) && content.device == event.device.rawValue {
                            result[event.id] = [4, 5].compactMap { row.isNull($0) ? nil : Hex.encode(row.blob($0)) }
                        }
                    }
                }
                // A second creation of an asset (created_twice) may have written its resources:
                // its creations are read from their payloads.
                try db.forEachRow(
                    "SELECT asset_id FROM assets WHERE asset_id IN (\(list)) AND created_twice <> 0", ids
                ) { row in
                    if let asset = UUID(bytes: row.blob(0)) { creations[asset] = nil }
                }
                guard !creations.isEmpty else { continue }
                try db.forEachRow(
                    "SELECT asset_id, sha256 FROM asset_resources WHERE asset_id IN (\(list)) ORDER BY asset_id, resource_index", ids
                ) { row in
                    guard let asset = UUID(bytes: row.blob(0)), let event = creations[asset] else { return }
                    result[event, default: []].append(Hex.encode(row.blob(1)))
                }
                // A creation without resources refers to none.
                for event in creations.values where result[event] == nil { result[event] = [] }
            }
        }
        return result
    }

    /// Referenced resources that are not on this device yet, with their sizes.
    package func missingResources() throws -> [(hash: String, size: Int64)] {
        if library.encryption.snapshot.enabled { return try library.missingEncryptedBlobs() }
        return try library.readDatabase { db in
            try db.rows("SELECT sha256, size FROM referenced_resources ORDER BY sha256") { (Hex.encode($0.blob(0)), $0.int64(1)) }
        }.filter { !library.resources.contains($0.hash) }
    }

    /// Recorded renditions of what the assets show that are not on this device yet, with their
    /// sizes: blobs to download before originals (SyncedRenditions.swift).
    package func missingRenditions() throws -> [(hash: String, size: Int64)] { try library.missingRecordedRenditions() }

    /// Records the renditions this device made for the other devices, before an upload; returns
    /// how many.
    package func recordRenditions() throws -> Int { try library.recordRenditions() }

    /// The file holding a stored resource, or nil when it is not on this device.
    package func resourceFile(_ hash: String) -> URL? {
        if library.encryption.snapshot.enabled, let file = try? library.encryptedBlobFile(hash) { return file }
        return library.resources.contains(hash) ? library.resources.url(for: hash) : nil
    }

    /// The resource store's directory for temporary downloads.
    package var downloadDirectory: URL { library.resources.directory.appendingPathComponent("tmp") }

    /// Whether a downloaded file is stored as it arrived (its digest and flush are worth taking
    /// while it is written); false in an encrypted library, where it is decrypted into another.
    package var storesDownloadsAsReceived: Bool { !library.encryption.snapshot.enabled }

    /// Makes the store's directories for the resources named `hashes` ahead of their downloads,
    /// with one flush of the store's directory for all (none in an encrypted library).
    package func prepareDownloads(of hashes: [String]) throws {
        guard storesDownloadsAsReceived else { return }
        do { try library.resources.makeDirectories(for: hashes) } catch { throw PhotoLibrary.translate(error) }
    }

    /// Takes a downloaded file into the resource store after checking it hashes to `hash`: moved
    /// in (the download directory is inside the store, on the same file system), not copied.
    /// With `sha256`, the digest the transport took of the bytes as it wrote them, the file is not
    /// read again: it is renamed to its name when the digest is `hash`, after a flush unless the
    /// transport flushed it (`isFlushed`). Without it, the file is read and hashed here.
    package func adoptDownloadedResource(at file: URL, hash: String, sha256: [UInt8]? = nil, isFlushed: Bool = false) throws {
        if library.encryption.snapshot.enabled { return try library.adoptDownloadedBlob(at: file, name: hash) }
        defer { try? FileManager.default.removeItem(at: file) }
        do {
            let stored: String
            if let sha256 {
                stored = Hex.encode(sha256)
                if stored == hash { _ = try library.resources.adopt(fileAt: file, sha256: sha256, isFlushed: isFlushed) }
            } else {
                stored = try library.resources.ingest(fileAt: file, transfer: .move).hash
            }
            guard stored == hash else {
                throw PhotoLibraryError(
                    .networkError, "the downloaded resource \(hash) arrived with other bytes (\(stored)); sync again")
            }
        } catch let error as MediaError {
            throw PhotoLibrary.translate(error)
        }
    }

    /// Fetches a missing resource on demand (set by the sync engine: downloads the blob).
    package var resourceFetcher: Hook<@Sendable (String) throws -> Void> { library.resourceFetcher }
}

extension ReplicaState {
    static func read(_ db: Database) throws -> ReplicaState {
        let state = try db.firstRow(
            "SELECT library, remote_url, remote_token, scope, pull_cursor, last_sync FROM replica_state WHERE id = 1"
        ) { row in
            ReplicaState(
                library: row.isNull(0) ? nil : UUID(bytes: row.blob(0)), remoteURL: row.optionalText(1), remoteToken: row.optionalText(2),
                scope: row.optionalText(3).flatMap(ReplicaScope.init(rawValue:)), pullCursor: row.int64(4),
                lastSync: row.optionalInt64(5).map { UInt64(clamping: $0) })
        }
        guard let state else {
            throw PhotoLibraryError(.internalError, "the library's replica state is missing; restore the file from a backup")
        }
        return state
    }
}

extension PhotoLibrary {
    /// The library as a replica of a shared library, for the sync engine.
    package var replica: Replica { Replica(library: self) }

    /// The fold's context: this build's schema and the library's identifier.
    var foldContext: FoldContext {
        FoldContext(schema: options.eventSchema, library: binding.withLock { $0.library }, keys: encryption.payloadKeys)
    }

    /// Removes events from the views (the server rejected them): the objects they touched are
    /// refolded without them.
    func foldOut(_ events: [UUID]) throws {
        var pending: PendingCommit?
        do {
            try withArchive(writing: true) { _, archive in
                try withDatabase { db in
                    var objects = Set<UUID>(), created = Set<UUID>()
                    for id in events {
                        guard let stored = try EventLog(db).event(withID: id) else { continue }
                        objects.insert(stored.event.object)
                        if EventType(rawValue: stored.event.type)?.isCreation == true { created.insert(stored.event.object) }
                        // Memberships: the assets an album event named are refolded with the album.
                    }
                    var none: RebuildProgress?
                    let contentBefore = try PhotoLibrary.contentStamps(objects, in: db)
                    let projection = Projection(db, archive: archive)
                    var touched = try projection.refold(objects.subtracting(created), context: foldContext, progress: &none)
                    // A creation folded out may leave another creation of its object the winner.
                    touched.formUnion(try projection.resolveCreations(of: created, context: foldContext, progress: &none).touched)
                    pending = try beginCommit(touched, contentBefore: contentBefore, in: db)
                }
            }
        } catch {
            abandon(pending)
            throw error
        }
        if let pending { publish(pending) }
    }
}

/// Counts of a library for `status`.
public struct LibraryStatistics: Sendable, Hashable {
    /// Assets not purged (hidden and deleted included).
    public var assets = 0
    /// Hidden assets.
    public var hidden = 0
    /// Assets in Recently Deleted.
    public var deleted = 0
    /// Albums (not deleted, not merged away).
    public var albums = 0
    /// Events in the log (archived ones included).
    public var events = 0
    /// This device's events not yet acknowledged by the server.
    public var pendingEvents = 0
    /// This device's events the server rejected (kept, folded out).
    public var rejectedEvents = 0
    /// Events kept but not folded, by kind.
    public var quarantined: [QuarantineKind: Int] = [:]
}

enum ReplicaStatistics {
    static func outboxCount(_ db: Database, device: DeviceID) throws -> Int {
        Int(
            try db.firstRow(
                """
                SELECT count(*) FROM events INDEXED BY events_pending WHERE server_seq IS NULL AND device_id = ?
                AND event_id NOT IN (SELECT event_id FROM sync_rejections)
                """, [device.rawValue]
            ) { $0.int64(0) } ?? 0)
    }
}

extension PhotoLibrary {
    /// The library's counts: assets, albums, events, what waits to be sent, what is kept but
    /// not folded.
    public func statistics() throws -> LibraryStatistics {
        let archived = try withArchive { state, _ in state.archivedThrough }
        return try readDatabase { db in
            var statistics = LibraryStatistics()
            try db.forEachRow(
                """
                SELECT count(*), coalesce(sum(hidden), 0), coalesce(sum(\(CausalLength.absent("trash_cl"))), 0) FROM assets WHERE created = 1 AND purged = 0
                """
            ) { row in
                statistics.assets = Int(row.int64(0))
                statistics.hidden = Int(row.int64(1))
                statistics.deleted = Int(row.int64(2))
            }
            statistics.albums = Int(
                try db.firstRow(
                    "SELECT count(*) FROM albums WHERE created = 1 AND deleted = 0 AND merged_into IS NULL AND subtype = \(CollectionSubtype.albumRegular.rawValue)"
                ) {
                    $0.int64(0)
                } ?? 0)
            let live = try db.firstRow("SELECT count(*), coalesce(min(local_seq), 0) FROM events") { ($0.int64(0), $0.int64(1)) } ?? (0, 0)
            statistics.events = Int(live.0) + Int(archived)
            statistics.pendingEvents = try ReplicaStatistics.outboxCount(db, device: device)
            statistics.rejectedEvents = Int(try db.firstRow("SELECT count(*) FROM sync_rejections") { $0.int64(0) } ?? 0)
            try db.forEachRow("SELECT kind, count(*) FROM quarantine GROUP BY kind") { row in
                if let kind = QuarantineKind(rawValue: Int(row.int64(0))) { statistics.quarantined[kind] = Int(row.int64(1)) }
            }
            return statistics
        }
    }

    /// The device name `photoledger init` recorded in the library at `url`, without opening it
    /// as a library (nil when none was recorded, or the file is not a library).
    public static func recordedDevice(at url: URL) -> DeviceID? {
        var options = Database.Options()
        options.readOnly = true
        guard FileManager.default.fileExists(atPath: url.path), let db = try? Database(path: url.path, options: options) else { return nil }
        let recorded: String?? = try? db.firstRow("SELECT recorded_device FROM replica_state WHERE id = 1", []) { $0.optionalText(0) }
        if let name = recorded ?? nil { return DeviceID(name) }
        // A library not migrated yet keeps the name among its settings.
        let setting: String?? = try? db.firstRow("SELECT value FROM device_settings WHERE key = 'cli.device'", []) {
            String(decoding: $0.blob(0), as: UTF8.self)
        }
        return (setting ?? nil).map { DeviceID($0) }
    }

    /// Records this device's name in the library, for tools that open it later without one.
    public func recordDevice() throws {
        try withDatabase { try $0.execute("UPDATE replica_state SET recorded_device = ? WHERE id = 1", [device.rawValue]) }
    }
}

extension Replica {
    /// Signals each commit of this device's own events from now on (buffering at most one while
    /// the consumer is busy): what a live engine waits on to push at once.
    package func localCommits() -> AsyncStream<Void> { library.commits.subscribe() }

    /// Signals each time the image manager made and cached renditions at a synced scale (which
    /// ``recordRenditions()`` records for the other devices); buffers one signal, as
    /// ``localCommits()`` does.
    package func renditionsCached() -> AsyncStream<Void> { library.renditions.syncedRenditionCached.subscribe() }
}
