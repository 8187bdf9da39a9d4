import CommandLineParsing
import Foundation
import LedgerCore
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
        default:
            return CommandFailure("\(error)", hint: "check the paths and arguments given")
        }
    }
}
