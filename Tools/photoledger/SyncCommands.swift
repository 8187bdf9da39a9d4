@preconcurrency import Glibc
import Foundation
import PhotoLedger
import PhotoLedgerSync

/// `remote set`, `remote show`, `sync`.
enum SyncCommands {
    static func remote(_ context: Context, _ subcommand: String) throws -> Int32 {
        let library = try context.openLibrary()
        if subcommand == "show" {
            let remote = try SyncRemote.saved(in: library)
            if context.json {
                context.emit(.object([("url", .string(remote?.description))]))
            } else {
                print(remote?.description ?? "No remote is set; set one with 'photoledger remote set URL --token TOKEN'.")
            }
            return ExitCode.success
        }
        guard let token = context.command.value("token") else {
            throw LibraryCommands.usage(context.command, "missing '--token <token>'")
        }
        let remote = try SyncRemote(libraryURL: context.command.argument("url")!, token: token)
        try remote.save(in: library)
        if context.json {
            context.emit(.object([("url", .string(remote.description))]))
        } else {
            context.say("Remote set to \(remote.description).")
        }
        return ExitCode.success
    }

    static func sync(_ context: Context) async throws -> Int32 {
        let library = try context.openLibrary()
        let engine = try SyncEngine(library: library)
        guard context.command.flag("watch") else {
            return try await syncOnce(engine, context)
        }
        context.say("Syncing with \(engine.remote.description) every 5 seconds; press Ctrl-C to stop.")
        while true {
            do {
                _ = try await syncOnce(engine, context)
            } catch {
                context.warn("Error: \(describe(error)) (will retry)")
            }
            try await Task.sleep(for: .seconds(5))
        }
    }

    private static func syncOnce(_ engine: SyncEngine, _ context: Context) async throws -> Int32 {
        let display = SyncProgressDisplay(enabled: !context.quiet && !context.json)
        let report = try await engine.sync { display.show($0) }
        display.finish()
        for rejection in report.rejectedEvents { context.warn("rejected by the server: \(rejection)") }
        if context.json {
            context.emit(.object([
                ("pushedEvents", .int(Int64(report.pushedEvents))), ("pulledEvents", .int(Int64(report.pulledEvents))),
                ("uploadedResources", .int(Int64(report.uploadedResources))), ("uploadedBytes", .int(report.uploadedBytes)),
                ("downloadedResources", .int(Int64(report.downloadedResources))), ("downloadedBytes", .int(report.downloadedBytes)),
                ("rejectedEvents", .array(report.rejectedEvents.map { .string($0) })), ("cursor", .int(report.cursor)),
            ]))
        } else {
            context.say(
                "Synced with \(engine.remote.description): pushed \(count(report.pushedEvents, "event")), pulled \(report.pulledEvents); "
                    + "uploaded \(count(report.uploadedResources, "photo")) (\(formatBytes(report.uploadedBytes))), "
                    + "downloaded \(report.downloadedResources) (\(formatBytes(report.downloadedBytes))).")
        }
        return report.rejectedEvents.isEmpty ? ExitCode.success : ExitCode.failure
    }

    /// The message of a sync failure.
    static func describe(_ error: any Error) -> String {
        (error as? SyncError)?.description ?? (error as? PhotoLibraryError)?.message ?? "\(error)"
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
                .downloadingResources: "downloading photos",
            ]
            let count = progress.total.map { "\(progress.completed)/\($0)" } ?? "\(progress.completed)"
            let bytes = progress.bytes > 0 ? " (\(formatBytes(progress.bytes)))" : ""
            let line = "\(names[progress.phase] ?? progress.phase.rawValue): \(count)\(bytes)"
            if isTerminal {
                FileHandle.standardOutput.write(Data(("\r" + line + "\u{1B}[K").utf8))
                drewInPlace = true
            } else if progress.phase != lastPhase {
                print(names[progress.phase] ?? progress.phase.rawValue)
                fflush(stdout)
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
