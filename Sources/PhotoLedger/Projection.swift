import Foundation
import LedgerCore
import LedgerStore

/// The objects a set of events touched, for change notifications.
struct TouchedObjects: Sendable {
    var assets: Set<UUID> = []
    var albums: Set<UUID> = []
    /// Folders (collection lists).
    var lists: Set<UUID> = []

    var isEmpty: Bool { assets.isEmpty && albums.isEmpty && lists.isEmpty }

    mutating func formUnion(_ other: TouchedObjects) {
        assets.formUnion(other.assets)
        albums.formUnion(other.albums)
        lists.formUnion(other.lists)
    }
}

/// What the fold needs besides the events: the schema it reads, and the library's identifier
/// (events bound to another library are quarantined).
struct FoldContext: Sendable {
    var schema: EventSchema
    var library: UUID?
    /// The keys that open sealed payloads (nil for a plain library).
    var keys: PayloadKeys? = nil {
        didSet { keysVersion = keys?.version }
    }
    /// The version of the asset keys when this context was made: a fold made with an older
    /// version may have found sealed what the keys held now open (or opened what a purge since
    /// destroyed).
    private(set) var keysVersion: UInt64?

    init(schema: EventSchema, library: UUID?, keys: PayloadKeys? = nil) {
        self.schema = schema
        self.library = library
        self.keys = keys
        self.keysVersion = keys?.version
    }

    /// Whether a fold made in this context is what a fold in `other` would make.
    func foldsAlike(_ other: FoldContext) -> Bool {
        library == other.library && keys === other.keys && keysVersion == other.keysVersion
    }
}

/// Events folded in memory ahead of their apply, on another thread, so the writing connection
/// only merges the result: what a pull does with the page it has fetched while the page before
/// is applied.
struct FoldedEvents: Sendable {
    let batch: ProjectionBatch
    /// How many events were folded.
    let eventCount: Int
    /// The context they were folded in.
    let context: FoldContext

    /// Folds `events` as the apply would if all of them are new to the library.
    static func fold(_ events: [Event], context: FoldContext) -> FoldedEvents {
        var batch = ProjectionBatch(expectedEvents: events.count)
        for event in events { batch.add(event, context: context) }
        return FoldedEvents(batch: batch, eventCount: events.count, context: context)
    }
}

/// The fold of events into the projection tables (see Migrations/Library/0002_projections.sql).
///
/// Every write is an upsert whose merge is commutative and idempotent: last-writer-wins
/// registers compare `(hlc, device)` stamps, causal lengths and timestamps merge with `max`,
/// flags with OR, the merge winner with `min`. So the tables depend only on the set of events,
/// never on their order or on duplicates, and an event whose target has not arrived yet leaves
/// an invisible row (`created = 0`) that the target's creation completes. Events are first
/// folded in memory per object (``ProjectionBatch``), then merged into the tables.
struct Projection {
    let database: Database
    /// The archive of a compacted library: refolds read the archived events of an object too.
    let archive: Database?

    init(_ database: Database, archive: Database? = nil) {
        self.database = database
        self.archive = archive
    }

    /// Folds stored events into the projections, one upsert per object they touch, then resolves
    /// the conflicts between creations they brought (``resolveConflicts(among:context:progress:)``).
    @discardableResult
    func apply(_ events: some Sequence<Event>, context: FoldContext) throws -> TouchedObjects {
        var batch = ProjectionBatch()
        for event in events { batch.add(event, context: context) }
        return try write(batch, context: context)
    }

    /// Writes a folded batch and resolves the conflicts between creations it brought; returns
    /// what it touched.
    func write(_ batch: ProjectionBatch, context: FoldContext) throws -> TouchedObjects {
        try batch.write(to: database)
        var touched = batch.touched
        if batch.foldedCreations {
            var none: RebuildProgress?
            touched.formUnion(try resolveConflicts(among: batch.createdObjects, context: context, progress: &none).touched)
        }
        return touched
    }

    /// The projection tables, in the order a dump lists them.
    static let tables = [
        "assets", "asset_resources", "referenced_resources", "albums", "album_members", "collection_lists", "quarantine",
        "asset_renditions",
    ]

