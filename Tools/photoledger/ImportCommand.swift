import CommandLineParsing
import Foundation
import LedgerCore
import PhotoLedger
import PhotoMedia

/// `photoledger import`: files and folders into the library, deduplicated by SHA-256, in change
/// blocks of at most ``blockSize`` files and ``blockBytes`` bytes.
struct ImportCommand {
    /// Files per change block: large enough to amortize the commit and the flushes that end each
    /// block, small enough to show progress.
    static let blockSize = 500
    /// Bytes per change block, so that a block of large files still ends within a few seconds.
    static let blockBytes: Int64 = 512 << 20

    /// What happened to one file.
    enum Outcome {
        case imported(localIdentifier: String)
        case wouldImport
        case duplicate(of: String)
        case notMedia
        case failed(String)
    }

    struct Candidate {
        let url: URL
        let size: Int64
    }

    let context: Context
    let library: PhotoLibrary
    let paths: [String]
    let album: ImportAlbum?
    let albumTitle: String?
    let move: Bool
    let recursive: Bool
    let dryRun: Bool

    private var outcomes: [(path: String, outcome: Outcome)] = []
    /// The files this run imported, by the local identifier of their asset.
    private var importedPaths: [String: String] = [:]
    private var progress: ProgressBar?
    private var doneCount = 0
    private var doneBytes: Int64 = 0

    init(context: Context, library: PhotoLibrary, options: Import) throws {
        self.context = context
        self.library = library
        paths = options.paths
        album = try options.album.map { try ImportAlbum($0, context: context, library: library) }
        albumTitle = album?.title
        move = options.move
        recursive = options.recursive
        dryRun = options.dryRun
    }

    mutating func run() throws -> ExitCode {
        let started = Date()
        let candidates = collect(paths)
        if ProgressBar.isTerminal, !context.quiet, !context.json {
            progress = ProgressBar(totalCount: candidates.count, totalBytes: candidates.reduce(0) { $0 + $1.size })
        }
        // A dry run hashes every file here to report duplicates; a real import leaves hashing
        // and duplicate detection to the library, which reads each file once.
        var known = dryRun ? try knownHashes() : [:]
        var block: [Candidate] = []
        var blockBytes: Int64 = 0
        for candidate in candidates {
            switch classify(candidate, known: known) {
            case .success(let hash):
                if let hash {
                    finish(candidate, .wouldImport)
                    known[hash] = candidate.url.path
                } else {
                    block.append(candidate)
                    blockBytes += candidate.size
                }
            case .failure(let outcome):
                finish(candidate, outcome.outcome)
            }
            if block.count == Self.blockSize || blockBytes >= Self.blockBytes {
                try importBlock(block)
                block.removeAll()
                blockBytes = 0
            }
        }
        if !block.isEmpty { try importBlock(block) }
        progress?.update(count: doneCount, bytes: doneBytes, force: true)
        progress?.finish()
        report(elapsed: Date().timeIntervalSince(started))
        return outcomes.contains { if case .failed = $0.outcome { return true } else { return false } } ? ExitCode.failure : ExitCode.success
    }

    // MARK: Steps

    /// The files named by the arguments, folders expanded (subfolders with --recursive).
    private mutating func collect(_ paths: [String]) -> [Candidate] {
        var found: [Candidate] = []
        let manager = FileManager.default
        for path in paths {
            let url = URL(fileURLWithPath: path)
            var isDirectory: ObjCBool = false
            guard manager.fileExists(atPath: url.path, isDirectory: &isDirectory) else {
                record(path, .failed("no such file or folder"))
                continue
            }
            guard isDirectory.boolValue else {
                found.append(Candidate(url: url, size: Self.size(of: url)))
                continue
            }
            found += files(in: url)
        }
        return found
    }

    private func files(in folder: URL) -> [Candidate] {
        var options: FileManager.DirectoryEnumerationOptions = [.skipsHiddenFiles]
        if !recursive { options.insert(.skipsSubdirectoryDescendants) }
        guard let enumerator = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: [], options: options) else { return [] }
        var found: [Candidate] = []
        for case let url as URL in enumerator {
            // lstat, not resource values: those also look up the owner's user and group names,
            // several file reads per file.
            var status = stat()
            guard lstat(url.path, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG else { continue }
            found.append(Candidate(url: url, size: Int64(status.st_size)))
        }
        return found.sorted { $0.url.path < $1.url.path }
    }

    /// The SHA-256 of every asset's photo or video already in the library, to the asset's identifier.
    private func knownHashes() throws -> [String: String] {
        var known: [String: String] = [:]
        for asset in try Listing.allAssets(in: library) {
            if let hash = try Listing.primaryHash(of: asset, in: library) { known[hash] = asset.localIdentifier }
        }
        return known
    }

    struct Skip: Error { let outcome: Outcome }

