import CommandLineParsing
import Foundation
import LedgerCore
import PhotoLedger
import PhotoLedgerJSON
import PhotoLedgerSync

/// `photoledger history`.
struct History: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "history", abstract: "Show the audit trail: every change, by whom and when.")

    @OptionGroup(title: GlobalOptions.title) var global: GlobalOptions
    @Argument(help: "Only the history of this asset or album.") var object: String?

    /// Hides the global `--device`: here it chooses whose changes to show.
    @Option(help: "Only changes made on this device.")
    var device: String?

    @Option(help: ArgumentHelp("Only changes after this change token (printed by a previous 'history').", valueName: "token"))
    var since: String?

    func run() throws {
        let context = try Context(global)
        let library = try context.openLibrary()
        let since = try since.map { try ChangeTokenText.sequence(of: $0, in: library) } ?? 0
        let identifier = try object.map { try AuditCommands.objectIdentifier($0, context: context, library: library) }
        let entries = try AuditTrail.entries(in: library, object: identifier, device: device, after: since)
        let token = try ChangeTokenText.encode(try library.currentChangeToken)
        if context.json {
            context.emit(AuditTrail.json(entries))
            return
        }
        let devices = Dictionary(entries.map { ($0.eventID, $0.device) }, uniquingKeysWith: { first, _ in first })
        for entry in entries {
            print(
                [Listing.isoDate(entry.timestamp.date), entry.device.padding(12), entry.type.padding(22), entry.object].joined(
                    separator: "  "))
            for change in entry.changes { print("    " + AuditCommands.describe(change, devices: devices)) }
        }
        context.say("\(entries.count) event\(entries.count == 1 ? "" : "s"); changes after these: --since \(token)")
    }
}

/// The text of `history`: how a change is told, and how an object argument is resolved.
enum AuditCommands {
    /// `title: "Trip" → "Lisbon"  (overruled by ben-laptop)`.
    static func describe(_ change: FieldChange, devices: [UUID: String]) -> String {
        let old = change.oldValue.map { "\"\($0)\"" } ?? "none"
        let new = change.newValue.map { "\"\($0)\"" } ?? "none"
        var text = "\(change.field): \(old) → \(new)"
        switch change.outcome {
        case .inEffect: text += "  (in effect)"
        case .replaced(let event): text += "  (replaced later by \(devices[event] ?? event.uuidString))"
        case .overruled(let event): text += "  (overruled by a concurrent change from \(devices[event] ?? event.uuidString))"
        }
        return text
    }

    static func objectIdentifier(_ text: String, context: Context, library: PhotoLibrary) throws -> String {
        if LocalIdentifier(text) != nil { return text }
        if let asset = try? context.resolveAssets([text], in: library).first { return asset }
        return try context.resolveAlbum(text, in: library).localIdentifier
    }
}

