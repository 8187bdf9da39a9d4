import CommandLineParsing
import Testing

@Suite("Help: OVERVIEW, USAGE, ARGUMENTS, OPTIONS, titled groups and SUBCOMMANDS")
struct HelpTests {
    @Test func aLeafCommandsHelp() throws {
        let help = try #require(Gallery.helpMessage(for: ["album", "insert"]))
        #expect(
            help == """
                OVERVIEW: Insert assets at an index.

                USAGE: gallery album insert <album> <asset> ... --at <index> [<global-options>]

                ARGUMENTS:
                  <album>                 The album.
                  <asset>                 The assets to insert.

                OPTIONS:
                  --at <index>            Where the first asset goes.
                  -h, --help              Show help information.

                GLOBAL OPTIONS:
                  --library <path>        The library file.
                  --device <name>         This device's name.
                  --json                  Write JSON.
                  -q, --quiet             Print less.

                """)
    }

    @Test func theRootsHelpListsSubcommandsTheVersionAndTheDiscussion() throws {
        let help = try #require(Gallery.helpMessage())
        #expect(
            help.hasPrefix(
                "OVERVIEW: Manage a gallery.\n\nA gallery is a folder of photos.\n\nUSAGE: gallery <subcommand> [<global-options>]\n"))
        #expect(help.contains("  --version               Show the version.\n  -h, --help              Show help information.\n"))
        #expect(help.contains("\nSUBCOMMANDS:\n  album                   Change albums.\n  export                  Export an asset.\n"))
        #expect(help.hasSuffix("\n  See 'gallery help <subcommand>' for detailed help.\n"))
        #expect(try #require(Gallery.helpMessage(for: ["album"])).hasSuffix("See 'gallery help album <subcommand>' for detailed help.\n"))
    }

    @Test func defaultsValuesAndShortNamesAreShownAndHiddenOptionsAreNot() throws {
        let help = try #require(Gallery.helpMessage(for: ["export"]))
        #expect(
            help.contains(
                "  --version <version>     Which rendition. (values: original, current; default:\n" + String(repeating: " ", count: 26)
                    + "current)\n"))
        #expect(help.contains("  --timeout <timeout>     Seconds to wait. (default: 30)\n"))
        #expect(help.contains("  -f, --overwrite         Replace an existing file.\n"))
        #expect(help.contains("  [<destination>]") == false && help.contains("  <destination>           Where to write it.\n"))
        #expect(!help.contains("child-mode"))
        #expect(
            Gallery.usage(for: ["export"])
                == "gallery export <asset> [<destination>] [--version <version>] [--tag <tag> ...] [--timeout <timeout>] [--overwrite] [<global-options>]"
        )
    }

    @Test func aShadowedGroupOptionIsNotListed() throws {
        let help = try #require(Gallery.helpMessage(for: ["history"]))
        #expect(help.contains("OPTIONS:\n  --device <device>       Only this device's changes.\n"))
        #expect(!help.contains("This device's name."))
    }

    @Test func longHelpWrapsBesideTheLabelsAndLongLabelsGetALineOfTheirOwn() throws {
        let help = try #require(Gallery.helpMessage(for: ["serve"]))
        let indent = String(repeating: " ", count: 26)
        #expect(help.contains("\n  --a-rather-long-option <value>\n\(indent)Short.\n"))
        let words = Array(repeating: "word", count: 20)
        #expect(
            help.contains(
                "\n  --verbose               \(words[..<11].joined(separator: " "))\n\(indent)\(words[11...].joined(separator: " "))\n"))
        #expect(help.split(separator: "\n").allSatisfy { $0.count <= 80 })
    }

    @Test func unknownPathsHaveNoHelp() {
        #expect(Gallery.helpMessage(for: ["nothing"]) == nil)
        #expect(Gallery.usage(for: ["album", "nothing"]) == nil)
    }
}
