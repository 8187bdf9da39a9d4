import CommandLineParsing
import Foundation

// photoledger-bench: PhotoLedger's figures beside baselines measured in the same run.

PhotoledgerBench.main()

/// `photoledger-bench`.
struct PhotoledgerBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "photoledger-bench", abstract: "Measure PhotoLedger against C baselines in the same run (build with -c release).")

    @Flag(help: "Smaller workloads and one repetition: every figure in under a minute.")
    var quick = false

    @Flag(help: "One JSON object per figure (name, value, unit, baseline, ratio, target).")
    var json = false

    @Option(help: ArgumentHelp("Run only the suites whose figures start with <prefix> (e.g. append, read, live).", valueName: "prefix"))
    var only: String?

    /// Device B of the sync benchmark, run as its own process so its peak RSS is its own: the
    /// library path, the remote URL and the token.
    @Option(help: .hidden, parsing: .remaining)
    var syncPullChild: [String] = []

    /// The load generator of the live suite, run as its own process so the server's memory is
    /// its own: its arguments.
    @Option(help: .hidden, parsing: .remaining)
    var waitingPullsChild: [String] = []

    /// A group of figures and how to measure them.
    struct Suite {
        let prefixes: [String]
        let run: () throws -> [Figure]
    }

    func run() throws {
        if !syncPullChild.isEmpty {
            try SyncBenchmarks.runPullChild(syncPullChild)
            return
        }
        if !waitingPullsChild.isEmpty {
            try LiveBenchmarks.runWaitingPullsChild(waitingPullsChild)
            return
        }
        #if DEBUG
            if !json { print("warning: this is a debug build; run `swift run -c release photoledger-bench` for real figures\n") }
        #endif
        let quick = quick
        let suites: [Suite] = [
            Suite(prefixes: ["append", "read"]) { try EventLogBenchmarks(quick: quick).run() },
            Suite(prefixes: ["library.block", "library.import", "library.album", "library.fetch-by-id"]) {
                try LibraryBenchmarks(quick: quick).run()
            },
            Suite(prefixes: ["library.rebuild"]) { try LibraryBenchmarks(quick: quick).rebuildFigure() },
            Suite(prefixes: ["library.fetch-during-import"]) { try LibraryBenchmarks(quick: quick).fetchDuringImportFigures() },
            Suite(prefixes: ["sync.push", "sync.pull", "sync.rss"]) { try SyncBenchmarks(quick: quick).run() },
            Suite(prefixes: ["sync.apply"]) { [try SyncBenchmarks(quick: quick).applyFigure()] },
            Suite(prefixes: ["bootstrap"]) { try BootstrapBenchmarks(quick: quick).run() },
            Suite(prefixes: ["sync.transfer"]) { try TransferBenchmarks(quick: quick).run() },
            Suite(prefixes: ["live.propagation"]) { try PropagationBenchmarks(quick: quick).run() },
            Suite(prefixes: ["media"]) { try MediaBenchmarks(quick: quick).run() },
            Suite(prefixes: ["server", "codec"]) { try ServerBenchmarks(quick: quick).run() },
            Suite(prefixes: ["scale"]) { try ScaleOutBenchmarks(quick: quick).run() },
            Suite(prefixes: ["audit"]) { try AuditBenchmarks(quick: quick).run() },
            Suite(prefixes: ["live.wake", "live.rss"]) { try LiveBenchmarks(quick: quick).run() },
            Suite(prefixes: ["host"]) { try HostBenchmarks(quick: quick).run() },
            Suite(prefixes: ["e2e.push", "e2e.pull"]) { try EncryptionBenchmarks(quick: quick, parts: .sync).run() },
            Suite(prefixes: ["e2e.import", "e2e.upload"]) { try EncryptionBenchmarks(quick: quick, parts: .photos).run() },
            Suite(prefixes: ["web"]) { try WebBenchmarks(quick: quick).run() },
            Suite(prefixes: ["photokit"]) { try PhotoKitBenchmarks(quick: quick).run() },
        ]
        var figures: [Figure] = []
        for suite in suites where only.map({ prefix in suite.prefixes.contains { $0.hasPrefix(prefix) || prefix.hasPrefix($0) } }) ?? true {
            figures += try suite.run().filter { figure in only.map { figure.name.hasPrefix($0) } ?? true }
        }
        if json {
            print("[\n" + figures.map { "  " + $0.json }.joined(separator: ",\n") + "\n]")
        } else {
            printTable(figures)
        }
    }
}
