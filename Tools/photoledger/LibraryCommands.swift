import CommandLineParsing
import Foundation
import LedgerCore
import PhotoLedger
import PhotoLedgerSync

/// `init`, `status`, listings, album and asset changes, `export`.
enum LibraryCommands {
    static func initialize(_ context: Context) throws -> Int32 {
        let existed = FileManager.default.fileExists(atPath: context.libraryURL.path)
        let stored = try Context.storedDevice(at: context.libraryURL)
        if let stored, let explicit = context.explicitDevice, stored != explicit {
            throw ToolError(
                message: "the library at \(context.libraryURL.path) already belongs to device '\(stored)'",
                hint: "omit --device, or create a new library for '\(explicit)'")
        }
        let device = context.explicitDevice ?? stored ?? Context.hostDevice()
        try FileManager.default.createDirectory(at: context.libraryURL.deletingLastPathComponent(), withIntermediateDirectories: true)
        let library = try context.open(device: device)
        try library.recordDevice()
        if context.json {
            context.emit(.object([("library", .string(context.libraryURL.path)), ("device", .string(device)), ("created", .bool(!existed))]))
        } else {
            context.say(existed ? "Library at \(context.libraryURL.path) is ready (device \(device))." : "Created library \(context.libraryURL.path) for device \(device).")
        }
        return ExitCode.success
    }

    static func status(_ context: Context) throws -> Int32 {
        let library = try context.openLibrary()
        let statistics = try library.statistics()
        let visible = statistics.assets - statistics.deleted
        let (hidden, deleted, albums) = (statistics.hidden, statistics.deleted, statistics.albums)
        let (events, pending) = (statistics.events, statistics.pendingEvents)
        let quarantined = statistics.quarantined[.quarantined] ?? 0
        let newer = statistics.quarantined[.needsNewerVersion] ?? 0
        let sealed = statistics.quarantined[.sealed] ?? 0
        let remote = try SyncRemote.saved(in: library)
        let engine = remote.map { SyncEngine(library: library, remote: $0) }
        let lastSync = try engine?.lastSync().map { Date(timeIntervalSince1970: Double($0) / 1000) }
        if context.json {
            context.emit(.object([
                ("library", .string(context.libraryURL.path)), ("device", .string(library.device.rawValue)),
                ("assets", .int(Int64(visible))), ("hidden", .int(Int64(hidden))), ("deleted", .int(Int64(deleted))),
                ("albums", .int(Int64(albums))), ("events", .int(Int64(events))), ("pendingEvents", .int(Int64(pending))),
                ("remote", .string(remote?.description)), ("lastSync", .string(lastSync.map(Listing.isoDate))),
                ("rejectedEvents", .int(Int64(statistics.rejectedEvents))), ("quarantinedEvents", .int(Int64(quarantined))),
                ("eventsNeedingNewerVersion", .int(Int64(newer))), ("sealedEvents", .int(Int64(sealed))),
            ]))
            return ExitCode.success
        }
        print("Library:        \(context.libraryURL.path)")
        print("Device:         \(library.device.rawValue)")
        print("Assets:         \(visible) (\(hidden) hidden), \(deleted) in Recently Deleted")
        print("Albums:         \(albums)")
        print("Events:         \(events), \(pending) not yet synced, \(statistics.rejectedEvents) rejected by the server")
        if quarantined > 0 { print("Quarantined:    \(quarantined) events are invalid and not applied (see 'photoledger quarantine')") }
        if newer > 0 { print("Newer events:   \(newer) events need a newer PhotoLedger; they are kept and applied after an upgrade") }
        if sealed > 0 { print("Sealed events:  \(sealed) events wait for a key this device does not hold") }
        print("Remote:         \(remote?.description ?? "none (set one with 'photoledger remote set')")")
        print("Last sync:      \(lastSync.map(Listing.isoDate) ?? "never")")
        return ExitCode.success
    }

    // MARK: Listings

