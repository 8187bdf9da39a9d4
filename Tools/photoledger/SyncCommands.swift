import CommandLineParsing
import Foundation
@preconcurrency import Glibc
import LedgerCore
import PhotoLedger
import PhotoLedgerJSON
import PhotoLedgerSync

/// `photoledger remote …`: the server this library syncs with.
struct Remote: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "remote", abstract: "Configure the sync server.", subcommands: [SetURL.self, Show.self])

    @OptionGroup(title: GlobalOptions.title) var global: GlobalOptions

    /// `remote set URL --token TOKEN`.
    struct SetURL: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "set", abstract: "Set the server library URL and this device's token.")

        @OptionGroup(title: GlobalOptions.title) var global: GlobalOptions
        @Argument(help: "http://HOST:PORT/v1/libraries/NAME") var url: String
        @Option(help: "The device token printed by 'photoledger-server admin issue-token'.") var token: String

        func run() throws {
            let context = try Context(global)
            let library = try context.openLibrary()
            let remote = try SyncRemote(libraryURL: url, token: token)
            try remote.save(in: library)
            if context.json {
                context.emit(.object([("url", .string(remote.description))]))
            } else {
                context.say("Remote set to \(remote.description).")
            }
        }
    }

    /// `remote show`.
    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "show", abstract: "Show the configured server.")

        @OptionGroup(title: GlobalOptions.title) var global: GlobalOptions

        func run() throws {
            let context = try Context(global)
            let library = try context.openLibrary()
            let remote = try SyncRemote.saved(in: library)
            if context.json {
                context.emit(.object([("url", .string(remote?.description))]))
            } else {
                print(remote?.description ?? "No remote is set; set one with 'photoledger remote set URL --token TOKEN'.")
            }
        }
    }
}

