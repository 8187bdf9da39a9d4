import CommandLineParsing

// A small tool declared the way PhotoLedger's tools are, for the tests: a root with a titled
// global option group, nested subcommands, typed values, validation and hidden options.

struct GlobalOptions: ParsableArguments {
    @Option(help: ArgumentHelp("The library file.", valueName: "path")) var library: String?
    @Option(help: ArgumentHelp("This device's name.", valueName: "name")) var device: String?
    @Flag(help: "Write JSON.") var json = false
    @Flag(name: .shortAndLong, help: "Print less.") var quiet = false
}

struct Gallery: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "gallery", abstract: "Manage a gallery.", discussion: "A gallery is a folder of photos.", version: "1.2.3",
        subcommands: [Album.self, Export.self, History.self, Admin.self, Serve.self])

    @OptionGroup(title: "GLOBAL OPTIONS") var global: GlobalOptions
}

struct Album: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Change albums.", subcommands: [Insert.self, Move.self])

    @OptionGroup(title: "GLOBAL OPTIONS") var global: GlobalOptions

    struct Insert: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Insert assets at an index.")

        @OptionGroup(title: "GLOBAL OPTIONS") var global: GlobalOptions
        @Argument(help: "The album.") var album: String
        @Argument(help: ArgumentHelp("The assets to insert.", valueName: "asset")) var assets: [String]
        @Option(help: ArgumentHelp("Where the first asset goes.", valueName: "index")) var at: Int

        func validate() throws {
            guard at >= 0 else { throw ValidationError("--at must be 0 or more, not \(at)") }
        }
    }

    struct Move: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Move assets.")

        @OptionGroup(title: "GLOBAL OPTIONS") var global: GlobalOptions
        @Argument(help: "The album.") var album: String
        @Option(help: ArgumentHelp("Comma-separated indexes.", valueName: "indexes")) var from: IndexList
        @Option(help: ArgumentHelp("The destination.", valueName: "index")) var to: Int
    }
}

/// `0,2,5`.
struct IndexList: ExpressibleByArgument, Equatable {
    var indexes: [Int]

    init?(argument: String) {
        let parts = argument.split(separator: ",", omittingEmptySubsequences: false).map { Int($0) }
        guard !parts.isEmpty, parts.allSatisfy({ ($0 ?? -1) >= 0 }) else { return nil }
        indexes = parts.compactMap { $0 }
    }

    static var valueExpectation: String { "comma-separated indexes such as 0,2,5" }
}

enum Version: String, CaseIterable, ExpressibleByArgument {
    case original, current
}

struct Export: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Export an asset.")

    @OptionGroup(title: "GLOBAL OPTIONS") var global: GlobalOptions
    @Argument(help: "The asset.") var asset: String
    @Argument(help: "Where to write it.") var destination: String?
    @Option(help: "Which rendition.") var version: Version = .current
    @Option(help: "A tag to add; repeat for several.") var tag: [String] = []
    @Option(help: "Seconds to wait.") var timeout: UInt64 = 30
    @Flag(name: [.customLong("overwrite"), .customShort("f")], help: "Replace an existing file.") var force = false
    @Option(name: .customLong("child-mode"), help: .hidden, parsing: .remaining) var childArguments: [String] = []
}

/// A command whose own `--device` hides the global one.
struct History: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show the history.")

    @OptionGroup(title: "GLOBAL OPTIONS") var global: GlobalOptions
    @Option(help: "Only this device's changes.") var device: String?
}

struct StoreOptions: ParsableArguments {
    @Option(help: "The database.") var db: String?

    func validate() throws {
        guard db != nil else { throw ValidationError("missing '--db <db>'") }
    }
}

/// A parent whose option is accepted before and after its subcommands' names.
struct Admin: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Administer the gallery.", subcommands: [CreateLibrary.self, ListDevices.self])

    @OptionGroup var store: StoreOptions

    struct CreateLibrary: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Create a library.")

        @OptionGroup var store: StoreOptions
        @Argument(help: "The library's name.") var name: String
    }

    struct ListDevices: ParsableCommand {
        @OptionGroup var store: StoreOptions
    }
}

/// A command with long names and long help, to show the layout of help rows.
struct Serve: ParsableCommand {
    @Option(name: .customLong("a-rather-long-option"), help: ArgumentHelp("Short.", valueName: "value")) var long: String?
    @Flag(help: ArgumentHelp(Array(repeating: "word", count: 20).joined(separator: " "))) var verbose = false
}
