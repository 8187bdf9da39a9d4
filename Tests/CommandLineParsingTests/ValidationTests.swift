import CommandLineParsing
import Testing

@Suite("Validation: usage errors name the problem and carry the command's usage line")
struct ValidationTests {
    @Test(
        arguments: [
            ([], "missing subcommand", "gallery <subcommand> [<global-options>]"),
            (["frobnicate"], "unknown subcommand 'frobnicate'", "gallery <subcommand> [<global-options>]"),
            (["album"], "missing subcommand", "gallery album <subcommand> [<global-options>]"),
            (["help", "nothing"], "no help for unknown subcommand 'nothing'", "gallery <subcommand> [<global-options>]"),
            (["export"], "missing expected argument '<asset>'", nil),
            (["export", "a", "b", "c"], "unexpected argument 'c'", nil),
            (["export", "a", "--colour"], "unknown option '--colour'", nil),
            (["export", "a", "--library"], "missing value for '--library <path>'", nil),
            (["export", "a", "--library", "--json"], "missing value for '--library <path>'", nil),
            (["export", "a", "--json=yes"], "the flag '--json' takes no value", nil),
            (
                ["export", "a", "--version", "best"], "invalid value 'best' for '--version <version>': expected one of original, current",
                nil
            ),
            (
                ["export", "a", "--timeout", "-3"],
                "invalid value '-3' for '--timeout <timeout>': expected a whole number from 0 to 18446744073709551615", nil
            ),
            (["export", "a", "--timeout", "18446744073709551616"], "invalid value '18446744073709551616' for '--timeout <timeout>'", nil),
            (["export", "a", "--child-mode"], "missing value for '--child-mode <child-mode>'", nil),
            (["album", "insert", "T"], "missing expected argument '<asset>'", nil),
            (["album", "insert", "T", "a"], "missing '--at <index>'", nil),
            (["album", "insert", "T", "a", "--at", "first"], "invalid value 'first' for '--at <index>': expected a whole number", nil),
            (
                ["album", "move", "T", "--from", "a,b", "--to", "0"],
                "invalid value 'a,b' for '--from <indexes>': expected comma-separated indexes such as 0,2,5", nil
            ),
            (["admin", "create-library", "x"], "missing '--db <db>'", "gallery admin create-library <name> [--db <db>]"),
        ] as [([String], String, String?)])
    func usageErrors(arguments: [String], message: String, usage: String?) throws {
        let error = try #require(usageError(arguments), "\(arguments) parsed")
        #expect(error.message.hasPrefix(message), "\(error.message)")
        if let usage { #expect(error.usage == usage) }
        #expect(error.description.hasPrefix("Error: \(error.message)\nUsage: gallery"))
    }

    @Test func validateRunsOnTheParsedCommandAndItsGroups() {
        let command = usageError(["album", "insert", "Trip", "a", "--at", "-2"])
        #expect(command?.message == "--at must be 0 or more, not -2")
        #expect(command?.usage == "gallery album insert <album> <asset> ... --at <index> [<global-options>]")
        #expect(command?.helpCommand == "gallery album insert --help")
        let group = usageError(["admin", "list-devices"])
        #expect(group?.message == "missing '--db <db>'")
    }

    @Test func theDescriptionIsWhatToolsPrint() throws {
        let error = try #require(usageError(["album", "insert", "T", "a"]))
        #expect(
            error.description == """
                Error: missing '--at <index>'
                Usage: gallery album insert <album> <asset> ... --at <index> [<global-options>]
                  See 'gallery album insert --help' for more information.

                """)
    }

    @Test func anInvocationMakesUsageErrorsOfItsCommand() throws {
        guard case .run(let invocation) = try Gallery.parse(commandLine: ["album", "move", "T", "--from", "1", "--to", "0"]) else {
            Issue.record("not a command")
            return
        }
        #expect(invocation.path == ["album", "move"])
        let error = invocation.usageError("--from 1 is out of range")
        #expect(error.usage == "gallery album move <album> --from <indexes> --to <index> [<global-options>]")
    }
}