/// `photoledger sync`.
struct Sync: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync", abstract: "Push local changes, pull other devices' changes, transfer photos.")

    @OptionGroup(title: GlobalOptions.title) var global: GlobalOptions
    @Flag(
        help:
            "Keep syncing live until interrupted (Ctrl-C): changes of other devices arrive as they are made, this device's are pushed at once."
    )
    var watch = false
    @Flag(
        help:
            "Replay the whole history even when the server has a snapshot (by default a new, empty library starts from the newest snapshot and verifies it against the history afterwards)."
    )
    var noSnapshot = false

    func run() async throws {
        let context = try Context(global)
        let library = try context.openLibrary()
        guard let remote = try SyncRemote.saved(in: library) else { throw SyncError.noRemote }
        var options = SyncEngine.Options()
        options.bootstrapFromSnapshot = !noSnapshot
        let engine = SyncEngine(library: library, remote: remote, options: options)
        guard watch else {
            let accepted = try await Self.syncOnce(engine, context)
            if !accepted { throw ExitCode.failure }
            return
        }
        try await Self.watch(engine, library: library, context: context)
    }

    /// Syncs live until SIGINT or SIGTERM, printing each change as it lands.
    private static func watch(_ engine: SyncEngine, library: PhotoLibrary, context: Context) async throws {
        let watching = Task {
            var token = try library.currentChangeToken
            for try await event in engine.live() {
                switch event {
                case .started(let report):
                    Self.summarize(report, engine: engine, context: context)
                    token = try library.currentChangeToken
                    context.say("Watching \(engine.remote.description) live; press Ctrl-C to stop.")
                case .pulled(let report), .pushed(let report):
                    Self.describe(report, context: context, library: library, since: &token)
                case .interrupted(let reason, let delay):
                    context.warn(
                        "Error: \(reason) (retrying in \(formatDuration(Double(delay.components.seconds) + Double(delay.components.attoseconds) * 1e-18)))"
                    )
                    if context.json { context.emit(.object([("event", .string("interrupted")), ("reason", .string(reason))])) }
                case .resumed:
                    context.say("Connected again.")
                    if context.json { context.emit(.object([("event", .string("resumed"))])) }
                case .historyVerified(let status):
                    if status.differences.isEmpty { context.say("Snapshot: \(status)") } else { context.warn("snapshot: \(status)") }
                    if context.json {
                        context.emit(
                            .object([
                                ("event", .string("historyVerified")), ("position", .int(status.position)),
                                ("differences", .int(Int64(status.differences.count))),
                            ]))
                    }
                }
            }
        }
        let stop = TerminationWatch { watching.cancel() }
        defer { stop.cancel() }
        try await watching.value
        context.say("Stopped.")
    }

    /// Prints what a live step did: its warnings, then each object change it brought (from the
    /// library's persistent changes after `token`, which moves on).
    private static func describe(_ report: SyncReport, context: Context, library: PhotoLibrary, since token: inout PersistentChangeToken) {
        for rejection in report.rejectedEvents { context.warn("rejected by the server (folded out here): \(rejection)") }
        for event in report.quarantinedEvents { context.warn("quarantined (kept, not applied): \(event)") }
        for hash in report.unavailableResources { context.warn("missing on the server (never uploaded by its device): resource \(hash)") }
        guard let changes = try? library.fetchPersistentChanges(since: token) else { return }
        for change in changes {
            token = change.changeToken
            let own = change.devices == [library.device]
            let from = own ? "this device" : change.devices.map(\.rawValue).sorted().joined(separator: ", ")
            for (type, name) in [(ObjectType.asset, "asset"), (.assetCollection, "album"), (.collectionList, "folder")] {
                let details = change.changeDetails(for: type)
                for (kind, ids) in [
                    ("inserted", details.insertedLocalIdentifiers), ("updated", details.updatedLocalIdentifiers),
                    ("deleted", details.deletedLocalIdentifiers),
                ] {
                    for id in ids.sorted() {
                        if context.json {
                            context.emit(
                                .object([
                                    ("event", .string("change")), ("change", .string(kind)), ("type", .string(name)),
                                    ("localIdentifier", .string(id)),
                                    ("devices", .array(change.devices.map(\.rawValue).sorted().map { .string($0) })),
                                    ("cursor", .int(report.cursor)),
                                ]))
                        } else {
                            context.say("\(name) \(id) \(kind) by \(from)")
                        }
                    }
                }
            }
        }
    }

    /// Syncs once and reports; false when the server rejected events.
    private static func syncOnce(_ engine: SyncEngine, _ context: Context) async throws -> Bool {
        let display = SyncProgressDisplay(enabled: !context.quiet && !context.json)
        let report = try await engine.sync { display.show($0) }
        display.finish()
        summarize(report, engine: engine, context: context)
        return true
    }

    /// Prints what a sync did: warnings, then a summary line (or the JSON object).
    private static func summarize(_ report: SyncReport, engine: SyncEngine, context: Context) {
        for rejection in report.rejectedEvents { context.warn("rejected by the server (folded out here): \(rejection)") }
        for event in report.quarantinedEvents { context.warn("quarantined (kept, not applied): \(event)") }
        for hash in report.unavailableResources { context.warn("missing on the server (never uploaded by its device): resource \(hash)") }
        for note in report.encryptionNotes { context.warn("encryption: \(note)") }
        for note in report.snapshotNotes { context.warn("snapshot: \(note)") }
        if let snapshot = report.snapshot, !snapshot.differences.isEmpty { context.warn("snapshot: \(snapshot)") }
        if report.changedVerdicts > 0 {
            context.warn("\(count(report.changedVerdicts, "earlier event")) changed verdict: an earlier creation of an object arrived")
        }
        if context.json {
            context.emit(SyncJSON.json(report))
        } else {
            let scope = report.scope.map { $0 == .readWrite ? "" : " (this device's token is \($0.rawValue))" } ?? ""
            context.say(
                "Synced with \(engine.remote.description)\(scope): pushed \(count(report.pushedEvents, "event")), pulled \(report.pulledEvents); "
                    + "uploaded \(count(report.uploadedResources, "photo")) (\(formatBytes(report.uploadedBytes))), "
                    + "downloaded \(report.downloadedResources) (\(formatBytes(report.downloadedBytes)))"
                    + (report.uploadedRenditions + report.downloadedRenditions > 0
                        ? "; thumbnails: \(report.uploadedRenditions) up, \(report.downloadedRenditions) down." : "."))
        }
    }

    /// The message of a sync failure.
    static func describe(_ error: any Error) -> String {
        (error as? SyncError)?.description ?? (error as? PhotoLibraryError)?.message ?? "\(error)"
    }
}

/// Runs `action` once when SIGINT or SIGTERM arrives, instead of the default of ending the
/// process at once; ``cancel()`` restores the defaults.
final class TerminationWatch {
    private let sources: [any DispatchSourceSignal]

    init(_ action: @escaping @Sendable () -> Void) {
        sources = [SIGINT, SIGTERM].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler(handler: action)
            source.resume()
            return source
        }
    }

    func cancel() {
        for source in sources {
            source.cancel()
            signal(Int32(source.handle), SIG_DFL)
        }
    }
}

