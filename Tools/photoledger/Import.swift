import CommandLineParsing
import Foundation

/// `photoledger import`: its arguments and options. ``ImportCommand`` does the work.
struct Import: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import", abstract: "Import photos and videos from files and folders.",
        discussion: """
            Duplicates (same SHA-256 as an asset of the library, or as another file of the run)
            are skipped and reported. Files that are not photos or videos are reported and
            skipped. A file that fails is reported and the others are still imported; the exit
            code is 1 when any file failed. On a terminal a progress bar shows the count, bytes,
            rate and time left; otherwise one line is printed per file.
            """)

    @OptionGroup(title: GlobalOptions.title) var global: GlobalOptions

    @Argument(help: ArgumentHelp("Files or folders to import.", valueName: "path"))
    var paths: [String]

    @Option(help: ArgumentHelp("Add the imported assets to this album (created when missing).", valueName: "title"))
    var album: String?

    @Flag(help: "Move the files into the library instead of copying them.")
    var move = false

    @Flag(name: .shortAndLong, help: "Import the subfolders of folders too.")
    var recursive = false

    @Flag(help: "Show what would be imported, change nothing.")
    var dryRun = false

    func run() throws {
        let context = try Context(global)
        var importer = ImportCommand(context: context, library: try context.openLibrary(), options: self)
        let status = try importer.run()
        if status != .success { throw status }
    }
}
