import CommandLineParsing
import Foundation
import LedgerCore
import PhotoLedger
import PhotoLedgerJSON
import PhotoLedgerSync

// `init`, `status`, the listings, the asset commands and `export`.

/// `photoledger init`.
struct Init: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "init", abstract: "Create the library file and record this device's name.",
        discussion: "The device name is recorded in the library, so later commands need no --device.")

    @OptionGroup(title: GlobalOptions.title) var global: GlobalOptions
    @Flag(help: "Encrypt the library end to end: the server stores only what it cannot read. Shows the recovery key once.")
    var encrypt = false

    func run() throws {
        let context = try Context(global)
        let existed = FileManager.default.fileExists(atPath: context.libraryURL.path)
        let stored = try Context.storedDevice(at: context.libraryURL)
        if let stored, let explicit = context.explicitDevice, stored != explicit {
            throw CommandFailure(
                "the library at \(context.libraryURL.path) already belongs to device '\(stored)'",
                hint: "omit --device, or create a new library for '\(explicit)'")
        }
        let device = context.explicitDevice ?? stored ?? Context.hostDevice()
        try FileManager.default.createDirectory(at: context.libraryURL.deletingLastPathComponent(), withIntermediateDirectories: true)
        let library = try context.open(device: device)
        try library.recordDevice()
        if encrypt {
            let recovery = try library.enableEncryption()
            if context.json {
                context.emit(
                    .object([
                        ("library", .string(context.libraryURL.path)), ("device", .string(device)), ("created", .bool(!existed)),
                        ("encrypted", .bool(true)), ("recoveryKey", .string(recovery.text)),
                    ]))
            } else {
                context.say("Created encrypted library \(context.libraryURL.path) for device \(device).")
                print("Recovery key (shown only now; write it down and keep it safe: it restores the library when every device is lost):")
                print("    \(recovery.text)")
            }
            return
        }
        if context.json {
            context.emit(
                .object([("library", .string(context.libraryURL.path)), ("device", .string(device)), ("created", .bool(!existed))]))
        } else {
            context.say(
                existed
                    ? "Library at \(context.libraryURL.path) is ready (device \(device))."
                    : "Created library \(context.libraryURL.path) for device \(device).")
        }
    }
}

/// `photoledger status`.
struct Status: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status", abstract: "Show counts, pending events, the remote and the last sync.")

    @OptionGroup(title: GlobalOptions.title) var global: GlobalOptions

    func run() throws {
        let context = try Context(global)
        let library = try context.openLibrary()
        let status = try LibraryStatus(of: library, path: context.libraryURL.path)
        if context.json {
            context.emit(status.json)
            return
        }
        print("Library:        \(status.library)")
        print("Device:         \(status.device)")
        print("Assets:         \(status.assets) (\(status.hidden) hidden), \(status.deleted) in Recently Deleted")
        print("Albums:         \(status.albums)")
        print("Events:         \(status.events), \(status.pendingEvents) not yet synced, \(status.rejectedEvents) rejected by the server")
        if status.quarantinedEvents > 0 {
            print("Quarantined:    \(status.quarantinedEvents) events are invalid and not applied (see 'photoledger quarantine')")
        }
        if status.eventsNeedingNewerVersion > 0 {
            print(
                "Newer events:   \(status.eventsNeedingNewerVersion) events need a newer PhotoLedger; they are kept and applied after an upgrade"
            )
        }
        if status.sealedEvents > 0 { print("Sealed events:  \(status.sealedEvents) events wait for a key this device does not hold") }
        switch library.encryptionStatus {
        case .plain: print("Encryption:     none (the server can read this library)")
        case .enrolled: print("Encryption:     end to end; this device holds the keys")
        case .addOnly: print("Encryption:     end to end; this add-only device seals what it adds and reads nothing")
        case .awaitingEnrolment(let code):
            print("Encryption:     end to end; this device waits to be approved" + (code.map { " (code \($0))" } ?? ""))
        }
        print("Remote:         \(status.remote?.description ?? "none (set one with 'photoledger remote set')")")
        print("Last sync:      \(status.lastSync.map(Listing.isoDate) ?? "never")")
    }
}

// MARK: Listings

/// `photoledger assets`.
struct Assets: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "assets", abstract: "List assets (hidden ones included, marked as hidden).")

    @OptionGroup(title: GlobalOptions.title) var global: GlobalOptions

    @Option(help: ArgumentHelp("Only the assets of this album, in album order.", valueName: "album"))
    var album: String?

    @Flag(help: "Only favorites.")
    var favorites = false

    @Flag(help: "Only assets in Recently Deleted.")
    var deleted = false

    func run() throws {
        let context = try Context(global)
        let library = try context.openLibrary()
        let album = try album.map { try context.resolveAlbum($0, in: library) }
        let assets = try Listing.assets(in: library, album: album, favoritesOnly: favorites, deletedOnly: deleted)
        if context.json {
            context.emit(try Listing.json(assets, in: library))
            return
        }
        let hashes = try assets.map { try Listing.primaryHash(of: $0, in: library) }
        for (asset, hash) in zip(assets, hashes) { print(Listing.line(asset, sha256: hash)) }
        context.say("\(assets.count) asset\(assets.count == 1 ? "" : "s")")
    }
}

