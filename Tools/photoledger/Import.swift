import CommandLineParsing
import Foundation
import PhotoLedger

/// `photoledger import`: its arguments and options. ``ImportCommand`` does the work.
struct Import: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import", abstract: "Import photos and videos from files and folders.",
        discussion: """
            Duplicates (same SHA-256 as an asset of the library, or as another file of the run)
            are skipped and reported. Files that are not photos or videos are reported and
            skipped. A file that fails is reported and the others are still imported; the exit
            code is 1 when any file failed. On a terminal a progress bar shows the count, bytes,
            rate and time left; otherwise one line is printed per file. Each imported photo's
            thumbnails (256 pixels, fit and fill, and 1024 pixels) are made in the background
            while the next files are imported, and the command waits for them at the end (a
            second progress bar): they never delay the import's own commits.
            """)

    @OptionGroup(title: GlobalOptions.title) var global: GlobalOptions

    @Argument(help: ArgumentHelp("Files or folders to import.", valueName: "path"))
    var paths: [String]

    @Option(
        help: ArgumentHelp(
            "Add the imported assets to this album: its identifier, or its exact title (the album is created when no album has it).",
            valueName: "album"))
    var album: String?

    @Flag(help: "Move the files into the library instead of copying them.")
    var move = false

    @Flag(name: .shortAndLong, help: "Import the subfolders of folders too.")
    var recursive = false

    @Flag(help: "Show what would be imported, change nothing.")
    var dryRun = false

    func run() throws {
        let context = try Context(global)
        var importer = try ImportCommand(context: context, library: try context.openLibrary(), options: self)
        let status = try importer.run()
        if status != .success { throw status }
    }
}

/// The album `import --album` adds the imported assets to: an album named by its identifier or
/// by a title no other album has, or a title for a new album. Two albums with the title are
/// an error, before anything is imported.
enum ImportAlbum {
    case existing(identifier: String, title: String)
    case new(title: String)

    init(_ text: String, context: Context, library: PhotoLibrary) throws {
        if let album = try context.albumByIdentifier(text, in: library) {
            self = .existing(identifier: album.localIdentifier, title: album.title)
            return
        }
        let albums = try library.fetchAssetCollections(with: .album).allObjects
        let hint = "pass one of them by its identifier: --album <identifier>"
        if let album = try Context.onlyAlbum(titled: text, among: albums, hint: hint) {
            self = .existing(identifier: album.localIdentifier, title: album.title)
        } else {
            self = .new(title: text)
        }
    }

    var title: String {
        switch self {
        case .existing(_, let title), .new(let title): title
        }
    }

    /// The album's change request in a change block: the new album is created by the first
    /// block and found by its title in the next ones.
    func changeRequest(in changes: LibraryChanges) throws -> AlbumChangeRequest {
        switch self {
        case .existing(let identifier, _): try changes.albumChangeRequest(for: identifier)
        case .new(let title): try changes.album(titled: title) ?? changes.createAlbum(title: title)
        }
    }
}
