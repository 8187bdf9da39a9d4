import CommandLineParsing
import Foundation

// The command tree of `photoledger`: the root, its global options, and the subcommands (each
// declared beside its work in LibraryCommands, AlbumCommands, AuditCommands, SyncCommands and
// Import).

/// `photoledger`: the command-line tool of a PhotoLedger library.
struct Photoledger: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "photoledger",
        abstract: "Manage a PhotoLedger photo library: import, albums, history, sync.",
        discussion: """
            A library is one SQLite file holding an append-only, hash-chained log of every change,
            with the photos' bytes in a folder beside it. Every change is made in a change block, as
            with Apple's Photos framework, and syncs with other devices through photoledger-server.

            Exit codes: 0 success, 1 failure (including any file that failed to import),
            3 verification found damage, 64 usage error.
            """,
        subcommands: [
            Init.self, Status.self, Import.self, Assets.self, Albums.self, Album.self,
            AssetStateCommand<Favorite>.self, AssetStateCommand<Unfavorite>.self, AssetStateCommand<Hide>.self,
            AssetStateCommand<Unhide>.self, AssetStateCommand<Delete>.self, AssetStateCommand<Recover>.self,
            AssetStateCommand<Purge>.self, Export.self, Thumbnail.self, History.self, Verify.self, Quarantine.self, Rebuild.self,
            Compact.self,
            Remote.self, Sync.self, SnapshotCommand.self, Device.self, Web.self,
        ])

    @OptionGroup(title: GlobalOptions.title) var global: GlobalOptions
}

/// The options every command accepts, before or after its name.
struct GlobalOptions: ParsableArguments {
    /// The help section that lists them.
    static let title = "GLOBAL OPTIONS"
    /// The environment variable naming the default library.
    static let libraryEnvironment = "PHOTOLEDGER_LIBRARY"

    @Option(help: ArgumentHelp("The library file (default: $PHOTOLEDGER_LIBRARY).", valueName: "path"))
    var library: String?

    @Option(help: ArgumentHelp("This device's name (default: the one recorded by 'init', else the host name).", valueName: "name"))
    var device: String?

    @Flag(help: "Write machine-readable JSON to standard output.")
    var json = false

    @Flag(name: .shortAndLong, help: "Print only errors and the requested data.")
    var quiet = false

    func validate() throws {
        _ = try libraryURL()
    }

    /// The library file: `--library`, else `$PHOTOLEDGER_LIBRARY`.
    func libraryURL() throws -> URL {
        guard let path = library ?? ProcessInfo.processInfo.environment[Self.libraryEnvironment], !path.isEmpty else {
            throw ValidationError("no library given: pass --library <path> or set \(Self.libraryEnvironment)")
        }
        return URL(fileURLWithPath: path)
    }
}

/// The help of the arguments that name assets and albums.
enum IdentifierHelp {
    static let assets = ArgumentHelp("Asset identifiers (full, UUID, or a unique UUID prefix).", valueName: "asset")
    static let asset = ArgumentHelp("The asset identifier (full, UUID, or a unique UUID prefix).", valueName: "asset")
    static let album = ArgumentHelp("Album identifier (full, UUID, unique prefix) or exact title.", valueName: "album")
}

extension ExitCode {
    /// `verify` found damage.
    static let damaged = ExitCode(3)
}
