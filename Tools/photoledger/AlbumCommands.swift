import CommandLineParsing
import Foundation
import LedgerCore
import PhotoLedger
import PhotoLedgerJSON

/// `photoledger album …`: create, rename, delete and merge albums, change their assets.
struct Album: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "album", abstract: "Create, rename, delete, merge albums and change their assets.",
        discussion: """
            Indexes count an album's assets that are not hidden, in album order, as 'photoledger albums'
            numbers them (Apple's Photos framework does the same): 0 is the first place.
            """,
        subcommands: [Create.self, Rename.self, Delete.self, Add.self, Insert.self, Remove.self, Move.self, Merge.self])

    @OptionGroup(title: GlobalOptions.title) var global: GlobalOptions
}

extension Album {
    /// `album create TITLE`.
    struct Create: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "create", abstract: "Create an album.")

        @OptionGroup(title: GlobalOptions.title) var global: GlobalOptions
        @Argument(help: "The album's title.") var title: String

        func run() throws {
            let context = try Context(global)
            let library = try context.openLibrary()
            let identifier = try library.performChangesAndWait { try $0.createAlbum(title: title).localIdentifier }
            AlbumReport(album: identifier, message: "Created album '\(title)'").print(context)
        }
    }

    /// `album rename ALBUM TITLE`.
    struct Rename: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "rename", abstract: "Rename an album.")

        @OptionGroup(title: GlobalOptions.title) var global: GlobalOptions
        @Argument(help: IdentifierHelp.album) var album: String
        @Argument(help: "The new title.") var title: String

        func run() throws {
            let context = try Context(global)
            let library = try context.openLibrary()
            let album = try context.resolveAlbum(album, in: library)
            try library.performChangesAndWait { try $0.albumChangeRequest(for: album).setTitle(title) }
            AlbumReport(album: album.localIdentifier, message: "Renamed album '\(album.title)' to '\(title)'").print(context)
        }
    }

    /// `album delete ALBUM`.
    struct Delete: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "delete", abstract: "Delete an album (its assets stay in the library).")

        @OptionGroup(title: GlobalOptions.title) var global: GlobalOptions
        @Argument(help: IdentifierHelp.album) var album: String

        func run() throws {
            let context = try Context(global)
            let library = try context.openLibrary()
            let album = try context.resolveAlbum(album, in: library)
            try library.performChangesAndWait { try $0.deleteAlbums([album]) }
            AlbumReport(album: album.localIdentifier, message: "Deleted album '\(album.title)'").print(context)
        }
    }

    /// `album add ALBUM ASSET...`.
    struct Add: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "add", abstract: "Append assets at the end of an album (members already in it stay where they are).")

        @OptionGroup(title: GlobalOptions.title) var global: GlobalOptions
        @Argument(help: IdentifierHelp.album) var album: String
        @Argument(help: IdentifierHelp.assets) var assets: [String]

        func run() throws {
            let context = try Context(global)
            let library = try context.openLibrary()
            let album = try context.resolveAlbum(album, in: library)
            let assets = try context.resolveAssets(assets, in: library)
            let members = Set(try AlbumIndexes.allMembers(of: album, in: library))
            let added = assets.filter { !members.contains($0) }, already = assets.filter(members.contains)
            try library.performChangesAndWait { try $0.albumChangeRequest(for: album).addAssets(assets) }
            AlbumReport(
                album: album.localIdentifier, message: "Added \(count(added.count, "asset")) to '\(album.title)'",
                lists: [
                    ("added", nil, added),
                    ("alreadyInAlbum", "Already in '\(album.title)', left where they are", already),
                ]
            ).print(context)
        }
    }

    /// `album insert ALBUM ASSET... --at N`.
    struct Insert: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "insert", abstract: "Insert assets at an index of an album (0 is the first place).")

        @OptionGroup(title: GlobalOptions.title) var global: GlobalOptions
        @Argument(help: IdentifierHelp.album) var album: String
        @Argument(help: IdentifierHelp.assets) var assets: [String]

        @Option(
            help: ArgumentHelp(
                "Where the first asset goes, as 'photoledger albums' numbers them; the others follow it.", valueName: "index"))
        var at: Int

        func validate() throws {
            guard at >= 0 else { throw ValidationError("--at must be an index of 0 or more, not \(at)") }
        }

        func run() throws {
            let context = try Context(global)
            let library = try context.openLibrary()
            let album = try context.resolveAlbum(album, in: library)
            let assets = try context.resolveAssets(assets, in: library)
            try AlbumIndexes(album, in: library).checkInsertion(of: assets, at: at)
            try library.performChangesAndWait {
                try $0.albumChangeRequest(for: album).insertAssets(assets, at: IndexSet(at..<(at + assets.count)))
            }
            AlbumReport(album: album.localIdentifier, message: "Inserted \(count(assets.count, "asset")) into '\(album.title)' at \(at)")
                .print(context)
        }
    }

    /// `album remove ALBUM ASSET...`.
    struct Remove: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "remove", abstract: "Remove assets from an album (they stay in the library).")

        @OptionGroup(title: GlobalOptions.title) var global: GlobalOptions
        @Argument(help: IdentifierHelp.album) var album: String
        @Argument(help: IdentifierHelp.assets) var assets: [String]

        func run() throws {
            let context = try Context(global)
            let library = try context.openLibrary()
            let album = try context.resolveAlbum(album, in: library)
            let assets = try context.resolveAssets(assets, in: library)
            let members = Set(try AlbumIndexes.allMembers(of: album, in: library))
            let removed = assets.filter(members.contains)
            let others = assets.filter { !members.contains($0) }
            // An asset in Recently Deleted is not listed in its albums; its membership, if any, goes too.
            let trash = others.isEmpty ? [] : Set(try Listing.deletedAssets(in: library).map(\.localIdentifier))
            try library.performChangesAndWait { try $0.albumChangeRequest(for: album).removeAssets(assets) }
            AlbumReport(
                album: album.localIdentifier, message: "Removed \(count(removed.count, "asset")) from '\(album.title)'",
                lists: [
                    ("removed", nil, removed),
                    ("notInAlbum", "Not in '\(album.title)', nothing to remove", others.filter { !trash.contains($0) }),
                    (
                        "inRecentlyDeleted", "In Recently Deleted, removed from '\(album.title)' too if they were in it",
                        others.filter(trash.contains)
                    ),
                ]
            ).print(context)
        }
    }

    /// `album move ALBUM --from N[,N...] --to N`.
    struct Move: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "move", abstract: "Move the assets at some indexes to another index (PhotoKit's rule: remove, then insert).")

        @OptionGroup(title: GlobalOptions.title) var global: GlobalOptions
        @Argument(help: IdentifierHelp.album) var album: String

        @Option(
            help: ArgumentHelp("Comma-separated indexes of the assets to move, as 'photoledger albums' numbers them.", valueName: "indexes")
        )
        var from: IndexList

        @Option(help: ArgumentHelp("The destination index, counted after taking out the moved assets.", valueName: "index"))
        var to: Int

        func validate() throws {
            guard to >= 0 else { throw ValidationError("--to must be an index of 0 or more, not \(to)") }
        }

        func run() throws {
            let context = try Context(global)
            let library = try context.openLibrary()
            let album = try context.resolveAlbum(album, in: library)
            try AlbumIndexes(album, in: library).checkMove(from: from.indexes, to: to)
            try library.performChangesAndWait { try $0.albumChangeRequest(for: album).moveAssets(at: from.indexes, to: to) }
            AlbumReport(
                album: album.localIdentifier, message: "Moved \(count(from.indexes.count, "asset")) of '\(album.title)' to \(to)"
            ).print(context)
        }
    }

    /// `album merge ALBUM ALBUM...`.
    struct Merge: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "merge", abstract: "Merge albums into one (the members are united, positions kept).")

        @OptionGroup(title: GlobalOptions.title) var global: GlobalOptions
        @Argument(help: IdentifierHelp.album) var album: String
        @Argument(help: ArgumentHelp("The albums to merge into it.", valueName: "other")) var others: [String]

        func run() throws {
            let context = try Context(global)
            let library = try context.openLibrary()
            let album = try context.resolveAlbum(album, in: library)
            let others = try others.map { try context.resolveAlbum($0, in: library) }
            let identifier = try library.performChangesAndWait { try $0.mergeAlbums([album] + others).localIdentifier }
            AlbumReport(album: identifier, message: "Merged \(others.count + 1) albums into \(identifier)").print(context)
        }
    }
}

