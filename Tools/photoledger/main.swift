import CommandLineParsing
import LedgerStore
import PhotoLedger
import PhotoLedgerSync

// photoledger: the command-line tool of a PhotoLedger library.

await Photoledger.start()

extension Photoledger {
    /// Parses the command line, runs the command and exits.
    static func start() async {
        await main(describeFailure: failure(for:))
    }

    /// How a failure is reported: `Error: …`, a hint when there is one, exit status 1.
    static func failure(for error: any Error) -> CommandFailure {
        switch error {
        case let error as PhotoLibraryError:
            return CommandFailure("\(error.message) [\(error.code)]")
        case let error as SyncError:
            return CommandFailure(error.description)
        case let error as DatabaseError:
            return CommandFailure(
                "cannot use the library file: \(error)", hint: "check that --library names a PhotoLedger library and that it is writable")
        default:
            return CommandFailure("\(error)", hint: "check the paths and arguments given")
        }
    }
}