    static func assets(_ context: Context) throws -> Int32 {
        let library = try context.openLibrary()
        let command = context.command
        var assets: [Asset]
        if let album = command.value("album") {
            assets = try library.fetchAssets(in: try context.resolveAlbum(album, in: library), options: FetchOptions(includeHiddenAssets: true)).allObjects
        } else if command.flag("deleted") {
            assets = try Listing.deletedAssets(in: library)
        } else {
            assets = try library.fetchAssets(options: FetchOptions(includeHiddenAssets: true)).allObjects
        }
        if command.flag("deleted") { assets = assets.filter(\.isDeleted) }
        if command.flag("favorites") { assets = assets.filter(\.isFavorite) }
        let hashes = try assets.map { try Listing.primaryHash(of: $0, in: library) }
        if context.json {
            context.emit(.array(zip(assets, hashes).map { Listing.json($0, sha256: $1) }))
        } else {
            for (asset, hash) in zip(assets, hashes) { print(Listing.line(asset, sha256: hash)) }
            context.say("\(assets.count) asset\(assets.count == 1 ? "" : "s")")
        }
        return ExitCode.success
    }

    static func albums(_ context: Context) throws -> Int32 {
        let library = try context.openLibrary()
        let albums = try library.fetchAssetCollections(with: .album).allObjects
        let members = try albums.map { try library.fetchAssets(in: $0, options: FetchOptions(includeHiddenAssets: true)).allObjects }
        if context.json {
            context.emit(.array(zip(albums, members).map { Listing.json($0, assets: $1) }))
            return ExitCode.success
        }
        for (album, assets) in zip(albums, members) {
            print("\(album.localIdentifier)  \(album.title)  (\(assets.count) asset\(assets.count == 1 ? "" : "s"))")
            for (index, asset) in assets.enumerated() { print("    \(index)  \(asset.localIdentifier)") }
        }
        context.say("\(albums.count) album\(albums.count == 1 ? "" : "s")")
        return ExitCode.success
    }

    // MARK: Albums

    static func album(_ context: Context, _ subcommand: String) throws -> Int32 {
        let library = try context.openLibrary()
        let command = context.command
        if subcommand == "create" {
            let title = command.argument("title")!
            let identifier = try library.performChangesAndWait { try $0.createAlbum(title: title).localIdentifier }
            report(context, album: identifier, "Created album '\(title)'")
            return ExitCode.success
        }
        let album = try context.resolveAlbum(command.argument("album")!, in: library)
        let assets = try context.resolveAssets(command.arguments("asset"), in: library)
        var identifier = album.localIdentifier
        var message: String
        switch subcommand {
        case "rename":
            let title = command.argument("title")!
            try library.performChangesAndWait { try $0.albumChangeRequest(for: album).setTitle(title) }
            message = "Renamed album '\(album.title)' to '\(title)'"
        case "delete":
            try library.performChangesAndWait { try $0.deleteAlbums([album]) }
            message = "Deleted album '\(album.title)'"
        case "add":
            try library.performChangesAndWait { try $0.albumChangeRequest(for: album).addAssets(assets) }
            message = "Added \(assets.count) asset\(assets.count == 1 ? "" : "s") to '\(album.title)'"
        case "insert":
            let index = try integer(command, "at", minimum: 0)
            try library.performChangesAndWait {
                try $0.albumChangeRequest(for: album).insertAssets(assets, at: IndexSet(index..<(index + assets.count)))
            }
            message = "Inserted \(assets.count) asset\(assets.count == 1 ? "" : "s") into '\(album.title)' at \(index)"
        case "remove":
            try library.performChangesAndWait { try $0.albumChangeRequest(for: album).removeAssets(assets) }
            message = "Removed \(assets.count) asset\(assets.count == 1 ? "" : "s") from '\(album.title)'"
        case "move":
            let from = try indexes(command)
            let to = try integer(command, "to", minimum: 0)
            try library.performChangesAndWait { try $0.albumChangeRequest(for: album).moveAssets(at: from, to: to) }
            message = "Moved \(from.count) asset\(from.count == 1 ? "" : "s") of '\(album.title)' to \(to)"
        case "merge":
            let others = try command.arguments("other").map { try context.resolveAlbum($0, in: library) }
            identifier = try library.performChangesAndWait { try $0.mergeAlbums([album] + others).localIdentifier }
            message = "Merged \(others.count + 1) albums into \(identifier)"
        default:
            throw ToolError(message: "unknown album subcommand '\(subcommand)'", exitCode: ExitCode.usage)
        }
        report(context, album: identifier, message)
        return ExitCode.success
    }

