import Dispatch
import Foundation
import LedgerCore
import LedgerStore
import PhotoMedia
import Synchronization

/// A photo library stored in one SQLite file: assets and albums, changed only through change
/// requests inside change blocks, every change an event in an append-only log.
///
/// ```swift
/// let library = try PhotoLibrary(url: libraryURL, device: "anna-phone")
/// let placeholder = try await library.performChanges { changes in
///     let created = try changes.createAsset(fromImageAt: fileURL)
///     let album = try changes.album(titled: "Trip") ?? changes.createAlbum(title: "Trip")
///     try album.insertAssets([created.placeholderForCreatedAsset], at: [0])
///     return created.placeholderForCreatedAsset
/// }
/// let asset = try library.fetchAssets(withLocalIdentifiers: [placeholder.localIdentifier]).first
/// ```
///
/// A `PhotoLibrary` is safe to use from any thread or task; change blocks run one at a time.
public final class PhotoLibrary: Sendable {
    /// Settings of a library instance.
    public struct Options: Sendable {
        /// The physical clock, in Unix milliseconds (injected in tests).
        public var clock: @Sendable () -> UInt64 = { WallClock.milliseconds() }
        /// A seed for identifiers and position keys; nil uses the system's random source.
        public var randomSeed: UInt64?
        /// Answers authorization requests, as the system prompt would.
        public var promptHandler: (@Sendable (AccessLevel) async -> AuthorizationStatus)?
        /// How far ahead of this device's clock a received event's timestamp may be.
        public var maximumClockDrift: Duration = .seconds(300)
        /// How long assets stay in Recently Deleted before ``PhotoLibrary/purgeExpiredDeletions()`` removes them.
        public var deletionRetention: Duration = .seconds(30 * 24 * 3600)
        /// Open with read and write access already granted (for tools that own their library).
        public var preauthorized = false
        /// The most bytes the image manager's rendition cache keeps beside the library before it
        /// evicts the least recently used renditions.
        public var renditionCacheLimit: Int64 = 2 << 30
        /// The event schema the library reads (tests simulate a newer build with it).
        package var eventSchema = EventSchema.standard

        /// Default options.
        public init() {}
    }

    /// The namespace of name-based identifiers (smart albums, albums with a stable key).
    public static let namespace = UUID(uuidString: "6F0A39D4-7C1E-4D7B-9B57-5A3C2B1E8F10")!

    /// This device's identity in the library.
    public let device: DeviceID
    /// The library file.
    public let url: URL
    let options: Options
    /// The writer (change blocks, applied pages) and a pool of read-only connections (fetches,
    /// what fetch results read lazily, authorization checks, the outbox): a read sees the last
    /// commit and never waits for a change block.
    let storage: DatabasePool
    let clock: HybridLogicalClock
    let identifiers: UUIDv7Generator
    let randomness: RandomSource
    let observers: ObserverRegistry
    /// The fetches the app holds results of, for change details captured at each commit.
    let tracker = ChangeTracker()
    /// Wakes live sync engines when a change block of this device commits events.
    let commits: CommitSignal
    /// The content-addressed store of resource bytes, in a directory beside the library file.
    let resources: ResourceStore
    /// The archive of a compacted library, opened once.
    let archiveConnection = ArchiveConnection()
    /// Fetches a missing resource (set by the sync engine: downloads the blob).
    let resourceFetcher = Hook<@Sendable (String) throws -> Void>()
    /// The image manager's cache of renditions and the threads that make them.
    let renditions: Renditions
    /// The shared library this replica is bound to, and the token's scope (cached from
    /// `replica_state`: every fetch and change block consults the scope).
    let binding: Mutex<(library: UUID?, scope: ReplicaScope?)>
    /// The keys of an end-to-end encrypted library, as this device holds them.
    let encryption = EncryptionKeys()
    /// The write of arriving asset keys running on a thread of its own, if any (``BackgroundKeyWrite``).
    let pendingKeyWrite = Mutex<BackgroundKeyWrite?>(nil)

