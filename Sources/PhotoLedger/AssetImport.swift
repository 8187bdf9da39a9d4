import Foundation
import LedgerCore
import PhotoMedia

/// Options of a batch import (``LibraryChanges/importAssets(fromFilesAt:options:)``).
public struct AssetImportOptions: Sendable {
    /// Move the files into the library instead of copying them (PhotoKit's `shouldMoveFile`):
    /// the source of each file that became an asset is removed after the change block commits;
    /// when the block fails, or for a file that failed or was a skipped duplicate, it stays.
    public var shouldMoveFile = false
    /// Create no asset for a file whose bytes are already the photo or video of an asset (one
    /// this block can see, including one in Recently Deleted, hidden, or created earlier in the
    /// block) and report it as ``AssetImportResult/duplicate(of:)``. Off by default: as in
    /// PhotoKit, the same bytes added twice make two assets (the bytes are stored once).
    public var skipsDuplicates = false
    /// How many files are read, hashed and written at a time (and at most how many flushes are
    /// in flight at once).
    public var concurrency = 8
    /// Whether each JPEG and WebP is decoded reduced to validate it, and its smallest renditions
    /// (256 pixels, aspect fit and aspect fill) made from that decode for the ``ImageManager``'s
    /// cache, once the change block commits. Off by default: a JPEG's validation then checks its
    /// structure without decoding all of its image data (several times faster, and refusing the
    /// same damaged files; see PhotoMedia's catalog), and its renditions are made afterwards, by
    /// ``ImageManager/startCachingImages(for:targetSize:contentMode:options:)`` as
    /// `photoledger import` does after each block's commit, which reports a file whose decode
    /// fails there (``ImageManager/cachingFailures``).
    public var makesThumbnails = false

    /// Import options; by default files are copied, duplicates become assets too, 8 at a time,
    /// and the validation makes no renditions.
    public init(shouldMoveFile: Bool = false, skipsDuplicates: Bool = false, concurrency: Int = 8, makesThumbnails: Bool = false) {
        self.shouldMoveFile = shouldMoveFile
        self.skipsDuplicates = skipsDuplicates
        self.concurrency = concurrency
        self.makesThumbnails = makesThumbnails
    }
}

/// What a batch import did with one file. Every file ends in exactly one of these, with a
/// reason for each that is not an asset; nothing of a file that is not an asset is stored.
public enum AssetImportResult {
    /// The file is a new asset: a photo or a video, as its bytes say.
    case created(AssetCreationRequest)
    /// With ``AssetImportOptions/skipsDuplicates``: the file's bytes are already the photo or
    /// video of the asset with this local identifier, and no asset was created.
    case duplicate(of: String)
    /// The file's bytes are no supported photo or video (an unknown format, an audio file, a
    /// raw camera image, an AVIF image sequence…): the reason, prefixed with the file's name,
    /// says what they look like.
    case notMedia(reason: String)
    /// The path was not read as media: it is not a regular file (a folder, a FIFO, a device,
    /// a socket) or the system refused to open it (permissions); the reason says which.
    case skipped(reason: String)
    /// The file should have become an asset and could not: a photo or video the decoder refuses
    /// (damaged, truncated, empty), a missing file (`.missingResource`), a full disk. The error
    /// names the file and says what to do.
    case failed(PhotoLibraryError)

    /// How a batch import ends for a file the media layer refused with `error`: not media,
    /// skipped, or failed, as the error's `MediaError.refusal` says.
    public static func refused(_ error: MediaError) -> AssetImportResult {
        switch error.refusal {
        case .notMedia: .notMedia(reason: error.description)
        case .notRegularFile, .unreadable: .skipped(reason: error.description)
        case .damaged, nil: .failed(PhotoLibrary.translate(error))
        }
    }

    /// The created asset's placeholder, or nil when no asset was created.
    public var placeholderForCreatedAsset: ObjectPlaceholder? {
        if case .created(let request) = self { return request.placeholderForCreatedAsset }
        return nil
    }
}

/// Files copied (or moved), hashed and validated into a library's resource store, ready to
/// become assets in a change block (``LibraryChanges/importAssets(_:)``). Staging takes no lock of
/// the library: fetches, syncs and other change blocks go on while files are copied and decoded,
/// and the change block that uses them only records events.
///
/// Staged bytes that no change block turns into assets (the block threw, or was never run) are
/// unreferenced, and ``PhotoLibrary/collectGarbage(gracePeriod:)`` removes them.
public struct StagedImport: Sendable {
    /// The files, in the order given.
    public let urls: [URL]
    /// The options they were staged with.
    public let options: AssetImportOptions
    let stored: [Result<ImportedResource, MediaError>]
}