    /// Tables added after compaction snapshots were first taken: a snapshot taken before one
    /// existed has no copy of it (it held no rows then).
    static let addedAfterSnapshots: Set<String> = ["collection_lists", "asset_renditions"]

    /// How many events a rebuild folds in memory before handing them to the writing
    /// connection: small enough that folding the next batch overlaps writing this one from
    /// the start, large enough that most objects are folded whole (it also bounds memory:
    /// at most three batches exist at once).
    static let rebuildBatchSize = 20_000

    /// The size of a rebuild's first batch, when smaller than its batch size: the writing
    /// connection waits for the first batch with nothing to do, so it comes early.
    static let rebuildFirstBatchSize = 2_000

    /// ``EventLog/columns`` in their places, those a plain event's fold does not read as NULL.
    static let plainFoldColumns = EventLog.columns.split(separator: ", ").map { column in
        ["local_seq", "event_id", "device_id", "hlc", "object_id", "type", "schema_version", "payload", "library", "key_id"]
            .contains(column) ? String(column) : "NULL"
    }.joined(separator: ", ")

    /// The page cache of a rebuild, in KiB.
    static let rebuildCacheKiB = 64 * 1024

    /// How much of the library file the rebuild's reading connections map into memory, in bytes
    /// (they are closed when it ends).
    static let rebuildMemoryMapBytes = 1 << 32

    /// Deletes every projection row and folds the whole log again, in batches folded in memory
    /// per object. After a compaction, the fold starts from the snapshot of the archived history
    /// (Compaction.swift).
    ///
    /// The log is read, decoded and folded on a second thread through a read-only connection of
    /// its own to the library file, while this connection writes the batch folded before: the
    /// write transaction this runs in keeps other writers out, so that connection reads the
    /// same log.
    ///
    /// With `chainHead`, the fold also checks the local hash chain as it reads, continuing from
    /// that value: a mismatch throws `EventLog.ChainBreak` before anything is committed. It
    /// returns how many events were checked, or nil when none were (a fold that starts from a
    /// compaction snapshot reads only the events after it, so the caller checks the chain itself).
    @discardableResult
    func rebuild(context: FoldContext, batchSize: Int = Self.rebuildBatchSize, chainHead: [UInt8]? = nil) throws -> Int? {
        let start = try CompactionSnapshot.position(in: database)
        let path = database.path
        @Sendable func readOnlyConnection() throws -> Database {
            var options = Database.Options()
            options.readOnly = true
            options.cacheSizeKiB = 2 * 1024
            // Each reads the whole log once: from the mapped file, not copied in by a system call a page.
            options.memoryMapBytes = Self.rebuildMemoryMapBytes
            return try Database(path: path, options: options)
        }
        // The chain is checked on a thread of its own, beside the fold, before anything commits.
        let verifier = (start == 0 ? chainHead : nil).map { head in
            // At a lower priority: the writing connection is the rebuild's critical path, and
            // the check fits in what the fold leaves of the other core.
            BackgroundWork(lowerPriority: true) { try EventLog(readOnlyConnection()).verify(after: 0, head: head) }
        }
        defer { _ = try? verifier?.wait() }
        let folder = FoldingThread { emit in
            try Self.fold(try readOnlyConnection(), after: start, context: context, batchSize: batchSize, emit)
        }
        defer { folder.stop() }
        // While the fold reads the log (and only the log), this connection empties the views.
        for table in Self.tables {
            try database.execute("DELETE FROM \(table)")
        }
        // A larger page cache while the fold runs, so the transaction's dirty pages are not
        // spilled to the log file and written again.
        let cacheSize = try database.firstRow("PRAGMA cache_size") { $0.int64(0) } ?? -2000
        try database.execute("PRAGMA cache_size = -\(Self.rebuildCacheKiB)")
        defer { try? database.execute("PRAGMA cache_size = \(cacheSize)") }
        if start > 0 {
            try CompactionSnapshot.restore(into: database)
            try database.execute(ProjectionBatch.allMemberAssetsSQL)
        }
        // Without a snapshot, the tables are empty: the batches keep track of what they wrote.
        var progress =
            try start > 0
            ? nil
            : RebuildProgress(
                objects: Int(database.firstRow("SELECT coalesce(max(local_seq), 0) FROM events") { $0.int64(0) } ?? 0))
        do {
            while let batch = try folder.next() {
                try batch.write(to: database, rebuilding: &progress)
                if batch.foldedCreations { _ = try resolveConflicts(among: batch.createdObjects, context: context, progress: &progress) }
            }
        } catch {
            // A row the fold cannot read was changed: the chain's break says where, and is the error.
            if case .broken(let chainBreak)? = try? verifier?.wait() { throw chainBreak }
            throw error
        }
        switch try verifier?.wait() {
        case .intact(let count): return count
        case .broken(let chainBreak): throw chainBreak
        case nil: return nil
        }
    }

