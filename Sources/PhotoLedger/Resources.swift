import Foundation
import LedgerCore
import PhotoMedia
import Synchronization

/// Options of an asset creation from a file or data.
public struct AssetCreationOptions: Sendable {
    /// Move the file into the library instead of copying it (PhotoKit's `shouldMoveFile`): the
    /// source is removed only after the change block commits, and stays when it fails.
    public var shouldMoveFile = false
    /// The file name recorded for the resource (default: the source file's name, or a generated one).
    public var originalFilename: String?

    /// Default options.
    public init(shouldMoveFile: Bool = false, originalFilename: String? = nil) {
        self.shouldMoveFile = shouldMoveFile
        self.originalFilename = originalFilename
    }
}

/// Properties of an asset being created that its media cannot say, or that override what its
/// metadata says (``LibraryChanges/createAsset(withResources:properties:)``).
public struct AssetCreationProperties: Sendable, Hashable {
    /// Media subtypes added to the ones read from the media (for example
    /// ``MediaSubtypes/photoScreenshot``, ``MediaSubtypes/photoPanorama`` or
    /// ``MediaSubtypes/photoSelfPortrait``).
    public var mediaSubtypes: MediaSubtypes
    /// The burst the photo belongs to (PhotoKit's `burstIdentifier`): photos created with the same
    /// identifier are one burst. Nil keeps the one its metadata names, if any.
    public var burstIdentifier: String?
    /// How the photo was selected in its burst (needs a burst identifier).
    public var burstSelectionTypes: BurstSelectionTypes

    /// Properties that add nothing to what the media says.
    public init(mediaSubtypes: MediaSubtypes = [], burstIdentifier: String? = nil, burstSelectionTypes: BurstSelectionTypes = []) {
        self.mediaSubtypes = mediaSubtypes
        self.burstIdentifier = burstIdentifier
        self.burstSelectionTypes = burstSelectionTypes
    }
}

/// One resource of an asset being created, as PhotoKit's `addResource(with:fileURL:options:)`.
public struct ResourceInput: Sendable {
    /// Where the bytes come from.
    public enum Source: Sendable {
        /// A file.
        case file(URL)
        /// Bytes in memory.
        case data(Data)
    }

    /// The role of the resource.
    public var type: ResourceType
    /// The bytes.
    public var source: Source
    /// Options (move, file name).
    public var options: AssetCreationOptions

    /// Describes a resource to add.
    public init(type: ResourceType, source: Source, options: AssetCreationOptions = AssetCreationOptions()) {
        self.type = type
        self.source = source
        self.options = options
    }
}

/// Which rendition of an asset a data request returns (PhotoKit's raw values).
public enum ImageVersion: Int, Sendable {
    /// The edited rendition when the asset has an edit, the original otherwise.
    case current = 0
    /// The original, without adjustments.
    case unadjusted = 1
    /// The highest-fidelity original.
    case original = 2
}

/// The output of a content edit: the rendered bytes and the adjustment data that made them.
public struct ContentEditingOutput: Sendable {
    /// The rendered photo or video.
    public var renderedContent: ResourceInput.Source
    /// Identifies the editing app's format (reverse-DNS).
    public var adjustmentFormatIdentifier: String
    /// The version of that format.
    public var adjustmentFormatVersion: String
    /// The editing app's description of the edit.
    public var adjustmentData: Data

    /// Describes an edit.
    public init(
        renderedContent: ResourceInput.Source, adjustmentFormatIdentifier: String, adjustmentFormatVersion: String, adjustmentData: Data
    ) {
        self.renderedContent = renderedContent
        self.adjustmentFormatIdentifier = adjustmentFormatIdentifier
        self.adjustmentFormatVersion = adjustmentFormatVersion
        self.adjustmentData = adjustmentData
    }
}

extension ResourceType {
    /// Types whose bytes must be a photo.
    var expectsImage: Bool { [.photo, .alternatePhoto, .fullSizePhoto].contains(self) }
    /// Types whose bytes must be a video.
    var expectsVideo: Bool { [.video, .pairedVideo, .fullSizeVideo].contains(self) }
}

