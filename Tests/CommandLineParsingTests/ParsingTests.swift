import CommandLineParsing
import Testing

/// Parses a command line of the sample tool and returns the command, failing the test otherwise.
func parse<Command: ParsableCommand>(_ arguments: [String], as _: Command.Type = Command.self) throws -> Command {
    let request = try Gallery.parse(commandLine: arguments)
    guard case .run(let invocation) = request else {
        Issue.record("\(arguments) did not ask to run a command")
        throw ValidationError("not a command")
    }
    return try #require(invocation.command as? Command, "\(arguments) parsed as \(type(of: invocation.command))")
}

/// The usage error a command line of the sample tool gives, or nil.
func usageError(_ arguments: [String]) -> UsageError? {
    do {
        _ = try Gallery.parse(commandLine: arguments)
        return nil
    } catch {
        return error
    }
}

@Suite("Parsing: arguments, options and flags into typed properties")
struct ParsingTests {
    @Test func argumentsOptionsAndFlagsBecomeTypedProperties() throws {
        let insert = try parse(["album", "insert", "Trip", "a", "b", "--at", "2", "--json"], as: Album.Insert.self)
        #expect(insert.album == "Trip")
        #expect(insert.assets == ["a", "b"])
        #expect(insert.at == 2)
        #expect(insert.global.json && !insert.global.quiet && insert.global.library == nil)
    }

    @Test func optionValuesMayFollowAnEqualsSign() throws {
        let insert = try parse(["album", "insert", "Trip", "a", "--at=3", "--library=/tmp/x"], as: Album.Insert.self)
        #expect(insert.at == 3 && insert.global.library == "/tmp/x")
    }

    @Test func globalOptionsAreAcceptedBeforeAndAfterTheSubcommand() throws {
        let before = try parse(["--json", "--library", "/l", "-q", "album", "insert", "T", "a", "--at", "0"], as: Album.Insert.self)
        let between = try parse(["album", "--json", "--library", "/l", "-q", "insert", "T", "a", "--at", "0"], as: Album.Insert.self)
        let after = try parse(["album", "insert", "T", "a", "--at", "0", "--json", "--library", "/l", "-q"], as: Album.Insert.self)
        for command in [before, between, after] {
            #expect(command.global.json && command.global.quiet && command.global.library == "/l")
        }
    }

    @Test func aParentsOptionsAreAcceptedBeforeAndAfterItsSubcommand() throws {
        let before = try parse(["admin", "--db", "/db", "create-library", "family"], as: Admin.CreateLibrary.self)
        let after = try parse(["admin", "create-library", "family", "--db", "/db"], as: Admin.CreateLibrary.self)
        #expect(before.store.db == "/db" && before.name == "family")
        #expect(after.store.db == "/db" && after.name == "family")
    }

    @Test func aSubcommandsOptionsAreNotAcceptedBeforeItsName() {
        let error = usageError(["album", "--at", "0", "insert", "T", "a"])
        #expect(error?.message == "unknown option '--at'")
        #expect(error?.usage == "gallery album <subcommand> [<global-options>]")
    }

    @Test func defaultsOptionalsAndRepeatedOptions() throws {
        let plain = try parse(["export", "x"], as: Export.self)
        #expect(plain.version == .current && plain.tag.isEmpty && plain.timeout == 30 && plain.destination == nil && !plain.force)
        let full = try parse(
            ["export", "x", "out.jpg", "--version", "original", "--tag", "a", "--tag", "b", "-f", "--timeout", "5"], as: Export.self)
        #expect(full.version == .original && full.tag == ["a", "b"] && full.timeout == 5 && full.destination == "out.jpg" && full.force)
    }

    @Test func theLastValueOfASingleValueOptionWins() throws {
        #expect(try parse(["export", "x", "--version", "original", "--version", "current"], as: Export.self).version == .current)
    }

    @Test func aRemainingOptionTakesEveryArgumentAfterIt() throws {
        let child = try parse(["export", "x", "--child-mode", "a", "--json", "-z"], as: Export.self)
        #expect(child.childArguments == ["a", "--json", "-z"])
        #expect(!child.global.json)
    }

    @Test func doubleDashEndsTheOptions() throws {
        let export = try parse(["export", "--", "--json", "-q"], as: Export.self)
        #expect(export.asset == "--json" && export.destination == "-q" && !export.global.json)
    }

    @Test func negativeNumbersAreValuesNotOptions() throws {
        #expect(usageError(["album", "insert", "T", "a", "--at", "-1"])?.message == "--at must be 0 or more, not -1")
    }

    @Test func anOwnOptionHidesAGroupedOptionOfTheSameName() throws {
        let history = try parse(["history", "--device", "anna"], as: History.self)
        #expect(history.device == "anna")
        #expect(history.global.device == nil)
        let before = try parse(["--device", "ben", "history"], as: History.self)
        #expect(before.device == "ben")
    }

    @Test func commandNamesComeFromTheTypeWhenNotGiven() throws {
        _ = try parse(["admin", "list-devices", "--db", "x"], as: Admin.ListDevices.self)
        #expect(Gallery.helpMessage(for: ["album"]) != nil)
    }

    @Test func helpAndVersionAreRequestsNotCommands() throws {
        guard case .help(let viaFlag) = try Gallery.parse(commandLine: ["album", "insert", "--help"]),
            case .help(let viaCommand) = try Gallery.parse(commandLine: ["help", "album", "insert"]),
            case .help(let short) = try Gallery.parse(commandLine: ["album", "insert", "T", "-h"]),
            case .version(let version) = try Gallery.parse(commandLine: ["--version"])
        else {
            Issue.record("help or version not recognised")
            return
        }
        #expect(viaFlag == viaCommand && viaFlag == short)
        #expect(viaFlag == Gallery.helpMessage(for: ["album", "insert"]))
        #expect(version == "1.2.3")
    }
}