    /// Opens (creating if needed) the library at `url` for `device`.
    ///
    /// - Throws: ``PhotoLibraryError`` with `.internalError` when the file is not a library
    ///   or is damaged, `.changeNotSupported` when it was made by a newer version.
    public init(url: URL, device: DeviceID, options: Options = Options()) throws {
        if let problem = DeviceID.problem(with: device.rawValue) {
            throw PhotoLibraryError(.changeNotSupported, "invalid device name '\(device.rawValue)': \(problem)")
        }
        self.url = url
        self.device = device
        self.options = options
        do {
            // Commits (change blocks, pulled pages) leave checkpoints to a thread of their own.
            var storageOptions = DatabasePool.Options()
            storageOptions.writer.checkpointsInBackground = true
            storage = try DatabasePool(path: url.path, options: storageOptions)
            try storage.writeWithoutTransaction { try Migrator.library().migrate($0) }
            let last = try storage.read { try EventLog($0).lastTimestamp() }
            let state = try storage.read { try ReplicaState.read($0) }
            binding = Mutex((state.library, state.scope))
            let keys = encryption
            try storage.read { try keys.load($0) }
            let drift = options.maximumClockDrift.components
            clock = HybridLogicalClock(
                physicalClock: options.clock, last: last,
                maximumDriftMilliseconds: UInt64(drift.seconds) * 1000 + UInt64(drift.attoseconds / 1_000_000_000_000_000))
        } catch {
            throw Self.translate(error, doing: "open the library at \(url.path)")
        }
        let seed = options.randomSeed
        identifiers = UUIDv7Generator(
            clock: options.clock,
            random: seed.map { SeededRandomNumberGenerator(seed: $0) as any RandomNumberGenerator & Sendable }
                ?? SystemRandomNumberGenerator())
        randomness = RandomSource(seed: seed.map { $0 ^ 0x5DEE_CE66_D1CE_4E5B })
        do {
            resources = try ResourceStore(directory: Self.resourceDirectory(for: url))
        } catch {
            throw Self.translate(error)
        }
        observers = ObserverRegistry()
        commits = CommitSignal()
        renditions = Renditions(libraryURL: url, cacheLimit: options.renditionCacheLimit)
        if options.preauthorized {
            try setAuthorizationStatus(.authorized, for: .readWrite)
        }
        try refoldWhenSchemaGrew()
    }

    /// Folds again the events kept for a newer build when this build reads more than the one
    /// that last folded the library (an upgrade), and records what this build reads.
    private func refoldWhenSchemaGrew() throws {
        let fingerprint = options.eventSchema.fingerprint
        let (folded, waiting) = try readDatabase { db in
            (
                try db.firstRow("SELECT folded_schema FROM replica_state WHERE id = 1") { $0.text(0) } ?? "",
                try db.firstRow("SELECT count(*) FROM quarantine WHERE kind = ?", [Int64(QuarantineKind.needsNewerVersion.rawValue)]) {
                    $0.int64(0)
                } ?? 0
            )
        }
        guard folded != fingerprint else { return }
        if waiting > 0 { try rebuild() }
        try withDatabase { try $0.execute("UPDATE replica_state SET folded_schema = ? WHERE id = 1", [fingerprint]) }
    }

    // MARK: Change blocks

