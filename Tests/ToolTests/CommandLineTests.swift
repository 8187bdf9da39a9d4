import Foundation
import Testing

@Suite("photoledger: help, usage errors and exit codes")
struct CommandLineTests {
    @Test func helpIsLaidOutAsOverviewUsageOptionsSubcommands() throws {
        let result = try ToolRunner.run("photoledger", ["--help"])
        #expect(result.status == 0)
        for section in ["OVERVIEW:", "USAGE: photoledger <subcommand>", "OPTIONS:", "SUBCOMMANDS:", "--library <path>", "import", "sync"] {
            #expect(result.output.contains(section), "missing \(section)")
        }
    }

    @Test func helpForASubcommandWorksBothWays() throws {
        let viaHelp = try ToolRunner.run("photoledger", ["help", "import"])
        let viaFlag = try ToolRunner.run("photoledger", ["import", "--help"])
        #expect(viaHelp.status == 0 && viaFlag.status == 0)
        #expect(viaHelp.output == viaFlag.output)
        #expect(viaHelp.output.contains("USAGE: photoledger import <path> ..."))
        #expect(viaHelp.output.contains("ARGUMENTS:") && viaHelp.output.contains("GLOBAL OPTIONS:"))
        let nested = try ToolRunner.run("photoledger", ["help", "album", "move"])
        #expect(nested.status == 0 && nested.output.contains("--from <indexes>"))
    }

    @Test(arguments: [
        ([], "missing subcommand"),
        (["frobnicate"], "unknown subcommand 'frobnicate'"),
        (["status", "--colour"], "unknown option '--colour'"),
        (["import"], "missing expected argument '<path>'"),
        (["album"], "missing subcommand"),
        (["album", "rename", "x"], "missing expected argument '<title>'"),
        (["status", "extra"], "unexpected argument 'extra'"),
        (["status", "--library"], "missing value for '--library <path>'"),
        (["status", "--json=yes"], "takes no value"),
        (["help", "nothing"], "unknown subcommand 'nothing'"),
    ])
    func usageErrorsExit64WithTheUsageLine(arguments: [String], message: String) throws {
        let result = try ToolRunner.run("photoledger", arguments)
        #expect(result.status == 64)
        #expect(result.errors.hasPrefix("Error: "))
        #expect(result.errors.contains(message), "\(result.errors)")
        #expect(result.errors.contains("Usage: photoledger"))
        #expect(result.output.isEmpty)
    }

    @Test func aMissingLibraryIsAUsageErrorWithAHint() throws {
        let result = try ToolRunner.run("photoledger", ["status"])
        #expect(result.status == 64)
        #expect(result.errors.contains("--library <path> or set PHOTOLEDGER_LIBRARY"))
    }

    @Test func theLibraryComesFromTheEnvironment() throws {
        let workspace = try Workspace()
        let result = try ToolRunner.run("photoledger", ["status", "--json"], environment: ["PHOTOLEDGER_LIBRARY": workspace.library.path])
        #expect(result.status == 0)
        let status = try #require(try result.json() as? [String: Any])
        #expect(status["device"] as? String == workspace.device)
    }

    @Test func aLibraryThatDoesNotExistFailsWithAHint() throws {
        let workspace = try Workspace(initialize: false)
        let result = try workspace.cli(["assets"])
        #expect(result.status == 1)
        #expect(result.errors.hasPrefix("Error: no library at "))
        #expect(result.errors.contains("Hint: create it with 'photoledger init"))
    }

    @Test func optionsMayComeBeforeOrAfterTheSubcommand() throws {
        let workspace = try Workspace()
        let before = try ToolRunner.run("photoledger", ["--json", "--library", workspace.library.path, "status"])
        let after = try ToolRunner.run("photoledger", ["status", "--library=\(workspace.library.path)", "--json"])
        #expect(before.status == 0 && after.status == 0)
        #expect(try before.json() as? [String: Any] != nil && after.json() as? [String: Any] != nil)
    }
}

@Suite("photoledger: init and status")
struct InitStatusTests {
    @Test func initRecordsTheDeviceForLaterCommands() throws {
        let workspace = try Workspace(device: "kitchen-tablet")
        let status = try #require(try workspace.json(["status"]) as? [String: Any])
        #expect(status["device"] as? String == "kitchen-tablet")
        #expect(status["assets"] as? Int == 0 && status["albums"] as? Int == 0 && status["pendingEvents"] as? Int == 0)
        #expect(status["remote"] is NSNull && status["lastSync"] is NSNull)
    }

    @Test func initTwiceIsFineButNotForAnotherDevice() throws {
        let workspace = try Workspace(device: "one")
        #expect(try workspace.cli(["init"]).status == 0)
        let other = try workspace.cli(["init", "--device", "two"])
        #expect(other.status == 1)
        #expect(other.errors.contains("already belongs to device 'one'"))
    }

    @Test func anInvalidDeviceNameFails() throws {
        let workspace = try Workspace(initialize: false)
        let result = try workspace.cli(["init", "--device", "has space"])
        #expect(result.status == 1)
        #expect(result.errors.hasPrefix("Error: invalid device name"))
    }

    @Test func statusCountsAssetsAlbumsAndPendingEvents() throws {
        let workspace = try Workspace()
        let ids = try workspace.importPhotos([try workspace.photo("a.jpg", seed: 1), try workspace.photo("b.jpg", seed: 2)], album: "Trip")
        #expect(try workspace.cli(["delete", ids[0]]).status == 0)
        let status = try #require(try workspace.json(["status"]) as? [String: Any])
        #expect(status["assets"] as? Int == 1)
        #expect(status["deleted"] as? Int == 1)
        #expect(status["albums"] as? Int == 1)
        #expect((status["pendingEvents"] as? Int ?? 0) > 0)
        let text = try workspace.cli(["status"])
        #expect(text.output.contains("Albums:         1"))
    }
}
