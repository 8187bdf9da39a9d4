import CommandLineParsing
import Foundation
import LedgerCore
import PhotoLedger
import PhotoLedgerJSON
import PhotoMedia

/// `photoledger import`: files and folders into the library, deduplicated by SHA-256, in change
/// blocks of at most ``blockSize`` files and ``blockBytes`` bytes. Every path named or found ends
/// in one outcome, reported: imported, duplicate, not media, skipped, or failed. After each block
/// commits, the image manager caches the imported assets' common renditions (``thumbnailSizes``)
/// in the background, at low priority; the command waits for them at the end, as a phase of its
/// own.
struct ImportCommand {
    /// The renditions made for every imported asset: the grid's (256 pixels, aspect fit and fill;
    /// a JPEG's or WebP's come from its validation, at no decode of their own) and the detail
    /// view's (1024, aspect fit).
    static let thumbnailSizes: [(side: Double, mode: ImageContentMode)] = [(256, .aspectFit), (256, .aspectFill), (1024, .aspectFit)]

    /// Files per change block: large enough to amortize the commit and the flushes that end each
    /// block, small enough to show progress.
    static let blockSize = 500
    /// Bytes per change block, so that a block of large files still ends within a few seconds.
    static let blockBytes: Int64 = 512 << 20

    /// What happened to one path.
    enum Outcome {
        case imported(localIdentifier: String)
        case wouldImport
        case duplicate(of: String)
        /// Bytes that are no supported photo or video, and why.
        case notMedia(String)
        /// A path not read as media (hidden, not a regular file, unreadable), and why.
        case skipped(String)
        case failed(String)

        /// The outcome's name in the JSON report.
        var name: String {
            switch self {
            case .imported: "imported"
            case .wouldImport: "wouldImport"
            case .duplicate: "duplicate"
            case .notMedia: "notMedia"
            case .skipped: "skipped"
            case .failed: "failed"
            }
        }
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
    /// Renditions cached for the imported assets, and the line that reports them.
    private var thumbnails = 0
    private var thumbnailReport: String?
    /// The imported files whose thumbnails could not be made, and why.
    private var thumbnailFailures: [(path: String, reason: String)] = []
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
        // A dry run validates and hashes every file here to report what a real run would do; a
        // real import leaves validation, hashing and duplicate detection to the library, which
        // reads each file once.
        var known = dryRun ? try knownHashes() : [:]
        var block: [Candidate] = []
        var blockBytes: Int64 = 0
        for candidate in candidates {
            if dryRun {
                let outcome = classify(candidate, known: known)
                if case .success(let hash) = outcome { known[hash] = candidate.url.path }
                finish(candidate, (try? outcome.get()).map { _ in .wouldImport } ?? Self.outcome(of: outcome))
                continue
            }
            block.append(candidate)
            blockBytes += candidate.size
            if block.count == Self.blockSize || blockBytes >= Self.blockBytes {
                try importBlock(block)
                block.removeAll()
                blockBytes = 0
            }
        }
        if !block.isEmpty { try importBlock(block) }
        progress?.update(count: doneCount, bytes: doneBytes, force: true)
        progress?.finish()
        let elapsed = Date().timeIntervalSince(started)
        waitForThumbnails()
        report(elapsed: elapsed)
        return outcomes.contains { if case .failed = $0.outcome { return true } else { return false } }
            ? ExitCode.failure : ExitCode.success
    }

    // MARK: Steps

    /// The files named by the arguments, folders expanded (subfolders with --recursive). Paths
    /// that are not imported (hidden, subfolders without --recursive, symbolic links, FIFOs and
    /// devices inside folders, names that are not UTF-8, folders that cannot be read) are
    /// recorded with their reason here. A path named as an argument is handed to the library
    /// whatever it is, which reports a FIFO or device at once, without reading it.
    private mutating func collect(_ paths: [String]) -> [Candidate] {
        var found: [Candidate] = []
        for path in paths {
            var status = stat()
            guard stat(path, &status) == 0 else {
                record(path, errno == ENOENT || errno == ENOTDIR ? .failed("no such file or folder") : .skipped(Self.systemError()))
                continue
            }
            if (status.st_mode & S_IFMT) == S_IFDIR {
                found += files(in: path)
            } else {
                found.append(Candidate(url: URL(fileURLWithPath: path), size: Int64(status.st_size)))
            }
        }
        return found
    }