    /// Reads the log after `start` in `database` and folds it in batches of up to `batchSize`
    /// events (the first of at most ``rebuildFirstBatchSize``, each next one twice as large),
    /// handing each batch to `emit` (the last one possibly empty).
    private static func fold(
        _ database: Database, after start: Int64, context: FoldContext, batchSize: Int, _ emit: (ProjectionBatch) throws -> Void
    ) throws {
        // One scan of the log in order: one read of one state of it. This device's events the
        // server rejected are folded out (no other device holds them), but stay in the chain.
        // (A library with no rejection, the usual one, asks nothing per event.)
        let rejections = try database.firstRow("SELECT EXISTS (SELECT 1 FROM sync_rejections)") { $0.int64(0) } == 1
        // The columns a plain event's fold does not read are NULL (less to step through); a
        // sealed event's row is read again whole, to be opened.
        let scan = try database.cachedStatement(
            """
            SELECT \(Self.plainFoldColumns), \(rejections ? "event_id IN (SELECT event_id FROM sync_rejections)" : "0")
            FROM events WHERE local_seq > ? ORDER BY local_seq
            """)
        defer { scan.reset() }
        try scan.bind(start, at: 1)
        let (localSequence, eventID, deviceID, hlc, objectID, typeName, schemaVersion, payload, library, keyID, rejected):
            (Int32, Int32, Int32, Int32, Int32, Int32, Int32, Int32, Int32, Int32, Int32) = (0, 1, 2, 4, 6, 7, 8, 9, 13, 14, 16)
        // Runs of events share their type and device: each is decoded from the column's bytes
        // only when it differs from the previous event's.
        var type = (bytes: [UInt8](), name: "", parsed: EventType?.none)
        var device = (bytes: [UInt8](), name: "")
        var limit = min(batchSize, Self.rebuildFirstBatchSize)
        var batch = ProjectionBatch(expectedEvents: limit)
        while try scan.step() {
            if scan.int64(rejected) != 0 { continue }
            guard let object = scan.withBlob(objectID, { UUID(bytes: $0) }), let id = scan.withBlob(eventID, { UUID(bytes: $0) }) else {
                throw DecodingError("a 16-byte identifier in the event at local position \(scan.int64(localSequence))", offset: 0)
            }
            if !scan.blob(typeName, equals: type.bytes) {
                scan.withBlob(typeName) { bytes in
                    let name = String(decoding: bytes, as: UTF8.self)
                    type = ([UInt8](bytes), name, EventType(rawValue: name))
                }
            }
            if !scan.blob(deviceID, equals: device.bytes) {
                scan.withBlob(deviceID) { bytes in device = ([UInt8](bytes), String(decoding: bytes, as: UTF8.self)) }
            }
            let stamp = WriterStamp(hlc: scan.int64(hlc), device: device.name)
            if scan.int64(keyID) != 0 {
                // A sealed payload is opened with the whole envelope as associated data.
                let row = try database.cachedStatement("SELECT \(EventLog.columns) FROM events WHERE local_seq = ?")
                defer { row.reset() }
                try row.bind(scan.int64(localSequence), at: 1)
                guard try row.step() else {
                    throw DecodingError("no row at local position \(scan.int64(localSequence)) on its second read", offset: 0)
                }
                let event = try EventLog.decode(row).event
                batch.add(context.verdict(on: event, stamp: stamp, keepingClaims: false), event: id, object: object, stamp: stamp)
            } else {
                let verdict = context.schema.verdict(
                    type: type.name, parsed: type.parsed, version: Int(clamping: scan.int64(schemaVersion)), payload: scan.blob(payload),
                    object: object,
                    stamp: stamp, bound: scan.isNull(library) ? nil : scan.withBlob(library) { UUID(bytes: $0) }, library: context.library,
                    sealed: false, keepingClaims: false
                )
                batch.add(verdict, event: id, object: object, stamp: stamp)
            }
            if batch.eventCount >= limit {
                try emit(batch)
                // Batches grow twice as large up to the batch size: the writer, slower per event
                // than the fold, is kept busy from the first batch on.
                limit = min(batchSize, limit * 2)
                batch = ProjectionBatch(expectedEvents: limit)
            }
        }
        try emit(batch)
    }
}