    private static func report(_ context: Context, album identifier: String, _ message: String) {
        if context.json {
            context.emit(.object([("localIdentifier", .string(identifier))]))
        } else if context.quiet {
            return
        } else {
            print("\(message): \(identifier)")
        }
    }

    private static func integer(_ command: ParsedCommandLine, _ name: String, minimum: Int) throws -> Int {
        guard let text = command.value(name) else { throw usage(command, "missing '--\(name) <index>'") }
        guard let value = Int(text), value >= minimum else { throw usage(command, "--\(name) must be a whole number of at least \(minimum), not '\(text)'") }
        return value
    }

    private static func indexes(_ command: ParsedCommandLine) throws -> IndexSet {
        guard let text = command.value("from") else { throw usage(command, "missing '--from <indexes>'") }
        var set = IndexSet()
        for part in text.split(separator: ",", omittingEmptySubsequences: false) {
            guard let value = Int(part.trimmingCharacters(in: .whitespaces)), value >= 0 else {
                throw usage(command, "--from must be comma-separated indexes such as 0,2,5, not '\(text)'")
            }
            set.insert(value)
        }
        return set
    }

    // MARK: Assets

    static func assetFlags(_ context: Context, _ name: String) throws -> Int32 {
        let library = try context.openLibrary()
        let assets = try context.resolveAssets(context.command.arguments("asset"), in: library)
        try library.performChangesAndWait { changes in
            switch name {
            case "favorite", "unfavorite":
                for asset in assets { try changes.assetChangeRequest(for: asset).setFavorite(name == "favorite") }
            case "hide", "unhide":
                for asset in assets { try changes.assetChangeRequest(for: asset).setHidden(name == "hide") }
            case "delete": try changes.deleteAssets(assets)
            default: try changes.recoverAssets(assets)
            }
        }
        if context.json {
            context.emit(.array(assets.map { .string($0) }))
        } else {
            let past = ["favorite": "Marked as favorite", "unfavorite": "Unmarked as favorite", "hide": "Hid", "unhide": "Unhid",
                        "delete": "Moved to Recently Deleted", "recover": "Recovered"][name]!
            context.say("\(past): \(assets.joined(separator: ", "))")
        }
        return ExitCode.success
    }

    static func export(_ context: Context) throws -> Int32 {
        let library = try context.openLibrary()
        let command = context.command
        guard let destination = command.value("to") else { throw usage(command, "missing '--to <file>'") }
        let version: ImageVersion
        switch command.value("version") ?? "current" {
        case "current": version = .current
        case "original": version = .original
        case let other: throw usage(command, "--version must be original or current, not '\(other)'")
        }
        let url = URL(fileURLWithPath: destination)
        if FileManager.default.fileExists(atPath: url.path) {
            throw ToolError(message: "\(url.path) already exists", hint: "choose another file name or remove it first")
        }
        let asset = try context.resolveAssets([command.argument("asset")!], in: library)[0]
        try library.writeImageData(for: asset, version: version, to: url)
        let size = ((try? FileManager.default.attributesOfItem(atPath: url.path))?[.size] as? NSNumber)?.int64Value ?? 0
        if context.json {
            context.emit(.object([("localIdentifier", .string(asset)), ("file", .string(url.path)), ("bytes", .int(size))]))
        } else {
            context.say("Exported \(asset) (\(formatBytes(size))) to \(url.path)")
        }
        return ExitCode.success
    }

    /// A usage error of the current command.
    static func usage(_ command: ParsedCommandLine, _ message: String) -> UsageError {
        parser.usageError(message, path: command.path)
    }
}