    /// Whether the file should be imported (with its hash in a dry run), or why it is skipped.
    private func classify(_ candidate: Candidate, known: [String: String]) -> Result<String?, Skip> {
        do {
            let handle = try FileHandle(forReadingFrom: candidate.url)
            defer { try? handle.close() }
            let header = try handle.read(upToCount: MediaFormat.headerLength) ?? Data()
            guard MediaFormat.detect(header: header) != nil else { return .failure(Skip(outcome: .notMedia)) }
            guard dryRun else { return .success(nil) }
            var hasher = SHA256()
            hasher.update(Array(header))
            while let chunk = try handle.read(upToCount: 1 << 20), !chunk.isEmpty {
                chunk.withUnsafeBytes { hasher.update($0) }
            }
            let hash = Hex.encode(hasher.finalize())
            if let existing = known[hash] { return .failure(Skip(outcome: .duplicate(of: existing))) }
            return .success(hash)
        } catch {
            return .failure(Skip(outcome: .failed("cannot read the file: \(Self.describe(error))")))
        }
    }

    /// Imports the block's files in one change block (the library stores them as one batch and
    /// skips files whose bytes are already an asset's); a file that fails is reported, the
    /// others are still imported.
    private mutating func importBlock(_ block: [Candidate]) throws {
        var results: [Outcome] = []
        let album = self.album
        let options = AssetImportOptions(shouldMoveFile: move, skipsDuplicates: true)
        do {
            results = try library.performChangesAndWait { changes in
                let imported = try changes.importAssets(fromFilesAt: block.map(\.url), options: options)
                let created = imported.compactMap(\.placeholderForCreatedAsset)
                if let album, !created.isEmpty {
                    try album.changeRequest(in: changes).addAssets(created)
                }
                return imported.map { result -> Outcome in
                    switch result {
                    case .created(let request): .imported(localIdentifier: request.placeholderForCreatedAsset.localIdentifier)
                    case .duplicate(let original): .duplicate(of: original)
                    case .failed(let error): .failed(Self.describe(error))
                    }
                }
            }
        } catch {
            results = Array(repeating: .failed(Self.describe(error)), count: block.count)
        }
        for (candidate, outcome) in zip(block, results) {
            switch outcome {
            case .imported(let identifier):
                importedPaths[identifier] = candidate.url.path
                finish(candidate, outcome)
            case .duplicate(let original):
                finish(candidate, .duplicate(of: importedPaths[original] ?? original))  // a file of this run, by its path
            default:
                finish(candidate, outcome)
            }
        }
    }

    // MARK: Reporting

    private mutating func finish(_ candidate: Candidate, _ outcome: Outcome) {
        doneCount += 1
        doneBytes += candidate.size
        record(candidate.url.path, outcome)
        progress?.update(count: doneCount, bytes: doneBytes)
    }

    private mutating func record(_ path: String, _ outcome: Outcome) {
        outcomes.append((path, outcome))
        if case .failed(let reason) = outcome {
            if progress != nil { FileHandle.standardOutput.write(Data("\r\u{1B}[K".utf8)) }
            context.warn("failed: \(path): \(reason)")
            return
        }
        guard progress == nil else { return }
        switch outcome {
        case .imported(let identifier): context.say("imported \(path) -> \(identifier)")
        case .wouldImport: context.say("would import \(path)")
        case .duplicate(let original): context.say("skipped duplicate \(path) (same content as \(original))")
        case .notMedia: context.say("skipped \(path): not a photo or video")
        case .failed: break
        }
    }

    private func report(elapsed: Double) {
        var imported: [JSON] = [], duplicates: [JSON] = [], notMedia: [JSON] = [], failed: [JSON] = []
        for (path, outcome) in outcomes {
            switch outcome {
            case .imported(let id): imported.append(.object([("path", .string(path)), ("localIdentifier", .string(id))]))
            case .wouldImport: imported.append(.object([("path", .string(path)), ("localIdentifier", .null)]))
            case .duplicate(let original): duplicates.append(.object([("path", .string(path)), ("duplicateOf", .string(original))]))
            case .notMedia: notMedia.append(.string(path))
            case .failed(let reason): failed.append(.object([("path", .string(path)), ("error", .string(reason))]))
            }
        }
        if context.json {
            context.emit(.object([
                ("dryRun", .bool(dryRun)), ("imported", .array(imported)), ("duplicates", .array(duplicates)),
                ("notMedia", .array(notMedia)), ("failed", .array(failed)),
            ]))
            return
        }
        let verb = dryRun ? "Would import" : "Imported"
        let album = albumTitle.map { " into album '\($0)'" } ?? ""
        var summary = "\(verb) \(imported.count) file\(imported.count == 1 ? "" : "s")\(album) in \(formatDuration(elapsed))"
        summary += "; skipped \(duplicates.count) duplicate\(duplicates.count == 1 ? "" : "s") and \(notMedia.count) non-media"
        summary += "; \(failed.count) failed."
        if context.quiet {
            if !failed.isEmpty { context.warn(summary) }
        } else {
            print(summary)
        }
    }

    // MARK: Helpers

    private static func size(of url: URL) -> Int64 {
        ((try? FileManager.default.attributesOfItem(atPath: url.path))?[.size] as? NSNumber)?.int64Value ?? 0
    }

    /// The message of an error, without the type's decoration.
    static func describe(_ error: any Error) -> String {
        if let error = error as? PhotoLibraryError { return error.message }
        return "\(error)"
    }
}
