import Foundation
import LedgerCore

/// An editing app's description of an edit (PhotoKit's `PHAdjustmentData`): enough for the app
/// that made it to make the edit again from the original, or to change it.
public struct AdjustmentData: Sendable, Hashable {
    /// Identifies the app's format (reverse-DNS, such as `com.example.filters`).
    public var formatIdentifier: String
    /// The version of that format.
    public var formatVersion: String
    /// The edit, in that format.
    public var data: Data

    /// Describes an edit.
    public init(formatIdentifier: String, formatVersion: String, data: Data) {
        self.formatIdentifier = formatIdentifier
        self.formatVersion = formatVersion
        self.data = data
    }

    /// The bytes of the adjustment-data resource: the identifier, the version, the data.
    var encoded: [UInt8] {
        var writer = ByteWriter()
        writer.write(string: formatIdentifier)
        writer.write(string: formatVersion)
        writer.write(bytes: Array(data))
        return writer.bytes
    }

    /// Reads an adjustment-data resource; nil when its bytes are not one (a damaged file, or a
    /// format this version does not know): the edit is then treated as one no app can handle.
    init?(decoding bytes: [UInt8]) {
        var reader = ByteReader(bytes)
        guard let identifier = try? reader.readString(), let version = try? reader.readString(), let data = try? reader.readBytes(),
            reader.isAtEnd
        else { return nil }
        self.init(formatIdentifier: identifier, formatVersion: version, data: Data(data))
    }
}

/// Options of a content-editing input request (PhotoKit's `PHContentEditingInputRequestOptions`).
public struct ContentEditingInputRequestOptions: Sendable {
    /// Asked whether the editing app can handle the asset's current adjustment data. When it
    /// answers true, the input holds the original photo or video and that adjustment data (the
    /// app makes the edit again, or changes it); otherwise the input holds the current rendition
    /// and no adjustment data (the app edits on top of it). Nil answers false.
    public var canHandleAdjustmentData: (@Sendable (AdjustmentData) -> Bool)?

    /// Default options.
    public init(canHandleAdjustmentData: (@Sendable (AdjustmentData) -> Bool)? = nil) {
        self.canHandleAdjustmentData = canHandleAdjustmentData
    }
}

/// What an editing app starts an edit from (PhotoKit's `PHContentEditingInput`).
public struct ContentEditingInput: Sendable {
    /// The asset's identifier.
    public let localIdentifier: String
    /// The kind of media.
    public let mediaType: AssetMediaType
    /// The asset's media subtypes.
    public let mediaSubtypes: MediaSubtypes
    /// When the photo or video was taken.
    public let creationDate: Date?
    /// Where the photo or video was taken.
    public let location: Location?
    /// The uniform type identifier of ``fullSizeImageURL``'s file.
    public let uniformTypeIdentifier: String
    /// The photo or video to edit: the original when the app handles ``adjustmentData``, the
    /// current rendition otherwise. The file is the library's own copy: read it, never change it.
    public let fullSizeImageURL: URL
    /// The adjustment data of the current edit when the app said it can handle it, else nil.
    public let adjustmentData: AdjustmentData?
    /// The edit this input starts from: `.unadjusted` when the file is the original, `.current`
    /// when it is the current rendition.
    public let baseVersion: ImageVersion
}

extension ContentEditingOutput {
    /// An output for an edit made from `input`, with the app's description of it and the
    /// rendered photo or video (PhotoKit's `PHContentEditingOutput(contentEditingInput:)`).
    public init(contentEditingInput input: ContentEditingInput, adjustmentData: AdjustmentData, renderedContent: ResourceInput.Source) {
        _ = input
        self.init(
            renderedContent: renderedContent, adjustmentFormatIdentifier: adjustmentData.formatIdentifier,
            adjustmentFormatVersion: adjustmentData.formatVersion, adjustmentData: adjustmentData.data)
    }
}

extension PhotoLibrary {
    /// The asset's current adjustment data, or nil when it has no edit (or its adjustment data
    /// cannot be read).
    public func adjustmentData(for asset: any ObjectReference) throws -> AdjustmentData? {
        guard let hash = try currentEdit(of: asset).adjustment else { return nil }
        return AdjustmentData(decoding: Array(try requestData(hash: hash)))
    }

    /// What an editing app starts an edit of `asset` from (PhotoKit's
    /// `requestContentEditingInput(with:completionHandler:)`): the original and the adjustment
    /// data when `options.canHandleAdjustmentData` accepts that data, otherwise the current
    /// rendition. Resources not on this device yet are downloaded through sync first.
    ///
    /// - Throws: ``PhotoLibraryError`` `.identifierNotFound` for an unknown asset,
    ///   `.missingResource` when the file is not on this device and cannot be fetched.
    public func requestContentEditingInput(
        for asset: any ObjectReference, options: ContentEditingInputRequestOptions = ContentEditingInputRequestOptions()
    ) throws -> ContentEditingInput {
        let edit = try currentEdit(of: asset)
        var adjustment: AdjustmentData?
        if let hash = edit.adjustment, let handles = options.canHandleAdjustmentData,
            let data = AdjustmentData(decoding: Array(try requestData(hash: hash))), handles(data)
        {
            adjustment = data
        }
        // An app that handles the adjustment data starts from the original; any other app from
        // what the asset shows now.
        let version: ImageVersion = adjustment != nil || edit.adjustment == nil && edit.rendered == nil ? .unadjusted : .current
        let (hash, uniformType) = try resourceHash(for: asset, version: version)
        try ensureResource(hash)
        guard let file = resources.url(for: hash) else {
            throw PhotoLibraryError(
                .missingResource, "resource \(hash) of asset \(asset.localIdentifier) is not on this device; sync the library")
        }
        let snapshot = edit.asset
        return ContentEditingInput(
            localIdentifier: snapshot.localIdentifier, mediaType: snapshot.mediaType, mediaSubtypes: snapshot.mediaSubtypes,
            creationDate: snapshot.creationDate, location: snapshot.location, uniformTypeIdentifier: uniformType, fullSizeImageURL: file,
            adjustmentData: adjustment, baseVersion: version == .unadjusted ? .unadjusted : .current)
    }

    /// The asset and the hashes of its current rendered content and adjustment data.
    private func currentEdit(of asset: any ObjectReference) throws -> (asset: Asset, rendered: String?, adjustment: String?) {
        let id = try Self.parse(asset, kind: .asset)
        return try read { db, access in
            guard
                let row = try db.firstRow(
                    """
                    SELECT a.content_sha256, a.adjustment_sha256, a.asset_id IN (SELECT asset_id FROM limited_selection)
                    FROM assets a WHERE a.asset_id = ? AND a.created = 1 AND a.purged = 0
                    """, [id.bytes],
                    { ($0.isNull(0) ? nil : Hex.encode($0.blob(0)), $0.isNull(1) ? nil : Hex.encode($0.blob(1)), $0.int64(2) == 1) }),
                access != .limited || row.2, let snapshot = try Self.assets(withIDs: [id], db: db).first
            else { throw PhotoLibraryError.notFound(asset.localIdentifier, kind: "asset") }
            return (snapshot, row.0, row.1)
        }
    }
}