/// Comma-separated indexes: `0,2,5`.
struct IndexList: ExpressibleByArgument {
    let indexes: IndexSet

    init?(argument: String) {
        var indexes = IndexSet()
        for part in argument.split(separator: ",", omittingEmptySubsequences: false) {
            guard let index = Int(part.trimmingCharacters(in: .whitespaces)), index >= 0 else { return nil }
            indexes.insert(index)
        }
        self.indexes = indexes
    }

    static var valueExpectation: String { "comma-separated indexes such as 0,2,5" }
}

/// An album's assets as the index commands count them: its members that are not hidden, in
/// album order (the rule of Apple's Photos framework, which the library follows). Checks the
/// indexes a command was given, so that a mistake is told in the command's words.
struct AlbumIndexes {
    let title: String
    /// The identifiers of the members with an index, in album order.
    let members: [String]
    /// How many members are hidden (and have no index).
    let hiddenCount: Int

    init(_ album: AssetCollection, in library: PhotoLibrary) throws {
        title = album.title
        members = try library.fetchAssets(in: album).allObjects.map(\.localIdentifier)
        hiddenCount = try Self.allMembers(of: album, in: library).count - members.count
    }

    /// Every member, hidden ones included, in album order (what `albums` lists).
    static func allMembers(of album: AssetCollection, in library: PhotoLibrary) throws -> [String] {
        try library.fetchAssets(in: album, options: FetchOptions(includeHiddenAssets: true)).allObjects.map(\.localIdentifier)
    }