extension PhotoLibrary {
    /// The directory of the resource store beside a library file.
    static func resourceDirectory(for url: URL) -> URL {
        let base = url.pathExtension.isEmpty ? url : url.deletingPathExtension()
        return base.appendingPathExtension("resources")
    }

    /// Turns a media-layer failure into the library's error.
    static func translate(_ error: MediaError) -> PhotoLibraryError {
        switch error.kind {
        case .invalidResource: return PhotoLibraryError(.invalidResource, "\(error); nothing was saved")
        case .missingResource: return PhotoLibraryError(.missingResource, "\(error)")
        case .corruptedResource: return PhotoLibraryError(.invalidResource, "\(error)")
        case .fileSystem:
            if error.reason.contains("No space") { return PhotoLibraryError(.notEnoughSpace, "\(error)") }
            return PhotoLibraryError(.internalError, "\(error)")
        }
    }

    // MARK: Reading resources

    /// The hash of the resource a data request for `version` returns.
    func resourceHash(for asset: any ObjectReference, version: ImageVersion) throws -> (hash: String, uniformType: String) {
        let id = try Self.parse(asset, kind: .asset)
        return try read { db, access in
            guard
                let row = try db.firstRow(
                    """
                    SELECT a.content_sha256, (SELECT uniform_type FROM referenced_resources r WHERE r.sha256 = a.content_sha256),
                        (SELECT sha256 FROM asset_resources WHERE asset_id = a.asset_id AND type IN \(ResourceType.primarySQL) ORDER BY resource_index LIMIT 1),
                        (SELECT uniform_type FROM asset_resources WHERE asset_id = a.asset_id AND type IN \(ResourceType.primarySQL) ORDER BY resource_index LIMIT 1),
                        a.asset_id IN (SELECT asset_id FROM limited_selection)
                    FROM assets a WHERE a.asset_id = ? AND a.created = 1 AND a.purged = 0
                    """, [id.bytes],
                    { row in
                        (
                            row.isNull(0) ? nil : row.blob(0), row.optionalText(1), row.isNull(2) ? nil : row.blob(2), row.optionalText(3),
                            row.int64(4) == 1
                        )
                    }),
                access != .limited || row.4
            else { throw PhotoLibraryError.notFound(asset.localIdentifier, kind: "asset") }
            if version == .current, let edited = row.0 { return (Hex.encode(edited), row.1 ?? "public.data") }
            guard let original = row.2 else {
                throw PhotoLibraryError(.requestNotSupportedForAsset, "asset \(asset.localIdentifier) has no photo or video resource")
            }
            return (Hex.encode(original), row.3 ?? "public.data")
        }
    }

    /// The bytes of an asset's photo or video: exactly the stored bytes, checked against their
    /// SHA-256 (a damaged file is an error, never wrong bytes).
    ///
    /// - Parameters:
    ///   - asset: The asset (an ``Asset``, a placeholder or a local identifier).
    ///   - version: `.current` for the edited rendition when there is one, `.unadjusted` or
    ///     `.original` for the bytes the asset was created with.
    public func requestImageData(for asset: any ObjectReference, version: ImageVersion = .current) throws -> Data {
        let (hash, _) = try resourceHash(for: asset, version: version)
        return try requestData(hash: hash)
    }

    /// The bytes of one resource of an asset.
    public func requestData(for resource: AssetResource) throws -> Data {
        try requestData(hash: resource.sha256)
    }

    /// The file that holds one resource's bytes on this device, to read in place (a web view
    /// sends byte ranges of a video from it): fetched first through the sync engine when it is
    /// not here. Read it, never write it. Its bytes are not checked against their SHA-256 here;
    /// ``requestData(for:)`` checks them.
    public func fileURL(for resource: AssetResource) throws -> URL {
        try ensureResource(resource.sha256)
        guard let url = resources.url(for: resource.sha256) else {
            throw PhotoLibraryError(.invalidResource, "resource \(resource.sha256) has no well-formed name; verify the library")
        }
        return url
    }

    func requestData(hash: String) throws -> Data {
        try ensureResource(hash)
        do { return try resources.read(hash) } catch { throw Self.translate(error) }
    }