/// `photoledger verify`.
struct Verify: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify", abstract: "Verify the hash chain of the library's log (exit 3 on damage).",
        discussion: """
            Checks the library's own hash chain (archive and live log) and the server's chain values
            received with pulled events. With --deep it also refolds the log into a scratch copy and
            compares every view with the stored one, naming the first difference (an edit made to a
            view table directly, which the chains do not cover).
            """)

    @OptionGroup(title: GlobalOptions.title) var global: GlobalOptions
    @Flag(help: "Also refold the log into a scratch copy and compare the views with it.") var deep = false

    func run() throws {
        let context = try Context(global)
        let library = try context.openLibrary()
        let local = try library.verifyChain()
        let server = try library.verifyServerChain()
        let views = deep && local.isIntact ? try library.verifyViews() : nil
        if context.json {
            context.emit(
                .object([
                    ("intact", .bool(local.isIntact && server.isIntact && (views?.isIntact ?? true))),
                    (
                        "local",
                        .object([
                            ("archivedEvents", .int(Int64(local.archivedEvents))), ("liveEvents", .int(Int64(local.liveEvents))),
                            ("failure", .string(local.failure?.description)), ("unboundEvents", .int(Int64(local.unboundEvents))),
                        ])
                    ),
                    (
                        "server",
                        .object([("checkedEvents", .int(Int64(server.checked))), ("failure", .string(server.failure?.description))])
                    ),
                    (
                        "views",
                        views.map { views in
                            .object([
                                ("rowsCompared", .int(Int64(views.rowsCompared))), ("difference", .string(views.difference?.description)),
                            ])
                        } ?? .null
                    ),
                ]))
        }
        if let failure = local.failure ?? server.failure {
            throw CommandFailure(
                "the log is damaged: \(failure)",
                hint: "restore the library from a backup, or sync it again from the server into a new library",
                exitCode: ExitCode.damaged.rawValue)
        }
        if let difference = views?.difference {
            throw CommandFailure(
                "the views do not match the log: \(difference)", hint: "run 'photoledger rebuild' to refold them from the log",
                exitCode: ExitCode.damaged.rawValue)
        }
        if local.unboundEvents > 0 {
            context.say(
                "\(local.unboundEvents) event\(local.unboundEvents == 1 ? "" : "s") name no library (made before events were bound to their library)."
            )
        }
        if let views { context.say("The views are the fold of the log: \(views.rowsCompared) rows compared.") }
        let total = local.archivedEvents + local.liveEvents
        context.say(
            "The log is intact: \(total) event\(total == 1 ? "" : "s") verified against the hash chain"
                + (local.archivedEvents > 0 ? " (\(local.archivedEvents) in the archive)" : "") + ".")
        context.say("Server chain: \(server.checked) event\(server.checked == 1 ? "" : "s") checked against the hashes the server sent.")
    }
}

/// `photoledger rebuild`.
struct Rebuild: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "rebuild", abstract: "Rebuild the asset and album views from the log.")

    @OptionGroup(title: GlobalOptions.title) var global: GlobalOptions

    func run() throws {
        let context = try Context(global)
        let library = try context.openLibrary()
        let started = Date()
        try library.rebuild()
        if context.json {
            context.emit(.object([("rebuilt", .bool(true))]))
        } else {
            context.say("Rebuilt the asset and album views from the log in \(formatDuration(Date().timeIntervalSince(started))).")
        }
    }
}

/// `photoledger compact`.
struct Compact: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "compact", abstract: "Archive old events and remove stored photo bytes that nothing refers to.",
        discussion: """
            The oldest events that the server acknowledged at or below a server sequence, the
            watermark, move to the archive file beside the library; history and verify still
            read them, and change tokens from before them expire. Without --up-to the
            watermark is asked of the remote: the position that every device of the library
            that can still pull has pulled (sync every device first). Stored resources that no
            event refers to are removed too.
            """)

    /// Where `compact` took its watermark from.
    enum WatermarkSource {
        /// `--up-to`.
        case option
        /// The remote's answer, with the server's last sequence and the devices counted.
        case remote(SyncRemote, lastServerSequence: Int64, devices: Int)
    }

    @OptionGroup(title: GlobalOptions.title) var global: GlobalOptions

    @Option(
        help: ArgumentHelp(
            "Archive events acknowledged at or below this server sequence instead of asking the remote.", valueName: "server-seq"))
    var upTo: Int64?

    func validate() throws {
        if let upTo, upTo < 0 { throw ValidationError("--up-to takes a server sequence number (0 or more), not \(upTo)") }
    }

    func run() async throws {
        let context = try Context(global)
        let library = try context.openLibrary()
        let report: CompactionReport
        let source: WatermarkSource
        if let upTo {
            report = try library.compact(upToServerSequence: upTo)
            source = .option
        } else if let remote = try SyncRemote.saved(in: library) {
            let engine = SyncEngine(library: library, remote: remote)
            let result = try await engine.compactAcknowledgedEvents()
            report = result.report
            source = .remote(remote, lastServerSequence: result.watermark.lastServerSequence, devices: result.watermark.deviceCount)
        } else {
            throw ValidationError(
                "no server sequence to compact up to: this library has no remote to ask for the compaction watermark; "
                    + "set one with 'photoledger remote set URL --token TOKEN' (then sync), or pass --up-to SERVER_SEQ "
                    + "(--up-to 0 archives nothing and only removes unreferenced photo bytes)")
        }
        let removed = try library.collectGarbage()
        if context.json {
            var fields: [(String, JSON)] = [("watermark", .int(report.serverWatermark))]
            switch source {
            case .option:
                fields += [("source", .string("option")), ("remote", .null), ("lastServerSeq", .null), ("devices", .null)]
            case .remote(let remote, let last, let devices):
                fields += [
                    ("source", .string("remote")), ("remote", .string(remote.description)), ("lastServerSeq", .int(last)),
                    ("devices", .int(Int64(devices))),
                ]
            }
            fields += [
                ("archivedEvents", .int(Int64(report.archivedEvents))), ("horizon", .int(report.horizon)),
                ("removedResources", .array(removed.map { .string($0) })),
            ]
            context.emit(.object(fields))
        } else {
            if case .remote(let remote, let last, let devices) = source {
                context.say(
                    "Watermark from \(remote.description): server position \(report.serverWatermark) of \(last), "
                        + "pulled by \(devices == 1 ? "the only device" : "all \(devices) devices") that can pull.")
            }
            context.say("Log: \(report.description).")
            context.say("Removed \(removed.count) stored resource\(removed.count == 1 ? "" : "s") that nothing refers to.")
        }
    }
}