extension PhotoLibrary {
    /// Copies (or moves), hashes and validates `urls` into the resource store, outside any change
    /// block, several files at a time; see ``StagedImport``.
    public func stageImport(fromFilesAt urls: [URL], options: AssetImportOptions = AssetImportOptions()) -> StagedImport {
        let stored = resources.importMedia(
            filesAt: urls, transfer: options.shouldMoveFile ? .move : .copy, concurrency: options.concurrency,
            renditions: options.makesThumbnails ? ImageManager.importScales : [])
        return StagedImport(urls: urls, options: options, stored: stored)
    }
}

extension LibraryChanges {
    /// Creates one asset from each file, a photo or a video as its bytes say, storing the files
    /// as one batch: much faster than one ``createAsset(fromImageAt:options:)`` per file, because
    /// the files are copied and hashed several at a time and their flushes to the disk are
    /// grouped (see `ResourceStore.importMedia(filesAt:transfer:concurrency:renditions:)`).
    ///
    /// Each file is validated as ``createAsset(fromImageAt:options:)`` validates it (decoded by
    /// libvips or FFmpeg), and a file that is not media, not a readable regular file, or that
    /// fails, is reported in its result without stopping the others; nothing of it is stored,
    /// and a FIFO or device is never waited on. To make the batch all or nothing, throw from the
    /// change block when a result is ``AssetImportResult/failed(_:)``.
    ///
    /// Every stored file and its name are on the disk before this returns, so the block's events
    /// never refer to bytes that are not: a crash before the commit leaves only unreferenced
    /// files, which ``PhotoLibrary/collectGarbage(gracePeriod:)`` removes. Identical bytes are
    /// stored once, within the batch and with what the library already holds.
    ///
    /// - Returns: One result per file, in the order of `urls`; the assets are created in that order.
    public func importAssets(fromFilesAt urls: [URL], options: AssetImportOptions = AssetImportOptions()) throws -> [AssetImportResult] {
        try checkValid("importAssets")
        return try importAssets(library.stageImport(fromFilesAt: urls, options: options))
    }

    /// Creates one asset from each file staged by ``PhotoLibrary/stageImport(fromFilesAt:options:)``:
    /// the same results as ``importAssets(fromFilesAt:options:)``, with the copying and decoding
    /// done before the change block began.
    public func importAssets(_ staged: StagedImport) throws -> [AssetImportResult] {
        try checkValid("importAssets")
        let (urls, stored, options) = (staged.urls, staged.stored, staged.options)
        var createdInBatch: [String: String] = [:]  // hash → local identifier, for add-only access
        var results: [AssetImportResult] = []
        results.reserveCapacity(urls.count)
        for (url, result) in zip(urls, stored) {
            let imported: ImportedResource
            switch result {
            case .failure(let error):
                results.append(.refused(error))
                continue
            case .success(let value):
                imported = value
            }
            let hash = imported.resource.hash
            if options.skipsDuplicates, let original = try createdInBatch[hash] ?? assetHolding(hash) {
                results.append(.duplicate(of: original))
                continue
            }
            let record = ResourceRecord(
                type: imported.info.mediaType == .video ? .video : .photo, sha256: Hex.decode(hash)!, size: imported.resource.size,
                uniformType: imported.info.format.uniformTypeIdentifier, filename: url.lastPathComponent)
            let request = try createAsset(primary: imported.info, resources: [record], isLivePhoto: false)
            createdInBatch[hash] = request.placeholderForCreatedAsset.localIdentifier
            if options.shouldMoveFile { afterCommit.append { try? FileManager.default.removeItem(at: url) } }
            if !imported.renditions.isEmpty {
                let (work, renditions) = (library.renditions, imported.renditions)
                afterCommit.append {
                    for rendition in renditions { _ = try? work.cache.store(rendition, source: hash) }
                    work.syncedRenditionCached.signal()
                }
            }
            results.append(.created(request))
        }
        return results
    }

    /// The local identifier of the oldest asset this block can see whose photo or video has the
    /// bytes named `hash`, or nil.
    private func assetHolding(_ hash: String) throws -> String? {
        guard access != .addOnly else { return nil }
        let id = try database.firstRow(
            """
            SELECT r.asset_id FROM asset_resources r JOIN assets a ON a.asset_id = r.asset_id
            WHERE r.sha256 = ? AND r.type IN \(ResourceType.primarySQL) AND a.created = 1 AND a.purged = 0
                AND (? = 0 OR a.asset_id IN (SELECT asset_id FROM limited_selection))
            ORDER BY a.created_hlc, a.asset_id LIMIT 1
            """, [Hex.decode(hash)!, access == .limited ? 1 : 0]
        ) { UUID(bytes: $0.blob(0))! }
        return id.map { LocalIdentifier(uuid: $0, kind: .asset).description }
    }
}