/// One piece of work run on a thread of its own; ``wait()`` returns its result.
final class BackgroundWork<Value: Sendable>: @unchecked Sendable {
    // Safe to share: `result` is written by the thread and read by `wait()`, both under `condition`.
    private let condition = NSCondition()
    private var result: Result<Value, any Error>?

    /// Starts `work` on a new thread; with `lowerPriority`, the thread's nice value is raised by
    /// 10, so that it runs mostly when a core would otherwise be idle. (On Linux the nice value
    /// is the calling thread's, not the whole process's.)
    init(lowerPriority: Bool = false, _ work: @escaping @Sendable () throws -> Value) {
        let thread = Thread { [self] in
            if lowerPriority {
                let which = __priority_which_t(PRIO_PROCESS.rawValue)
                _ = setpriority(which, 0, min(19, getpriority(which, 0) + 10))
            }
            let outcome = Result(catching: work)
            condition.withLock {
                result = outcome
                condition.broadcast()
            }
        }
        thread.name = "photoledger.background"
        thread.start()
    }

    /// Waits until the work is done; returns its value or rethrows its error.
    func wait() throws -> Value {
        condition.lock()
        defer { condition.unlock() }
        while true {
            if let result { return try result.get() }
            condition.wait()
        }
    }
}

/// Work that produces values on a thread of its own, handed over one at a time: the producer
/// waits while a value it made has not been taken, so at most two exist at once (the one being
/// consumed and the one waiting).
final class FoldingThread: @unchecked Sendable {
    // Safe to share: every stored property is read and written only while `condition` is locked.
    private let condition = NSCondition()
    private var waiting: ProjectionBatch?
    private var finished = false
    private var stopped = false
    private var failure: (any Error)?

    /// Starts `produce` on a new thread; it hands each value to the closure it is given.
    init(_ produce: @escaping @Sendable (_ emit: (ProjectionBatch) throws -> Void) throws -> Void) {
        let thread = Thread { [self] in
            do {
                try produce { value in try self.put(value) }
            } catch is Stopped {
            } catch {
                condition.withLock { failure = error }
            }
            condition.withLock {
                finished = true
                condition.broadcast()
            }
        }
        thread.name = "photoledger.rebuild.fold"
        thread.start()
    }

    private struct Stopped: Error {}

    private func put(_ value: ProjectionBatch) throws {
        condition.lock()
        defer { condition.unlock() }
        while waiting != nil && !stopped { condition.wait() }
        if stopped { throw Stopped() }
        waiting = value
        condition.broadcast()
    }

    /// The next value, or nil when the producer is done; rethrows the producer's error.
    func next() throws -> ProjectionBatch? {
        condition.lock()
        defer { condition.unlock() }
        while waiting == nil && !finished { condition.wait() }
        if let value = waiting {
            waiting = nil
            condition.broadcast()
            return value
        }
        if let failure { throw failure }
        return nil
    }

    /// Stops the producer (at its next hand-over) and waits until its thread is done.
    func stop() {
        condition.lock()
        defer { condition.unlock() }
        stopped = true
        waiting = nil
        condition.broadcast()
        while !finished { condition.wait() }
    }
}