/// Change tokens as text: the library's `Codable` token as base64url JSON, so `--since` takes
/// exactly what `history` printed and expired or foreign tokens are recognized.
enum ChangeTokenText {
    static func encode(_ token: PersistentChangeToken) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return try encoder.encode(token).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    /// The log position after which `--since` shows events; checks the token belongs to the
    /// library and has not expired.
    static func sequence(of text: String, in library: PhotoLibrary) throws -> Int64 {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        guard let data = Data(base64Encoded: base64), let token = try? JSONDecoder().decode(PersistentChangeToken.self, from: data) else {
            throw ValidationError("--since takes a token printed by 'photoledger history', not '\(text)'")
        }
        do {
            _ = try library.fetchPersistentChanges(since: token)
        } catch let error as PhotoLibraryError where error.code == .persistentChangeTokenExpired {
            // The library's advice is for apps that mirror it; the command's is to start again.
            let reason = error.message.components(separatedBy: "; fetch everything")[0]
            throw CommandFailure(
                "the --since token cannot be used: \(reason)", hint: "run 'photoledger history' without --since; it ends with a new token")
        }
        return token.logPosition
    }
}

/// `photoledger quarantine`: events kept in the log but not applied.
struct Quarantine: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "quarantine", abstract: "List the events kept in the log but not applied, with why.",
        discussion: """
            An event that does not decode or is not valid (from a damaged or hostile device) is kept,
            so the hash chains stay whole, but changes nothing; an event of a newer PhotoLedger waits
            for an upgrade; a sealed event waits for its key. Every device that holds the same
            events lists the same ones, in event identifier order.
            """)

    @OptionGroup(title: GlobalOptions.title) var global: GlobalOptions

    func run() throws {
        let context = try Context(global)
        let library = try context.openLibrary()
        let entries = try library.quarantine()
        let kinds: [QuarantineKind: String] = [.quarantined: "quarantined", .needsNewerVersion: "needsNewerVersion", .sealed: "sealed"]
        if context.json {
            context.emit(
                .array(
                    entries.map { entry in
                        .object([
                            ("eventId", .string(entry.eventID.uuidString)), ("device", .string(entry.device.rawValue)),
                            ("timestamp", .string(Listing.isoDate(entry.timestamp.date))), ("type", .string(entry.type)),
                            ("object", .string(entry.object.uuidString)), ("kind", .string(kinds[entry.kind])),
                            ("reason", .string(entry.reason)),
                        ])
                    }))
            return
        }
        guard !entries.isEmpty else {
            context.say("No event is quarantined.")
            return
        }
        for entry in entries {
            print("\(entry.eventID.uuidString)  \(entry.device.rawValue)  \(entry.type)  \(kinds[entry.kind] ?? "")")
            print("    \(entry.reason)")
        }
    }
}