    /// The regular files in `folder`, in byte order of their names, and in its subfolders with
    /// --recursive; every other entry is recorded as skipped with its reason.
    private mutating func files(in folder: String) -> [Candidate] {
        guard let directory = opendir(folder) else {
            record(folder, .skipped("the folder cannot be read (\(Self.systemError()))"))
            return []
        }
        var names: [[UInt8]] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { Array($0.prefix { $0 != 0 }) }
            if name != [0x2E] && name != [0x2E, 0x2E] { names.append(name) }
        }
        closedir(directory)
        names.sort { $0.lexicographicallyPrecedes($1) }
        let prefix = folder.hasSuffix("/") ? folder : folder + "/"
        var found: [Candidate] = []
        for bytes in names {
            guard let name = String(validating: bytes, as: UTF8.self) else {
                record(prefix + Self.escaped(bytes), .skipped("the name is not valid UTF-8; rename the file to import it"))
                continue
            }
            let path = prefix + name
            if name.hasPrefix(".") {
                record(path, .skipped("hidden (its name starts with a dot)"))
                continue
            }
            var status = stat()
            guard lstat(path, &status) == 0 else {
                record(path, .skipped(Self.systemError()))
                continue
            }
            switch status.st_mode & S_IFMT {
            case S_IFREG: found.append(Candidate(url: URL(fileURLWithPath: path), size: Int64(status.st_size)))
            case S_IFDIR where recursive: found += files(in: path)
            case S_IFDIR: record(path, .skipped("a folder inside a folder; add --recursive to import it"))
            case S_IFLNK: record(path, .skipped("a symbolic link; symbolic links inside folders are not followed"))
            default: record(path, .skipped("not a regular file (\(Self.describeType(status.st_mode)))"))
            }
        }
        return found
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

    /// For a dry run: the file's hash when a real run would import it (validated by the same
    /// decoders), or its outcome.
    private func classify(_ candidate: Candidate, known: [String: String]) -> Result<String, Skip> {
        do throws(MediaError) {
            _ = try MediaInspector.inspect(fileAt: candidate.url)
        } catch {
            return .failure(Skip(outcome: Self.outcome(of: .refused(error), url: candidate.url)))
        }
        do {
            let handle = try FileHandle(forReadingFrom: candidate.url)
            defer { try? handle.close() }
            var hasher = SHA256()
            while let chunk = try handle.read(upToCount: 1 << 20), !chunk.isEmpty {
                chunk.withUnsafeBytes { hasher.update($0) }
            }
            let hash = Hex.encode(hasher.finalize())
            if let existing = known[hash] { return .failure(Skip(outcome: .duplicate(of: existing))) }
            return .success(hash)
        } catch {
            return .failure(Skip(outcome: .skipped("cannot read the file: \(Self.describe(error))")))
        }
    }

    private static func outcome(of result: Result<String, Skip>) -> Outcome {
        if case .failure(let skip) = result { return skip.outcome }
        return .wouldImport
    }