    /// Checks `album insert`: `--at` within the album, each asset given once and not yet a member.
    func checkInsertion(of assets: [String], at index: Int) throws {
        guard index <= members.count else {
            throw CommandFailure(
                "--at \(index) is out of range: '\(title)' has \(counted), so --at goes from 0 to \(members.count)", hint: hint)
        }
        var seen = Set<String>()
        for asset in assets {
            guard seen.insert(asset).inserted else { throw CommandFailure("asset \(asset) is given twice", hint: "give each asset once") }
            if let position = members.firstIndex(of: asset) {
                throw CommandFailure(
                    "asset \(asset) is already in '\(title)' at index \(position)",
                    hint: "change its place with 'photoledger album move --from \(position) --to <index>'")
            }
        }
    }

    /// Checks `album move`: every `--from` index names a member, `--to` fits once they are taken out.
    func checkMove(from indexes: IndexSet, to destination: Int) throws {
        if let bad = indexes.first(where: { $0 >= members.count }) {
            let range = members.isEmpty ? "" : ", so --from takes 0 to \(members.count - 1)"
            throw CommandFailure("--from \(bad) is out of range: '\(title)' has \(counted)\(range)", hint: hint)
        }
        let remaining = members.count - indexes.count
        guard destination <= remaining else {
            throw CommandFailure(
                "--to \(destination) is out of range: with the \(count(indexes.count, "moved asset")) taken out, '\(title)' has "
                    + "\(count(remaining, "other")), so --to goes from 0 to \(remaining)",
                hint: hint)
        }
    }

    private var counted: String { count(members.count, "asset") + (hiddenCount > 0 ? " with an index" : "") }

    private var hint: String {
        "'photoledger albums' shows each asset's index"
            + (hiddenCount > 0 ? "; hidden assets have none (\(hiddenCount) in '\(title)'): unhide them to place them" : "")
    }
}

/// What an album command did: a sentence for people, and the album with lists of assets for
/// `--json` (`{"localIdentifier": …, "added": […], …}`).
struct AlbumReport {
    let album: String
    let message: String
    /// The JSON key of each list and, for the text output, its label (nil: JSON only); a text
    /// line is printed only for a list that is not empty.
    var lists: [(key: String, label: String?, assets: [String])] = []

    func print(_ context: Context) {
        if context.json {
            context.emit(.object([("localIdentifier", .string(album))] + lists.map { ($0.key, .array($0.assets.map { .string($0) })) }))
            return
        }
        context.say("\(message): \(album)")
        for list in lists where !list.assets.isEmpty {
            if let label = list.label { context.say("\(label): \(list.assets.joined(separator: ", "))") }
        }
    }
}