/// `photoledger albums`: each album with its members in album order, numbered as `album move`
/// and `album insert --at` count them.
struct Albums: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "albums", abstract: "List albums with their assets in album order and the index of each.",
        discussion: """
            The indexes are those 'album move' and 'album insert --at' take. As in Apple's Photos
            framework they count the assets that are not hidden; a hidden member is listed in its
            place, marked 'hidden', with '-' for an index.
            """)

    @OptionGroup(title: GlobalOptions.title) var global: GlobalOptions

    func run() throws {
        let context = try Context(global)
        let library = try context.openLibrary()
        let albums = try Listing.albums(in: library)
        if context.json {
            context.emit(Listing.json(albums))
            return
        }
        for (album, assets) in albums {
            let hidden = assets.filter(\.isHidden).count
            print("\(album.localIdentifier)  \(album.title)  (\(count(assets.count, "asset"))\(hidden > 0 ? ", \(hidden) hidden" : ""))")
            for line in Listing.indexedMembers(assets) { print("    " + line) }
        }
        context.say("\(albums.count) album\(albums.count == 1 ? "" : "s")")
    }
}

// MARK: Assets

/// A change that the asset commands (`favorite`, `hide`, `delete`, …) make to each asset given.
protocol AssetStateChange {
    /// The command's name.
    static var commandName: String { get }
    /// What the command does.
    static var abstract: String { get }
    /// What the command reports it did: `Hid`.
    static var pastTense: String { get }
    /// Makes the change.
    static func apply(to assets: [String], in changes: LibraryChanges) throws
}

/// `photoledger favorite|unfavorite|hide|unhide|delete|recover ASSET...`.
struct AssetStateCommand<Change: AssetStateChange>: ParsableCommand {
    static var configuration: CommandConfiguration { CommandConfiguration(commandName: Change.commandName, abstract: Change.abstract) }

    @OptionGroup(title: GlobalOptions.title) var global: GlobalOptions
    @Argument(help: IdentifierHelp.assets) var assets: [String]

    func run() throws {
        let context = try Context(global)
        let library = try context.openLibrary()
        let assets = try context.resolveAssets(assets, in: library)
        try library.performChangesAndWait { try Change.apply(to: assets, in: $0) }
        if context.json {
            context.emit(.array(assets.map { .string($0) }))
        } else {
            context.say("\(Change.pastTense): \(assets.joined(separator: ", "))")
        }
    }
}

enum Favorite: AssetStateChange {
    static let commandName = "favorite", abstract = "Mark assets as favorites.", pastTense = "Marked as favorite"
    static func apply(to assets: [String], in changes: LibraryChanges) throws {
        for asset in assets { try changes.assetChangeRequest(for: asset).setFavorite(true) }
    }
}

enum Unfavorite: AssetStateChange {
    static let commandName = "unfavorite", abstract = "Unmark assets as favorites.", pastTense = "Unmarked as favorite"
    static func apply(to assets: [String], in changes: LibraryChanges) throws {
        for asset in assets { try changes.assetChangeRequest(for: asset).setFavorite(false) }
    }
}

enum Hide: AssetStateChange {
    static let commandName = "hide", abstract = "Hide assets.", pastTense = "Hid"
    static func apply(to assets: [String], in changes: LibraryChanges) throws {
        for asset in assets { try changes.assetChangeRequest(for: asset).setHidden(true) }
    }
}

enum Unhide: AssetStateChange {
    static let commandName = "unhide", abstract = "Show hidden assets again.", pastTense = "Unhid"
    static func apply(to assets: [String], in changes: LibraryChanges) throws {
        for asset in assets { try changes.assetChangeRequest(for: asset).setHidden(false) }
    }
}

enum Delete: AssetStateChange {
    static let commandName = "delete", abstract = "Move assets to Recently Deleted.", pastTense = "Moved to Recently Deleted"
    static func apply(to assets: [String], in changes: LibraryChanges) throws { try changes.deleteAssets(assets) }
}

enum Recover: AssetStateChange {
    static let commandName = "recover", abstract = "Bring assets back from Recently Deleted.", pastTense = "Recovered"
    static func apply(to assets: [String], in changes: LibraryChanges) throws { try changes.recoverAssets(assets) }
}

// MARK: Export

/// `photoledger export`.
struct Export: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "export", abstract: "Write an asset's photo or video to a file.")

    /// The renditions `--version` names.
    enum Version: String, CaseIterable, ExpressibleByArgument {
        case original, current

        var imageVersion: ImageVersion { self == .original ? .original : .current }
    }

    @OptionGroup(title: GlobalOptions.title) var global: GlobalOptions
    @Argument(help: IdentifierHelp.asset) var asset: String

    @Option(help: ArgumentHelp("The file to write (must not exist).", valueName: "file"))
    var to: String

    @Option(help: "original, or current: the edited rendition when there is one.")
    var version: Version = .current

    func run() throws {
        let context = try Context(global)
        let library = try context.openLibrary()
        let url = URL(fileURLWithPath: to)
        if FileManager.default.fileExists(atPath: url.path) {
            throw CommandFailure("\(url.path) already exists", hint: "choose another file name or remove it first")
        }
        let asset = try context.resolveAssets([asset], in: library)[0]
        try library.writeImageData(for: asset, version: version.imageVersion, to: url)
        let size = ((try? FileManager.default.attributesOfItem(atPath: url.path))?[.size] as? NSNumber)?.int64Value ?? 0
        if context.json {
            context.emit(.object([("localIdentifier", .string(asset)), ("file", .string(url.path)), ("bytes", .int(size))]))
        } else {
            context.say("Exported \(asset) (\(formatBytes(size))) to \(url.path)")
        }
    }
}