    /// Runs a change block and waits for it. All changes in the block commit together as one
    /// atomic group of events, or none does when the block throws.
    ///
    /// - Throws: The block's error, or ``PhotoLibraryError``: `.accessUserDenied` /
    ///   `.accessRestricted` without write access, `.changeNotSupported` when called from inside
    ///   another change block.
    @discardableResult
    public func performChangesAndWait<T>(_ body: (LibraryChanges) throws -> T) throws -> T {
        if storage.isWritingOnCurrentThread {
            throw PhotoLibraryError(
                .changeNotSupported,
                "performChanges cannot be nested: this thread is already inside a change block; make all changes in the outer block")
        }
        var afterCommit: [() -> Void] = []
        var pending: PendingCommit?
        var committedEvents = false
        let result: T
        do {
            // The archive of a compacted library is entered first (as pulls do): a purge refolds
            // the asset's archived events too.
            result = try withArchive(writing: true) { _, archive in
                try storage.write { db in
                    let access = try self.writeAccess(in: db)
                    let changes = try LibraryChanges(library: self, database: db, access: access, archive: archive)
                    defer { changes.invalidate() }
                    let value = try body(changes)
                    try changes.commit()
                    afterCommit = changes.afterCommit
                    committedEvents = changes.committedEvents
                    pending = try beginCommit(changes.touched, contentBefore: changes.contentBefore, in: db)
                    return value
                }
            }
        } catch {
            abandon(pending)
            throw Self.translate(error, doing: "perform changes")
        }
        for action in afterCommit { action() }
        if committedEvents { commits.signal() }
        if let pending { publish(pending) }
        return result
    }