/// Shows sync progress: a line redrawn in place on a terminal, one line per step otherwise.
final class SyncProgressDisplay: @unchecked Sendable {
    // Safe to share: `lastPhase` and `drewInPlace` are touched only while `lock` is held.
    private let lock = NSLock()
    private let enabled: Bool
    private let isTerminal = ProgressBar.isTerminal
    private var lastPhase: SyncProgress.Phase?
    private var drewInPlace = false

    init(enabled: Bool) { self.enabled = enabled }

    func show(_ progress: SyncProgress) {
        guard enabled else { return }
        lock.withLock {
            let names: [SyncProgress.Phase: String] = [
                .uploadingResources: "uploading photos", .pushing: "pushing events", .pulling: "pulling events",
                .downloadingResources: "downloading photos", .fetchingHistory: "fetching the history before the snapshot",
            ]
            let count = progress.total.map { "\(progress.completed)/\($0)" } ?? "\(progress.completed)"
            let bytes = progress.bytes > 0 ? " (\(formatBytes(progress.bytes)))" : ""
            let line = "\(names[progress.phase] ?? progress.phase.rawValue): \(count)\(bytes)"
            if isTerminal {
                FileHandle.standardOutput.write(Data(("\r" + line + "\u{1B}[K").utf8))
                drewInPlace = true
            } else if progress.phase != lastPhase {
                print(names[progress.phase] ?? progress.phase.rawValue)
                fflush(nil)
            }
            lastPhase = progress.phase
        }
    }

    func finish() {
        lock.withLock {
            if drewInPlace { FileHandle.standardOutput.write(Data("\r\u{1B}[K".utf8)) }
        }
    }
}

/// `photoledger snapshot`: upload a snapshot of this device's folded state, or show the one this
/// library was started from.
struct SnapshotCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "snapshot", abstract: "Upload a snapshot of the library for new devices to start from.",
        discussion: """
            Syncs, then uploads the fold of the server's log up to this device's position: a new
            device starts from it instead of replaying the whole history, then fetches the
            history and refolds it to verify the snapshot. Only a readWrite device may upload.
            With --status, shows the snapshot this library was started from: how far its
            history was fetched, and the rows in which it differed from the refold (repaired).
            """)

    @OptionGroup(title: GlobalOptions.title) var global: GlobalOptions
    @Flag(help: "Show the snapshot this library was started from instead of uploading one.") var status = false

    func run() async throws {
        let context = try Context(global)
        let library = try context.openLibrary()
        if status {
            let bootstrap = try library.snapshotBootstrapStatus()
            if context.json {
                context.emit(Self.json(bootstrap))
            } else {
                context.say(bootstrap?.description ?? "This library was not started from a snapshot.")
            }
            if let bootstrap, !bootstrap.differences.isEmpty { throw ExitCode.failure }
            return
        }
        guard let remote = try SyncRemote.saved(in: library) else { throw SyncError.noRemote }
        let engine = SyncEngine(library: library, remote: remote)
        let report = try await engine.sync()
        if !report.rejectedEvents.isEmpty {
            for rejection in report.rejectedEvents { context.warn("rejected by the server (folded out here): \(rejection)") }
        }
        let upload = try await engine.uploadSnapshot()
        if context.json {
            context.emit(
                .object([
                    ("position", .int(upload.record.position)), ("hash", .string(Hex.encode(upload.record.hash))),
                    ("size", .int(upload.record.size)), ("chainHash", .string(Hex.encode(upload.record.chainHash))),
                    ("device", .string(upload.record.device)), ("uploaded", .bool(upload.uploadedBytes)),
                ]))
        } else {
            context.say("Uploaded a \(upload).")
        }
    }

    static func json(_ status: SnapshotBootstrapStatus?) -> JSON {
        guard let status else { return .object([("snapshot", .null)]) }
        return .object([
            ("position", .int(status.position)), ("sourceDevice", .string(status.sourceDevice)), ("hash", .string(status.snapshotHash)),
            ("fetchedThrough", .int(status.fetchedThrough)), ("verified", .bool(status.isVerified)),
            (
                "differences",
                .array(
                    status.differences.map {
                        .object([
                            ("table", .string($0.table)), ("object", .string($0.object?.uuidString)),
                            ("kind", .string(["missing", "extra", "changed"][$0.kind.rawValue - 1])),
                        ])
                    })
            ),
        ])
    }
}
