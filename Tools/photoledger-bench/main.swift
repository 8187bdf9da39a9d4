import Foundation

// photoledger-bench: PhotoLedger's figures beside baselines measured in the same run.
let usage = """
    OVERVIEW: Measure PhotoLedger against C baselines in the same run (build with -c release).

    USAGE: photoledger-bench [--quick] [--json] [--only <prefix>]

    OPTIONS:
      --quick           Smaller workloads and one repetition: every figure in under a minute.
      --json            One JSON object per figure (name, value, unit, baseline, ratio, target).
      --only <prefix>   Run only the suites whose figures start with <prefix> (e.g. append, read, live).
      -h, --help        Show help information.
    """

var quick = false
var json = false
var only: String?
var arguments = CommandLine.arguments.dropFirst().makeIterator()
while let argument = arguments.next() {
    switch argument {
    case "--quick": quick = true
    case "--json": json = true
    case "--sync-pull-child":
        // Device B of the sync benchmark, run as its own process so its peak RSS is its own.
        do { try SyncBenchmarks.runPullChild(Array(arguments)) } catch {
            FileHandle.standardError.write(Data("Error: \(error)\n".utf8))
            exit(1)
        }
        exit(0)
    case "--waiting-pulls-child":
        // The load generator of the live suite, run as its own process so the server's memory is its own.
        do { try LiveBenchmarks.runWaitingPullsChild(Array(arguments)) } catch {
            FileHandle.standardError.write(Data("Error: \(error)\n".utf8))
            exit(1)
        }
        exit(0)
    case "--only":
        guard let value = arguments.next() else {
            FileHandle.standardError.write(Data("Error: --only needs a value\nUsage: photoledger-bench [--quick] [--json] [--only <prefix>]\n".utf8))
            exit(64)
        }
        only = value
    case "-h", "--help":
        print(usage)
        exit(0)
    default:
        FileHandle.standardError.write(Data("Error: unknown option '\(argument)'\nUsage: photoledger-bench [--quick] [--json] [--only <prefix>]\n".utf8))
        exit(64)
    }
}

#if DEBUG
if !json { print("warning: this is a debug build; run `swift run -c release photoledger-bench` for real figures\n") }
#endif

struct Suite {
    let prefixes: [String]
    let run: () throws -> [Figure]
}

let suites: [Suite] = [
    Suite(prefixes: ["append", "read"]) { try EventLogBenchmarks(quick: quick).run() },
    Suite(prefixes: ["library.block", "library.import", "library.album", "library.fetch-by-id"]) { try LibraryBenchmarks(quick: quick).run() },
    Suite(prefixes: ["library.rebuild"]) { try LibraryBenchmarks(quick: quick).rebuildFigure() },
    Suite(prefixes: ["sync.push", "sync.pull", "sync.rss"]) { try SyncBenchmarks(quick: quick).run() },
    Suite(prefixes: ["sync.apply"]) { [try SyncBenchmarks(quick: quick).applyFigure()] },
    Suite(prefixes: ["media"]) { try MediaBenchmarks(quick: quick).run() },
    Suite(prefixes: ["server", "codec"]) { try ServerBenchmarks(quick: quick).run() },
    Suite(prefixes: ["audit"]) { try AuditBenchmarks(quick: quick).run() },
    Suite(prefixes: ["live"]) { try LiveBenchmarks(quick: quick).run() },
]

var figures: [Figure] = []
do {
    for suite in suites where only.map({ prefix in suite.prefixes.contains { $0.hasPrefix(prefix) || prefix.hasPrefix($0) } }) ?? true {
        figures += try suite.run().filter { figure in only.map { figure.name.hasPrefix($0) } ?? true }
    }
} catch {
    FileHandle.standardError.write(Data("Error: \(error)\n".utf8))
    exit(1)
}
if json {
    print("[\n" + figures.map { "  " + $0.json }.joined(separator: ",\n") + "\n]")
} else {
    printTable(figures)
}