    /// Writes an asset's photo or video to a new file, streaming it, with a progress handler
    /// called with (bytes written, total bytes). A damaged resource fails and leaves no file.
    public func writeImageData(
        for asset: any ObjectReference, version: ImageVersion = .current, to destination: URL,
        progress: ((Int64, Int64) -> Void)? = nil
    ) throws {
        let (hash, _) = try resourceHash(for: asset, version: version)
        try ensureResource(hash)
        do { try resources.write(hash, to: destination, progress: progress) } catch { throw Self.translate(error) }
    }

    /// Makes sure a resource is on disk, fetching it through the library's fetcher (the sync
    /// engine's blob download) when it is not.
    func ensureResource(_ hash: String) throws {
        guard !resources.contains(hash) else { return }
        guard let fetcher = resourceFetcher.value else {
            throw PhotoLibraryError(.missingResource, "resource \(hash) is not on this device yet; sync the library to download it")
        }
        // An encrypted library's resource travels as the blob of its encryption.
        try fetcher(encryption.snapshot.enabled ? try encryptedBlobName(forResource: hash) ?? hash : hash)
    }

    /// Removes stored resources that no event refers to (left by a crash between storing a
    /// resource and committing its change block), recorded renditions of sources no asset shows
    /// any more (an edit replaced or reverted, a purged asset), abandoned temporary files, and
    /// the image manager's renditions of resources no asset shows any more (see ``ImageManager``).
    @discardableResult
    public func collectGarbage(gracePeriod: TimeInterval = 3600) throws -> [String] {
        do {
            return try storage.write { db in
                // Recorded renditions count while an asset shows their source (SyncedRenditions.swift).
                let referenced = Set(try db.rows("SELECT sha256 FROM referenced_resources") { Hex.encode($0.blob(0)) })
                    .union(try Self.keptRenditions(db))
                let now = Date(timeIntervalSince1970: Double(options.clock()) / 1000)
                try renditions.collectGarbage(db, gracePeriod: gracePeriod, now: now)
                return try resources.collectGarbage(referenced: referenced, gracePeriod: gracePeriod, now: now).removedResources
            }
        } catch let error as MediaError {
            throw Self.translate(error)
        } catch {
            throw Self.translate(error, doing: "collect garbage")
        }
    }
}

extension LibraryChanges {
    /// Creates a photo asset from image data (JPEG, PNG, GIF, HEIC or WebP).
    public func createAsset(from data: Data, options: AssetCreationOptions = AssetCreationOptions()) throws -> AssetCreationRequest {
        try createAsset(withResources: [ResourceInput(type: .photo, source: .data(data), options: options)])
    }

    /// Creates a photo asset from an image file. The bytes are stored exactly as they are.
    public func createAsset(fromImageAt url: URL, options: AssetCreationOptions = AssetCreationOptions()) throws -> AssetCreationRequest {
        try createAsset(withResources: [ResourceInput(type: .photo, source: .file(url), options: options)])
    }

    /// Creates a video asset from a movie file (MP4 or QuickTime).
    public func createAsset(fromVideoAt url: URL, options: AssetCreationOptions = AssetCreationOptions()) throws -> AssetCreationRequest {
        try createAsset(withResources: [ResourceInput(type: .video, source: .file(url), options: options)])
    }