    /// Runs a change block off the caller's thread and returns its result once it has committed.
    @discardableResult
    public func performChanges<T: Sendable>(_ body: @escaping @Sendable (LibraryChanges) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Self.changeQueue.async {
                continuation.resume(with: Result { try self.performChangesAndWait(body) })
            }
        }
    }

    /// Runs a change block off the caller's thread, then calls `completionHandler` with its
    /// outcome (PhotoKit's `performChanges(_:completionHandler:)`): `.success` with the block's
    /// value once it has committed, `.failure` with the error when nothing was changed. The
    /// handler runs on a queue of the library's, not the caller's.
    public func performChanges<T: Sendable>(
        _ body: @escaping @Sendable (LibraryChanges) throws -> T, completionHandler: @escaping @Sendable (Result<T, any Error>) -> Void
    ) {
        Self.changeQueue.async {
            completionHandler(Result { try self.performChangesAndWait(body) })
        }
    }

    static let changeQueue = DispatchQueue(label: "photoledger.changes", attributes: .concurrent)

    // MARK: Events from other devices

    /// Applies a pull page in one transaction with the log, the server's chain values and the
    /// cursor: new events are appended and folded, events already present are acknowledged. The
    /// server's chain values are checked against the events held here and recorded
    /// (``verifyServerChain(_:)``); a mismatch rolls the whole page back and throws
    /// ``ServerChainMismatch``. An event that fails validation is kept and quarantined, never
    /// folded: the rest of the page applies.
    func applyRemoteEvents(_ page: PreparedPage) throws -> AppliedPage {
        var touched = TouchedObjects()
        var applied = AppliedPage()
        var pending: PendingCommit?
        var afterCommit: () -> Void = {}
        // Keys written on a thread of their own (a sync's first page folds while they are):
        // stored before this page, or its fold is made again with the keys the database holds.
        try finishKeyWrite()
        let context = foldContext
        do {
            try withArchive(writing: true) { _, archive in
                try storage.write { db in
                    // This device's own events coming back are confirmed, not appended again.
                    let state = try AuditState.read(db)
                    let echoes = try Self.confirmEchoes(
                        page, device: device, db: db, archivedHash: (state.archivedThrough, state.archivedHash))
                    let kept =
                        echoes.isEmpty ? Array(page.events.indices) : page.events.indices.filter { echoes[page.events[$0].id] == nil }
                    let events = echoes.isEmpty ? page.events : kept.map { page.events[$0] }
                    let sequences = page.serverSequences.map { all in echoes.isEmpty ? all : kept.map { all[$0] } }
                    let entries = echoes.isEmpty || page.chain.count != page.events.count ? page.chain : kept.map { page.chain[$0] }
                    for event in events where event.device != device {
                        // A stamp too far ahead of this clock is applied but does not drag the clock along.
                        try? clock.receive(event.timestamp)
                    }
                    // The server's chain value reported with each event (a pull page's entries follow its
                    // events), kept in the event's row when it is appended now; checked below.
                    let reported: [[UInt8]?]? =
                        entries.isEmpty
                        ? nil
                        : events.indices.map { index in
                            guard index < entries.count, entries[index].eventID == events[index].id,
                                let sequence = sequences?[index], entries[index].serverSequence == sequence
                            else { return nil }
                            return entries[index].chainHash
                        }
                    let result = try EventLog(db).appendLinking(
                        events, serverSequences: sequences, serverChainHashes: reported, precomputed: echoes.isEmpty ? page.localChain : nil
                    )
                    var appended: [UUID: AppendedEvent] = [:]
                    appended.reserveCapacity(events.count)
                    var firstAppended: Int64?
                    for (index, outcome) in result.outcomes.enumerated() {
                        switch outcome {
                        case .appended(let localSequence):
                            firstAppended = min(firstAppended ?? localSequence, localSequence)
                            appended[events[index].id] = AppendedEvent(
                                event: events[index], localSequence: localSequence, link: result.links[index],
                                serverChainHash: reported?[index])
                        case .duplicate:
                            // Held already (a repeated delivery): acknowledge it.
                            guard let sequences else { continue }
                            try db.execute(
                                "UPDATE events SET server_seq = ? WHERE event_id = ? AND server_seq IS NULL",
                                [sequences[index], events[index].id.bytes])
                        }
                    }
                    let projection = Projection(db, archive: archive)
                    var batch: ProjectionBatch
                    if page.folded.eventCount == events.count, appended.count == events.count,
                        page.folded.context.foldsAlike(context)
                    {
                        // Every event is new here, so the page's fold is the fold of what was appended
                        // (with the keys held now: keys that arrived since open what it found sealed,
                        // and keys destroyed since must not open anything).
                        batch = page.folded.batch
                    } else {
                        batch = ProjectionBatch()
                        for event in events where appended[event.id] != nil { batch.add(event, context: context) }
                    }
                    let contentBefore = try Self.contentStamps(batch.contentEditedAssets, in: db)
                    try batch.write(to: db)
                    touched = batch.touched
                    applied.newEvents = appended.count
                    applied.quarantined = batch.quarantined.compactMap { verdict in
                        appended[verdict.event].map { QuarantineEntry(event: $0.event, kind: verdict.kind, reason: verdict.reason) }
                    }
                    if batch.foldedCreations {
                        var none: RebuildProgress?
                        let resolution = try projection.resolveConflicts(among: batch.createdObjects, context: context, progress: &none)
                        touched.formUnion(resolution.touched)
                        applied.changedVerdicts = resolution.changedVerdicts.count
                    }
                    let settled = try settleShredding(events, appended: appended, applied: &applied, db: db, archive: archive)
                    afterCommit = { self.finishShredding(settled) }
                    let report = try Self.recordServerChain(
                        page.chain, appended: echoes.isEmpty ? appended : appended.merging(echoes) { appendedNow, _ in appendedNow },
                        appendedFrom: firstAppended,
                        db: db,
                        archive: archive)
                    if let failure = report.failure { throw ServerChainMismatch(failure: failure) }
                    if let cursor = page.cursor {
                        // Never back: a push confirmed from the server's head may have moved it past this page.
                        try db.execute("UPDATE replica_state SET pull_cursor = max(pull_cursor, ?) WHERE id = 1", [cursor])
                    }
                    pending = try beginCommit(touched, contentBefore: contentBefore, in: db)
                }
            }
        } catch let mismatch as ServerChainMismatch {
            abandon(pending)
            throw mismatch
        } catch {
            abandon(pending)
            throw Self.translate(error, doing: "apply events from other devices")
        }
        afterCommit()
        if let pending { publish(pending) }
        return applied
    }

    /// Applies events from other devices as a pull page would, with server sequences and chain
    /// values when given, folded ahead when `prefolded` (for tests of the apply and the fold).
    @discardableResult
    func applyRemoteEvents(_ events: [Event], serverSequences: [Int64]? = nil, chain: [ServerChainEntry] = [], prefolded: Bool = false)
        throws
        -> Int
    {
        let page = PreparedPage(
            events: events, serverSequences: serverSequences, chain: chain, cursor: nil, localChain: nil,
            folded: prefolded ? FoldedEvents.fold(events, context: foldContext) : FoldedEvents.fold([], context: foldContext))
        return try applyRemoteEvents(page).newEvents
    }

    /// Records server sequences of this device's events, in runs of consecutive device and
    /// server sequences (one statement per run); events acknowledged before keep their value.
    static func acknowledge(_ stored: [(deviceSequence: Int64, serverSequence: Int64)], device: DeviceID, db: Database) throws {
        let sorted = stored.sorted { $0.deviceSequence < $1.deviceSequence }
        var index = 0
        let update = try db.cachedStatement(
            "UPDATE events SET server_seq = device_seq + ?1 WHERE device_id = ?2 AND device_seq BETWEEN ?3 AND ?4 AND server_seq IS NULL")
        while index < sorted.count {
            var end = index
            while end + 1 < sorted.count, sorted[end + 1].deviceSequence == sorted[end].deviceSequence + 1,
                sorted[end + 1].serverSequence == sorted[end].serverSequence + 1
            {
                end += 1
            }
            defer { update.reset() }
            try update.bind(sorted[index].serverSequence - sorted[index].deviceSequence, at: 1)
            try update.bind(device.rawValue, at: 2)
            try update.bind(sorted[index].deviceSequence, at: 3)
            try update.bind(sorted[end].deviceSequence, at: 4)
            try update.step()
            index = end + 1
        }
    }

    /// This device's own events coming back in a pull page (sent earlier, now in the server's
    /// order): confirmed against the copies held here without being appended, decoded or looked
    /// up one by one. One range read finds them by device sequence; each copy is checked by
    /// recomputing this library's chain value over the page's bytes (so the server cannot have
    /// changed them); their server sequences are recorded in runs. Returns the confirmed events,
    /// as the server chain check takes them; events not held here (none, for a device whose log
    /// is whole) are left to the ordinary append.
    ///
    /// - Throws: ``ServerChainMismatch`` when the server's copy differs from the one held here,
    ///   or the server has it at another position than the one it acknowledged.
    static func confirmEchoes(
        _ page: PreparedPage, device: DeviceID, db: Database, archivedHash: (through: Int64, hash: [UInt8])
    ) throws -> [UUID: AppendedEvent] {
        guard let sequences = page.serverSequences else { return [:] }
        let own = page.events.indices.filter { page.events[$0].device == device }
        guard let low = own.map({ page.events[$0].deviceSequence }).min(), let high = own.map({ page.events[$0].deviceSequence }).max()
        else {
            return [:]
        }
        var held: [Int64: (localSequence: Int64, id: [UInt8], serverSequence: Int64?, hash: [UInt8])] = [:]
        try db.forEachRow(
            "SELECT device_seq, local_seq, event_id, server_seq, hash FROM events WHERE device_id = ? AND device_seq BETWEEN ? AND ?",
            [device.rawValue, low, high]
        ) { row in
            held[row.int64(0)] = (row.int64(1), row.blob(2), row.optionalInt64(3), row.blob(4))
        }
        var hashes: [Int64: [UInt8]] = [:]
        for row in held.values { hashes[row.localSequence] = row.hash }
        var confirmed: [UUID: AppendedEvent] = [:]
        var acknowledgements: [(deviceSequence: Int64, serverSequence: Int64)] = []
        var chain = HashChain()
        for index in own {
            let event = page.events[index]
            guard let row = held[event.deviceSequence], row.id == event.id.bytes else { continue }
            let position = sequences[index]
            func mismatch(_ reason: String) -> ServerChainMismatch {
                ServerChainMismatch(
                    failure: ChainFailure(chain: .server, position: position, eventID: event.id, location: .live, reason: reason))
            }
            if let acknowledged = row.serverSequence, acknowledged != position {
                throw mismatch(
                    "this device's event is acknowledged here at server position \(acknowledged) but the server now has it at \(position)")
            }
            let before = row.localSequence - 1
            let previous: [UInt8]
            if let known = hashes[before] {
                previous = known
            } else if before == archivedHash.through {
                previous = archivedHash.hash
            } else if before == 0 {
                previous = HashChain.origin
            } else {
                guard let stored = try db.firstRow("SELECT hash FROM events WHERE local_seq = ?", [before], { $0.blob(0) }) else {
                    continue
                }
                previous = stored
            }
            chain.advance(to: previous)
            guard chain.hash(linking: event) == row.hash else {
                throw mismatch("the server's copy of this device's event differs from the one this device made: the server changed it")
            }
            confirmed[event.id] = AppendedEvent(
                event: event, localSequence: row.localSequence, link: EventLog.ChainLink(previous: previous, hash: row.hash),
                serverChainHash: nil)
            if row.serverSequence == nil { acknowledgements.append((event.deviceSequence, position)) }
        }
        try acknowledge(acknowledgements, device: device, db: db)
        return confirmed
    }

    /// A pull page whose events do not match the server's chain values; nothing of it was applied.
    package struct ServerChainMismatch: Error, CustomStringConvertible {
        /// The first entry that did not match.
        package var failure: ChainFailure

        package var description: String { "the server's event chain does not match this device's copy: \(failure)" }
    }

    /// Runs `body` on the library's database inside a write transaction.
    func withDatabase<T>(_ body: (Database) throws -> T) throws -> T {
        do { return try storage.write(body) } catch { throw Self.translate(error, doing: "update the library") }
    }

    /// Runs `body` on the writer's connection outside a transaction (each statement its own).
    func withDatabaseWithoutTransaction<T>(_ body: (Database) throws -> T) throws -> T {
        do { return try storage.writeWithoutTransaction(body) } catch { throw Self.translate(error, doing: "read the library") }
    }

    /// Runs `body` on the library's database for reading.
    func readDatabase<T>(_ body: (Database) throws -> T) throws -> T {
        do { return try storage.read(body) } catch { throw Self.translate(error, doing: "read the library") }
    }

    // MARK: Maintenance

    /// Deletes and refolds every projection from the log, verifying the log's hash chain as it
    /// reads it; nothing is committed unless the chain verifies. The result is identical to the
    /// projections maintained incrementally.
    ///
    /// - Throws: ``PhotoLibraryError`` `.internalError` when the chain does not verify: a log
    ///   that was changed is not folded and the views stay as they were (restore the library from
    ///   a backup or a synced copy).
    public func rebuild() throws {
        try rebuild(batchSize: Projection.rebuildBatchSize)
    }

    /// Rebuilds folding `batchSize` events in memory at a time.
    func rebuild(batchSize: Int) throws {
        func refuse(_ failure: ChainFailure) -> PhotoLibraryError {
            PhotoLibraryError(
                .internalError,
                "could not rebuild the projections: the log does not verify (\(failure)); nothing was changed — restore the library from a "
                    + "backup or from a synced copy")
        }
        // Without an archive, the fold checks the chain as it reads the log, and its transaction
        // commits only when every event matched: a mismatch rolls it back, so nothing is changed.
        // A compacted library's archive is checked first, with the rest of the log.
        let archived = try readDatabase { try AuditState.read($0) }.archivedThrough > 0
        if archived, let failure = try verifyChain().failure { throw refuse(failure) }
        let context = foldContext
        do {
            try withArchive(writing: true) { _, archive in
                let shredded = try storage.write { db in
                    let projection = Projection(db, archive: archive)
                    let checked: Int?
                    do {
                        checked = try projection.rebuild(
                            context: context, batchSize: batchSize, chainHead: archived ? nil : HashChain.origin)
                    } catch let broken as EventLog.ChainBreak {
                        throw refuse(
                            ChainFailure(
                                chain: .local, position: broken.localSequence, eventID: broken.eventID, location: .live,
                                reason: "the stored hash does not match: the event, or one before it, was changed, removed or reordered"))
                    }
                    if !archived {
                        if checked == nil, let failure = try verifyChain().failure { throw refuse(failure) }
                        if let failure = try Self.missingTail(in: db, archivedThrough: 0) { throw refuse(failure) }
                    }
                    // Only an encrypted library shreds (its purged assets' keys): another need not look for them.
                    return try shred(encryption.snapshot.enabled ? Set(purgedAssets(db)) : [], in: db, archive: archive)
                }
                finishShredding(shredded)
            }
        } catch {
            throw Self.translate(error, doing: "rebuild the projections")
        }
    }

    /// Waits until the write-ahead log checkpoints that commits asked for have run (they run on
    /// a thread of their own), or `timeout` passes; returns whether they did. For measurements
    /// that must include them.
    @discardableResult
    package func waitForBackgroundCheckpoints(timeout: Duration = .seconds(10)) -> Bool {
        storage.waitForBackgroundCheckpoints(timeout: timeout)
    }

    /// Verifies the hash chain of the log, through the archive of a compacted library: the same
    /// check and the same report as ``verifyChain()`` (which says which file a failure is in).
    public func verify() throws -> ChainVerificationReport {
        try verifyChain()
    }

    /// Purges assets that have been in Recently Deleted longer than the retention period.
    /// Returns their identifiers.
    @discardableResult
    public func purgeExpiredDeletions() throws -> [String] {
        let retention = options.deletionRetention.components.seconds * 1000
        let cutoff = HLCTimestamp(milliseconds: options.clock() - UInt64(max(0, retention)), counter: 0)
        let expired = try readDatabase { db in
            try db.rows(
                "SELECT asset_id FROM assets WHERE created = 1 AND purged = 0 AND \(CausalLength.absent("trash_cl")) AND trashed_hlc < ?",
                [Int64(bitPattern: cutoff.rawValue)]
            ) { LocalIdentifier(uuid: UUID(bytes: $0.blob(0))!, kind: .asset).description }
        }
        guard !expired.isEmpty else { return [] }
        try performChangesAndWait { try $0.purgeAssets(expired) }
        return expired
    }

    // MARK: Helpers

    static func parse(_ reference: any ObjectReference, kind: ObjectKind) throws -> UUID {
        guard let identifier = LocalIdentifier(reference.localIdentifier), identifier.kind == kind else {
            throw PhotoLibraryError(
                .identifierNotFound,
                "'\(reference.localIdentifier)' is not a valid \(kind.name) identifier "
                    + "(expected <UUID>/L0/\(kind.rawValue))")
        }
        return identifier.uuid
    }

    /// Turns any failure into a ``PhotoLibraryError`` that says what to do.
    static func translate(_ error: any Error, doing action: String) -> any Error {
        switch error {
        case is PhotoLibraryError, is CancellationError:
            return error
        case let error as DatabaseError where error.code == 13:
            return PhotoLibraryError(.notEnoughSpace, "could not \(action): the disk is full; free some space and retry")
        case let error as DatabaseError:
            return PhotoLibraryError(.internalError, "could not \(action): \(error)")
        case let error as MigrationError:
            if case .newerSchema = error.reason { return PhotoLibraryError(.changeNotSupported, error.description) }
            return PhotoLibraryError(.internalError, error.description)
        case let error as ClockDriftError:
            return PhotoLibraryError(.operationInterrupted, "could not \(action): \(error)")
        case let error as DecodingError:
            return PhotoLibraryError(
                .internalError, "could not \(action): \(error); the log is damaged there: run `photoledger verify` to check its hash chain")
        case let error as StoreUsageError:
            return PhotoLibraryError(.changeNotSupported, "could not \(action): \(error.message)")
        default:
            return error
        }
    }
}
