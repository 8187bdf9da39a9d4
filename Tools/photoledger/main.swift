@preconcurrency import Glibc
import CommandLineParsing
import Foundation
import LedgerCore
import PhotoLedger
import PhotoLedgerSync

// photoledger: the command-line tool of a PhotoLedger library.

/// Runs the parsed command and returns the exit code.
func run(_ command: ParsedCommandLine) async throws -> Int32 {
    let context = try Context(command)
    switch command.path.first! {
    case "init": return try LibraryCommands.initialize(context)
    case "status": return try LibraryCommands.status(context)
    case "import":
        var importer = ImportCommand(context: context, library: try context.openLibrary())
        return try importer.run()
    case "assets": return try LibraryCommands.assets(context)
    case "albums": return try LibraryCommands.albums(context)
    case "album": return try LibraryCommands.album(context, command.path[1])
    case "favorite", "unfavorite", "hide", "unhide", "delete", "recover": return try LibraryCommands.assetFlags(context, command.path[0])
    case "export": return try LibraryCommands.export(context)
    case "history": return try AuditCommands.history(context)
    case "verify": return try AuditCommands.verify(context)
    case "rebuild": return try AuditCommands.rebuild(context)
    case "compact": return try await AuditCommands.compact(context)
    case "remote": return try SyncCommands.remote(context, command.path[1])
    case "sync": return try await SyncCommands.sync(context)
    default: throw ToolError(message: "unknown subcommand '\(command.path[0])'", exitCode: ExitCode.usage)
    }
}

/// Writes `Error: …` and an optional hint on standard error and exits.
func fail(_ message: String, hint: String? = nil, code: Int32) -> Never {
    var text = "Error: \(message)\n"
    if let hint { text += "Hint: \(hint)\n" }
    fflush(stdout)
    FileHandle.standardError.write(Data(text.utf8))
    exit(code)
}

let status: Int32
do {
    let command = try parser.parse(Array(CommandLine.arguments.dropFirst()))
    if command.isHelpRequest {
        print(parser.help(for: command.path), terminator: "")
        status = ExitCode.success
    } else {
        status = try await run(command)
    }
} catch let error as UsageError {
    fflush(stdout)
    FileHandle.standardError.write(Data(error.description.utf8))
    exit(ExitCode.usage)
} catch let error as ToolError {
    fail(error.message, hint: error.hint, code: error.exitCode)
} catch let error as PhotoLibraryError {
    fail("\(error.message) [\(error.code)]", code: ExitCode.failure)
} catch let error as SyncError {
    fail(error.description, code: ExitCode.failure)
} catch {
    fail("\(error)", hint: "check the paths and arguments given", code: ExitCode.failure)
}
fflush(stdout)
exit(status)