    /// Creates an asset from its resources (PhotoKit's creation request with `addResource`):
    /// one photo or video, and optionally a paired video (Live Photo), alternate photo or
    /// adjustment data. Resources of types this version does not know are kept as opaque data.
    ///
    /// Every resource is validated and stored (durably) before the asset's event is recorded;
    /// when validation fails nothing is recorded and no moved source is removed.
    ///
    /// - Parameters:
    ///   - inputs: The resources: one photo or video, and the others that go with it.
    ///   - properties: Subtypes and a burst the media cannot say (a burst photo made by another
    ///     app, a screenshot without metadata).
    /// - Throws: ``PhotoLibraryError`` `.invalidResource` when the properties are invalid (an
    ///   empty or over-long burst identifier, selection types without a burst), before anything
    ///   is stored.
    public func createAsset(withResources inputs: [ResourceInput], properties: AssetCreationProperties = AssetCreationProperties()) throws
        -> AssetCreationRequest
    {
        try checkValid("createAsset")
        try Self.validate(properties)
        guard let primary = inputs.first(where: { $0.type == .photo || $0.type == .video }) else {
            throw PhotoLibraryError(.invalidResource, "an asset needs a photo or a video resource; add one")
        }
        var records: [ResourceRecord] = []
        var primaryInfo: MediaInfo?
        var moved: [URL] = []
        for input in inputs {
            let (record, info) = try store(input)
            records.append(record)
            if input.type == primary.type && primaryInfo == nil { primaryInfo = info }
            if input.options.shouldMoveFile, case .file(let url) = input.source { moved.append(url) }
        }
        guard let info = primaryInfo else { throw PhotoLibraryError(.invalidResource, "the primary resource could not be read") }
        var creation = ChangeEvent.AssetCreation(
            primary: info, resources: records, isLivePhoto: inputs.contains { $0.type == .pairedVideo })
        creation.mediaSubtypes.formUnion(properties.mediaSubtypes)
        if let burst = properties.burstIdentifier { creation.burstIdentifier = burst }
        creation.burstSelectionTypes.formUnion(properties.burstSelectionTypes)
        let request = try createAsset(creation)
        for url in moved { afterCommit.append { try? FileManager.default.removeItem(at: url) } }
        return request
    }

    /// Records a new asset whose resources are stored: its properties come from what its photo
    /// or video holds.
    func createAsset(primary info: MediaInfo, resources records: [ResourceRecord], isLivePhoto: Bool) throws -> AssetCreationRequest {
        try createAsset(ChangeEvent.AssetCreation(primary: info, resources: records, isLivePhoto: isLivePhoto))
    }

    /// Refuses creation properties no event may carry.
    static func validate(_ properties: AssetCreationProperties) throws {
        if let burst = properties.burstIdentifier {
            guard !burst.isEmpty, burst.utf8.count <= PayloadLimits.maximumBurstIdentifierLength else {
                throw PhotoLibraryError(
                    .invalidResource,
                    "a burst identifier must have 1 to \(PayloadLimits.maximumBurstIdentifierLength) bytes, not \(burst.utf8.count); "
                        + "use the burst's UUID string")
            }
        } else if !properties.burstSelectionTypes.isEmpty {
            throw PhotoLibraryError(.invalidResource, "burst selection types need a burst identifier; set burstIdentifier too")
        }
        guard properties.burstSelectionTypes.isSubset(of: [.autoPick, .userPick]),
            (0...Int(Int32.max)).contains(properties.mediaSubtypes.rawValue)
        else {
            throw PhotoLibraryError(
                .invalidResource,
                "unknown burst selection types \(properties.burstSelectionTypes.rawValue) or media subtypes "
                    + "\(properties.mediaSubtypes.rawValue); use the named values")
        }
    }

    /// Validates and stores one resource; returns its record and, for media, what it holds.
    func store(_ input: ResourceInput) throws -> (ResourceRecord, MediaInfo?) {
        let store = library.resources
        let name: String
        switch input.source {
        case .file(let url): name = input.options.originalFilename ?? url.lastPathComponent
        case .data: name = input.options.originalFilename ?? "resource"
        }
        do {
            let transfer: FileTransfer = input.options.shouldMoveFile ? .move : .copy
            let validates = input.type.expectsImage || input.type.expectsVideo
            if validates { try checkKind(of: input, name: name) }
            let stored: StoredResource
            var info: MediaInfo?
            switch (input.source, validates) {
            case (.file(let url), true):
                let imported = try store.importMedia(fileAt: url, transfer: transfer)
                (stored, info) = (imported.resource, imported.info)
            case (.data(let data), true):
                let imported = try store.importMedia(data, name: name)
                (stored, info) = (imported.resource, imported.info)
            case (.file(let url), false):
                stored = try store.ingest(fileAt: url, transfer: transfer)
            case (.data(let data), false):
                stored = try store.ingest(data, name: name)
            }
            let uniformType = info?.format.uniformTypeIdentifier ?? "public.data"
            let filename =
                input.options.originalFilename
                ?? (name == "resource" ? "resource.\(info?.format.preferredFilenameExtension ?? "bin")" : name)
            return (
                ResourceRecord(
                    type: input.type, sha256: Hex.decode(stored.hash)!, size: stored.size, uniformType: uniformType, filename: filename),
                info
            )
        } catch let error as MediaError {
            throw PhotoLibrary.translate(error)
        }
    }
}

