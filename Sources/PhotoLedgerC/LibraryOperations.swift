import Foundation
import PhotoLedger
import PhotoLedgerJSON
import PhotoLedgerSync
import Synchronization

/// What the C calls do, in Swift terms: each a few calls of the public API of PhotoLedger and
/// PhotoLedgerSync.
extension LibraryHandle {
    // MARK: Saving

    /// Saves the photo or video at `path` as a new asset and puts it first in the album titled
    /// `albumTitle` (found, or created when no album has the title), in one change block; returns
    /// the asset's local identifier. With `moveFile` the source is removed after the commit; on
    /// failure it is kept.
    func saveToAlbum(fileAt path: String, albumTitle: String?, moveFile: Bool) throws -> String {
        // Copying, hashing and decoding happen before the change block, which only records events.
        let staged = library.stageImport(fromFilesAt: [URL(fileURLWithPath: path)], options: AssetImportOptions(shouldMoveFile: moveFile))
        return try library.performChangesAndWait { changes in
            let outcome = try changes.importAssets(staged)[0]
            guard case .created(let request) = outcome else { throw Self.failure(of: outcome, path: path) }
            let placeholder = request.placeholderForCreatedAsset
            if let albumTitle {
                let album = try changes.album(titled: albumTitle) ?? changes.createAlbum(title: albumTitle)
                try album.insertAssets([placeholder], at: IndexSet(integer: 0))
            }
            return placeholder.localIdentifier
        }
    }

    /// The error of a file that did not become an asset.
    private static func failure(of outcome: AssetImportResult, path: String) -> PhotoLibraryError {
        switch outcome {
        case .failed(let error): error
        case .notMedia(let reason), .skipped(let reason):
            PhotoLibraryError(.invalidResource, "\(reason); nothing was saved")
        case .created, .duplicate:
            PhotoLibraryError(.internalError, "\(path) was not saved as a new asset; nothing was saved")
        }
    }

    // MARK: Albums and assets

    /// Creates an album; returns its local identifier.
    func createAlbum(title: String) throws -> String {
        try library.performChangesAndWait { try $0.createAlbum(title: title).localIdentifier }
    }

    /// Runs `change` on the album `album` in a change block.
    func changeAlbum(_ album: String, _ change: @escaping (AlbumChangeRequest) throws -> Void) throws {
        try library.performChangesAndWait { try change(try $0.albumChangeRequest(for: album)) }
    }

    /// Deletes an album.
    func deleteAlbum(_ album: String) throws {
        try library.performChangesAndWait { try $0.deleteAlbums([album]) }
    }

    /// Runs `change` in a change block.
    func change(_ change: (LibraryChanges) throws -> Void) throws {
        try library.performChangesAndWait(change)
    }

    /// Writes an asset's photo or video to a new file.
    func export(_ asset: String, version: ImageVersion, to destination: String) throws {
        let url = URL(fileURLWithPath: destination)
        if FileManager.default.fileExists(atPath: url.path) {
            throw InterfaceError.invalidArgument("\(url.path) already exists; choose another file name or remove it first")
        }
        try library.writeImageData(for: asset, version: version, to: url)
    }

    /// Writes the image manager's image of `asset` for a box of `size` pixels to a new file at
    /// `destination` (a JPEG, or a PNG for a picture with transparent pixels); returns the
    /// `photoledger thumbnail --json` description of it. Bytes not on this device are downloaded
    /// from the stored remote, when there is one.
    func thumbnail(_ asset: String, size: Int, contentMode: ImageContentMode, to destination: String) throws -> String {
        let url = URL(fileURLWithPath: destination)
        if FileManager.default.fileExists(atPath: url.path) {
            throw InterfaceError.invalidArgument("\(url.path) already exists; choose another file name or remove it first")
        }
        // With a remote, bytes not on this device are downloaded on demand while the engine lives.
        let engine = try SyncRemote.saved(in: library).map { SyncEngine(library: library, remote: $0) }
        let options = ImageRequestOptions(version: .current, deliveryMode: .highQualityFormat, isNetworkAccessAllowed: true)
        let manager = library.imageManager
        let image = try waitFor {
            try await manager.requestImage(
                for: asset, targetSize: CGSize(width: size, height: size), contentMode: contentMode, options: options)
        }
        withExtendedLifetime(engine) {}
        do {
            try image.data.write(to: url, options: .withoutOverwriting)
        } catch {
            throw PhotoLibraryError(
                .internalError, "could not write \(url.path): \(error.localizedDescription); check the folder exists and is writable")
        }
        return ThumbnailJSON.json(asset: asset, file: url.path, image: image).serialized()
    }

    // MARK: Listings

    /// `photoledger assets --json`, of one album or of the library.
    func assetsJSON(album: String?, favoritesOnly: Bool, deletedOnly: Bool) throws -> String {
        let collection = try album.map { identifier in
            guard let collection = try library.fetchAssetCollections(withLocalIdentifiers: [identifier]).allObjects.first else {
                throw PhotoLibraryError(
                    .identifierNotFound,
                    "no album with identifier \(identifier) in this library; list them with photoledger_fetch_albums_json")
            }
            return collection
        }
        let assets = try Listing.assets(in: library, album: collection, favoritesOnly: favoritesOnly, deletedOnly: deletedOnly)
        return try Listing.json(assets, in: library).serialized()
    }

    /// `photoledger albums --json`.
    func albumsJSON() throws -> String {
        Listing.json(try Listing.albums(in: library)).serialized()
    }

    /// `photoledger history --json`, of one object or of the library, of one device or all.
    func historyJSON(object: String?, device: String?) throws -> String {
        AuditTrail.json(try AuditTrail.entries(in: library, object: object, device: device)).serialized()
    }

    /// `photoledger status --json`.
    func statusJSON() throws -> String {
        try LibraryStatus(of: library, path: path).json.serialized()
    }

    // MARK: Sync

    /// Stores the remote the library syncs with.
    func setRemote(libraryURL: String, token: String) throws {
        try SyncRemote(libraryURL: libraryURL, token: token).save(in: library)
    }

    /// Syncs with the stored remote; returns the `photoledger sync --json` report.
    func sync() throws -> String {
        let engine = try SyncEngine(library: library)
        return SyncJSON.json(try waitFor { try await engine.sync() }).serialized()
    }
}

/// Runs `operation` as a task and blocks the calling thread (a C caller's, never one of Swift's
/// cooperative pool) until it ends.
func waitFor<T: Sendable>(_ operation: @escaping @Sendable () async throws -> T) throws -> T {
    let outcome = Outcome<T>()
    Task.detached {
        do {
            outcome.finish(.success(try await operation()))
        } catch {
            outcome.finish(.failure(error))
        }
    }
    return try outcome.wait()
}

/// The result of a task, handed to the thread that waits for it.
private final class Outcome<T: Sendable>: Sendable {
    private let result = Mutex<Result<T, any Error>?>(nil)
    private let done = DispatchSemaphore(value: 0)

    func finish(_ value: Result<T, any Error>) {
        result.withLock { $0 = value }
        done.signal()
    }

    func wait() throws -> T {
        done.wait()
        return try result.withLock { $0! }.get()
    }
}
