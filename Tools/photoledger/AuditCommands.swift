import Foundation
import LedgerStore
import PhotoLedger

/// `history`, `verify`, `rebuild`, `compact`.
enum AuditCommands {
    /// One entry of the audit trail.
    struct Entry {
        let token: Int64
        let eventID: UUID
        let device: String
        let timestamp: HLCTimestamp
        let type: String
        let object: String
        let changes: JSON

        var json: JSON {
            .object([
                ("eventId", .string(eventID.uuidString)), ("device", .string(device)),
                ("timestamp", .string(Listing.isoDate(timestamp.date))), ("type", .string(type)), ("object", .string(object)),
                ("changes", changes),
            ])
        }
    }

    static func history(_ context: Context) throws -> Int32 {
        let library = try context.openLibrary()
        let command = context.command
        var since: Int64 = 0
        if let token = command.value("since") {
            guard let value = Int64(token), value >= 0 else {
                throw LibraryCommands.usage(command, "--since takes a token printed by 'photoledger history', not '\(token)'")
            }
            since = value
        }
        var object: UUID?
        if let text = command.argument("object") {
            object = try objectUUID(text, context: context, library: library)
        }
        let device = command.value("device")
        var entries: [Entry] = []
        try library.readDatabase { db in
            let log = EventLog(db)
            try log.forEach(after: since) { stored in
                let event = stored.event
                if let object, event.object != object { return }
                if let device, event.device.rawValue != device { return }
                entries.append(entry(stored))
            }
        }
        let nextToken = try library.readDatabase { try EventLog($0).lastLocalSequence() }
        if context.json {
            context.emit(.array(entries.map(\.json)))
            return ExitCode.success
        }
        for entry in entries {
            print(
                [Listing.isoDate(entry.timestamp.date), entry.device.padding(12), entry.type.padding(22), entry.object].joined(separator: "  "))
        }
        context.say("\(entries.count) event\(entries.count == 1 ? "" : "s"); continue with --since \(nextToken)")
        return ExitCode.success
    }

    /// An audit entry for a stored event.
    static func entry(_ stored: StoredEvent) -> Entry {
        let event = stored.event
        let kind: ObjectKind = event.type.hasPrefix("album.") ? .album : .asset
        return Entry(
            token: stored.localSequence, eventID: event.id, device: event.device.rawValue, timestamp: event.timestamp, type: event.type,
            object: LocalIdentifier(uuid: event.object, kind: kind).description, changes: .object([]))
    }

    private static func objectUUID(_ text: String, context: Context, library: PhotoLibrary) throws -> UUID {
        if let identifier = LocalIdentifier(text) { return identifier.uuid }
        if let uuid = UUID(uuidString: text) { return uuid }
        if let asset = try? context.resolveAssets([text], in: library).first, let identifier = LocalIdentifier(asset) { return identifier.uuid }
        return try context.resolveAlbum(text, in: library).id
    }

    static func verify(_ context: Context) throws -> Int32 {
        let library = try context.openLibrary()
        switch try library.verify() {
        case .intact(let count):
            if context.json {
                context.emit(.object([("intact", .bool(true)), ("events", .int(Int64(count)))]))
            } else {
                context.say("The log is intact: \(count) event\(count == 1 ? "" : "s") verified against the hash chain.")
            }
            return ExitCode.success
        case .broken(let chainBreak):
            if context.json {
                context.emit(.object([
                    ("intact", .bool(false)), ("events", .int(Int64(chainBreak.verifiedCount))),
                    ("brokenAt", .int(chainBreak.localSequence)), ("eventId", .string(chainBreak.eventID?.uuidString)),
                ]))
            }
            throw ToolError(
                message: "the log is damaged: \(chainBreak)",
                hint: "restore the library from a backup, or sync it again from the server into a new library", exitCode: ExitCode.damaged)
        }
    }

    static func rebuild(_ context: Context) throws -> Int32 {
        let library = try context.openLibrary()
        let started = Date()
        try library.rebuild()
        if context.json {
            context.emit(.object([("rebuilt", .bool(true))]))
        } else {
            context.say("Rebuilt the asset and album views from the log in \(formatDuration(Date().timeIntervalSince(started))).")
        }
        return ExitCode.success
    }

    static func compact(_ context: Context) throws -> Int32 {
        let library = try context.openLibrary()
        let removed = try library.collectGarbage()
        if context.json {
            context.emit(.object([("removedResources", .array(removed.map { .string($0) }))]))
        } else {
            context.say("Removed \(removed.count) stored resource\(removed.count == 1 ? "" : "s") that nothing refers to.")
        }
        return ExitCode.success
    }
}