extension LibraryChanges {
    /// Refuses a video given as a photo (or the reverse) before anything is stored.
    func checkKind(of input: ResourceInput, name: String) throws {
        let header: [UInt8]
        switch input.source {
        case .data(let data): header = Array(data.prefix(64))
        case .file(let url):
            guard let handle = try? FileHandle(forReadingFrom: url) else { return }
            defer { try? handle.close() }
            header = Array((try? handle.read(upToCount: 64)) ?? Data())
        }
        guard let format = MediaFormat.detect(header: header) else { return }
        if input.type.expectsImage && format.mediaType != .image {
            throw PhotoLibraryError(.invalidResource, "\(name): is a video, not a photo; add it as a video resource")
        }
        if input.type.expectsVideo && format.mediaType != .video {
            throw PhotoLibraryError(.invalidResource, "\(name): is a photo, not a video; add it as a photo resource")
        }
    }
}

extension AssetChangeRequest {
    /// Records a content edit: the rendered bytes become the asset's current rendition, the
    /// original stays untouched (`.unadjusted`).
    public func setContentEditingOutput(_ output: ContentEditingOutput) throws {
        try changes.checkValid("an asset change request")
        let isVideo = try changes.database.firstRow("SELECT media_type FROM assets WHERE asset_id = ?", [id.bytes]) { $0.int64(0) } == 2
        let rendered = try changes.store(ResourceInput(type: isVideo ? .fullSizeVideo : .fullSizePhoto, source: output.renderedContent)).0
        let adjustment = AdjustmentData(
            formatIdentifier: output.adjustmentFormatIdentifier, formatVersion: output.adjustmentFormatVersion, data: output.adjustmentData)
        let adjustmentRecord = try changes.store(
            ResourceInput(
                type: .adjustmentData, source: .data(Data(adjustment.encoded)),
                options: AssetCreationOptions(originalFilename: "Adjustments.data"))
        ).0
        try changes.record(
            .assetContentEdited(
                .init(rendered: rendered, adjustment: adjustmentRecord, adjustmentFormat: output.adjustmentFormatIdentifier)), object: id)
    }

    /// Discards the content edit: the current rendition is the original again.
    public func revertAssetContentToOriginal() throws {
        try changes.checkValid("an asset change request")
        try changes.record(.assetContentEdited(.init(rendered: nil, adjustment: nil, adjustmentFormat: nil)), object: id)
    }
}

extension ChangeEvent.AssetCreation {
    /// The creation of an asset whose properties come from what its primary photo or video holds.
    init(primary info: MediaInfo, resources: [ResourceRecord], isLivePhoto: Bool) {
        var subtypes: MediaSubtypes = []
        if info.isAnimated { subtypes.insert(.photoAnimation) }
        if isLivePhoto { subtypes.insert(.photoLive) }
        if info.capture.isScreenshot { subtypes.insert(.photoScreenshot) }
        if info.capture.isSelfPortrait { subtypes.insert(.photoSelfPortrait) }
        if info.capture.isPanorama { subtypes.insert(.photoPanorama) }
        self.init(
            mediaType: info.mediaType == .video ? .video : .image, mediaSubtypes: subtypes, pixelWidth: info.pixelWidth,
            pixelHeight: info.pixelHeight, duration: info.duration ?? 0, creationDate: info.creationDate, location: info.location,
            isFavorite: false, isHidden: false, resources: resources, burstIdentifier: info.capture.burstIdentifier,
            burstSelectionTypes: info.capture.isBurstPick ? [.autoPick] : [])
    }
}