    /// The outcome of a file the library did not make an asset of; reasons lose the file name
    /// that starts them, as the report names the path.
    private static func outcome(of result: AssetImportResult, url: URL) -> Outcome {
        func reason(_ text: String) -> String {
            let prefix = url.lastPathComponent + ": "
            return text.hasPrefix(prefix) ? String(text.dropFirst(prefix.count)) : text
        }
        switch result {
        case .created(let request): return .imported(localIdentifier: request.placeholderForCreatedAsset.localIdentifier)
        case .duplicate(let original): return .duplicate(of: original)
        case .notMedia(let text): return .notMedia(reason(text))
        case .skipped(let text): return .skipped(reason(text))
        case .failed(let error): return .failed(reason(describe(error)))
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
            // The files are copied and decoded before the change block, which then only records events.
            let staged = library.stageImport(fromFilesAt: block.map(\.url), options: options)
            results = try library.performChangesAndWait { changes in
                let imported = try changes.importAssets(staged)
                let created = imported.compactMap(\.placeholderForCreatedAsset)
                if let album, !created.isEmpty {
                    try album.changeRequest(in: changes).addAssets(created)
                }
                return zip(block, imported).map { candidate, result in Self.outcome(of: result, url: candidate.url) }
            }
        } catch {
            results = Array(repeating: .failed(Self.describe(error)), count: block.count)
        }
        startThumbnails(for: results.compactMap { if case .imported(let identifier) = $0 { identifier } else { nil } })
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

    // MARK: Thumbnails

    /// Queues the renditions of assets just committed; threads of low priority make them while
    /// the next blocks are read, validated and committed.
    private func startThumbnails(for assets: [String]) {
        guard !assets.isEmpty else { return }
        let manager = library.imageManager
        for (side, mode) in Self.thumbnailSizes {
            manager.startCachingImages(for: assets, targetSize: CGSize(width: side, height: side), contentMode: mode)
        }
    }

    /// Waits for the queued renditions, with a progress bar of its own on a terminal.
    private mutating func waitForThumbnails() {
        let manager = library.imageManager
        let started = Date()
        var bar: ProgressBar?
        if ProgressBar.isTerminal, !context.quiet, !context.json, !manager.cachingProgress.isFinished {
            bar = ProgressBar(totalCount: manager.cachingProgress.total, noun: "thumbnails")
        }
        manager.waitForCaching { progress in bar?.update(count: progress.completed + progress.failed, force: progress.isFinished) }
        bar?.finish()
        let progress = manager.cachingProgress
        thumbnails = progress.completed
        guard progress.total > 0 else { return }
        var line =
            "Made \(count(progress.completed, "thumbnail")) (256 and 1024 pixels) in \(formatDuration(Date().timeIntervalSince(started)))"
        line += progress.failed > 0 ? "; \(progress.failed) could not be made (see the warnings above)." : "."
        thumbnailReport = line
        // A file the import's check accepted whose decode fails here is damaged where the check
        // does not look: its importer hears of it, by the file's path.
        for failure in manager.cachingFailures {
            let path = importedPaths[failure.localIdentifier] ?? failure.localIdentifier
            let reason = Self.describe(failure.error)
            thumbnailFailures.append((path, reason))
            context.warn(
                "warning: \(path) was imported, but its thumbnails (\(failure.scales.joined(separator: ", "))) could not be made: "
                    + "\(reason); if the photo does not show, compare the file with its source and import it again")
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
        case .notMedia(let reason): context.say("skipped \(path): \(reason)")
        case .skipped(let reason): context.say("skipped \(path): \(reason)")
        case .failed: break
        }
    }

    private func report(elapsed: Double) {
        var imported: [JSON] = [], duplicates: [JSON] = [], notMedia: [JSON] = [], skipped: [JSON] = [], failed: [JSON] = []
        var files: [JSON] = []
        for (path, outcome) in outcomes {
            var entry: [(String, JSON)] = [("path", .string(path)), ("outcome", .string(outcome.name))]
            switch outcome {
            case .imported(let id):
                imported.append(.object([("path", .string(path)), ("localIdentifier", .string(id))]))
                entry.append(("localIdentifier", .string(id)))
            case .wouldImport: imported.append(.object([("path", .string(path)), ("localIdentifier", .null)]))
            case .duplicate(let original):
                duplicates.append(.object([("path", .string(path)), ("duplicateOf", .string(original))]))
                entry.append(("duplicateOf", .string(original)))
            case .notMedia(let reason):
                notMedia.append(.string(path))
                entry.append(("reason", .string(reason)))
            case .skipped(let reason):
                skipped.append(.object([("path", .string(path)), ("reason", .string(reason))]))
                entry.append(("reason", .string(reason)))
            case .failed(let reason):
                failed.append(.object([("path", .string(path)), ("error", .string(reason))]))
                entry.append(("reason", .string(reason)))
            }
            files.append(.object(entry))
        }
        if context.json {
            context.emit(
                .object([
                    ("dryRun", .bool(dryRun)), ("imported", .array(imported)), ("duplicates", .array(duplicates)),
                    ("notMedia", .array(notMedia)), ("failed", .array(failed)), ("skipped", .array(skipped)), ("files", .array(files)),
                    ("thumbnails", .int(Int64(thumbnails))),
                    (
                        "thumbnailFailures",
                        .array(thumbnailFailures.map { .object([("path", .string($0.path)), ("error", .string($0.reason))]) })
                    ),
                ]))
            return
        }
        let verb = dryRun ? "Would import" : "Imported"
        let album = albumTitle.map { " into album '\($0)'" } ?? ""
        var summary = "\(verb) \(imported.count) file\(imported.count == 1 ? "" : "s")\(album) in \(formatDuration(elapsed))"
        summary += "; skipped \(duplicates.count) duplicate\(duplicates.count == 1 ? "" : "s") and \(notMedia.count) non-media"
        if !skipped.isEmpty { summary += "; \(skipped.count) other path\(skipped.count == 1 ? "" : "s") skipped" }
        summary += "; \(failed.count) failed."
        if context.quiet {
            if !failed.isEmpty { context.warn(summary) }
        } else {
            print(summary)
            if let thumbnailReport { print(thumbnailReport) }
        }
    }

    // MARK: Helpers

    /// The system's words for the current `errno`.
    private static func systemError() -> String { String(cString: strerror(errno)) }

    /// Words for a file type that is not a regular file or folder.
    private static func describeType(_ mode: mode_t) -> String {
        switch mode & S_IFMT {
        case S_IFIFO: "a FIFO"
        case S_IFCHR: "a character device"
        case S_IFBLK: "a block device"
        case S_IFSOCK: "a socket"
        default: "an unknown kind of file"
        }
    }

    /// A name that is not UTF-8, its other bytes written as `\xNN`.
    private static func escaped(_ bytes: [UInt8]) -> String {
        bytes.map { $0 >= 0x20 && $0 < 0x7F && $0 != 0x5C ? String(UnicodeScalar($0)) : String(format: "\\x%02X", $0) }.joined()
    }

    /// The message of an error, without the type's decoration.
    static func describe(_ error: any Error) -> String {
        if let error = error as? PhotoLibraryError { return error.message }
        return "\(error)"
    }
}
