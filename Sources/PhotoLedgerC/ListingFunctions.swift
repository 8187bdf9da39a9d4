import CPhotoLedger
import PhotoLedger

// The functions of photoledger.h that list the library as JSON and sync it. Each is documented in
// the header; the Swift names are not part of the interface.

/// `photoledger_fetch_assets_json`.
@_cdecl("photoledger_fetch_assets_json")
public func fetchAssetsJSON(
    _ handle: OpaquePointer?, _ album: UnsafePointer<CChar>?, _ flags: UInt32, _ json: OutString?, _ message: OutString?
) -> photoledger_status {
    perform(message: message, clearing: [json]) {
        let handle = try library(handle)
        let (favorites, deleted) = (UInt32(PHOTOLEDGER_ASSETS_FAVORITES), UInt32(PHOTOLEDGER_ASSETS_DELETED))
        try checkFlags(flags, known: favorites | deleted, "flags")
        let album = try optionalText(album, "album")
        give(try handle.assetsJSON(album: album, favoritesOnly: flags & favorites != 0, deletedOnly: flags & deleted != 0), to: json)
    }
}

/// `photoledger_fetch_albums_json`.
@_cdecl("photoledger_fetch_albums_json")
public func fetchAlbumsJSON(_ handle: OpaquePointer?, _ json: OutString?, _ message: OutString?) -> photoledger_status {
    perform(message: message, clearing: [json]) { give(try library(handle).albumsJSON(), to: json) }
}

/// `photoledger_history_json`.
@_cdecl("photoledger_history_json")
public func historyJSON(
    _ handle: OpaquePointer?, _ object: UnsafePointer<CChar>?, _ device: UnsafePointer<CChar>?, _ json: OutString?, _ message: OutString?
) -> photoledger_status {
    perform(message: message, clearing: [json]) {
        let handle = try library(handle)
        give(try handle.historyJSON(object: try optionalText(object, "object"), device: try optionalText(device, "device")), to: json)
    }
}

/// `photoledger_status_json`.
@_cdecl("photoledger_status_json")
public func statusJSON(_ handle: OpaquePointer?, _ json: OutString?, _ message: OutString?) -> photoledger_status {
    perform(message: message, clearing: [json]) { give(try library(handle).statusJSON(), to: json) }
}

/// `photoledger_set_remote`.
@_cdecl("photoledger_set_remote")
public func setRemote(
    _ handle: OpaquePointer?, _ libraryURL: UnsafePointer<CChar>?, _ token: UnsafePointer<CChar>?, _ message: OutString?
) -> photoledger_status {
    perform(message: message) {
        let handle = try library(handle)
        try handle.setRemote(libraryURL: try text(libraryURL, "library_url"), token: try text(token, "token"))
    }
}

/// `photoledger_sync`: syncs with the remote, blocking.
@_cdecl("photoledger_sync")
public func sync(_ handle: OpaquePointer?, _ report: OutString?, _ message: OutString?) -> photoledger_status {
    perform(message: message, clearing: [report]) { give(try library(handle).sync(), to: report) }
}

/// `photoledger_sync_async`: the same on the worker thread, with a completion.
@_cdecl("photoledger_sync_async")
public func syncAsynchronously(
    _ handle: OpaquePointer?, _ completion: photoledger_completion?, _ userData: UnsafeMutableRawPointer?, _ message: OutString?
) -> photoledger_status {
    perform(message: message) {
        let handle = try library(handle)
        guard let completion else {
            throw InterfaceError.invalidArgument("completion is NULL; pass the function to call when the sync ends")
        }
        try handle.runAsynchronously(Completion(function: completion, userData: userData)) { try handle.sync() }
    }
}

/// The thumbnail arguments both variants check before doing anything.
private struct ThumbnailRequest: Sendable {
    let asset: String
    let size: Int
    let contentMode: ImageContentMode
    let destination: String

    init(_ asset: UnsafePointer<CChar>?, _ size: UInt32, _ contentMode: Int32, _ destination: UnsafePointer<CChar>?) throws {
        self.asset = try text(asset, "asset")
        guard size >= 1 else { throw InterfaceError.invalidArgument("size is 0; pass the size in pixels the image must cover (1 or more)") }
        self.size = Int(size)
        guard let mode = ImageContentMode(rawValue: Int(contentMode)) else {
            throw InterfaceError.invalidArgument("content mode \(contentMode) is unknown; pass PHOTOLEDGER_CONTENT_MODE_FIT or _FILL")
        }
        self.contentMode = mode
        self.destination = try text(destination, "destination")
    }

    func run(on handle: LibraryHandle) throws -> String {
        try handle.thumbnail(asset, size: size, contentMode: contentMode, to: destination)
    }
}

/// `photoledger_thumbnail`: writes an asset's image from the image manager to a file, blocking.
@_cdecl("photoledger_thumbnail")
public func thumbnail(
    _ handle: OpaquePointer?, _ asset: UnsafePointer<CChar>?, _ size: UInt32, _ contentMode: Int32, _ destination: UnsafePointer<CChar>?,
    _ json: OutString?, _ message: OutString?
) -> photoledger_status {
    perform(message: message, clearing: [json]) {
        let handle = try library(handle)
        give(try ThumbnailRequest(asset, size, contentMode, destination).run(on: handle), to: json)
    }
}

/// `photoledger_thumbnail_async`: the same on the worker thread, with a completion.
@_cdecl("photoledger_thumbnail_async")
public func thumbnailAsynchronously(
    _ handle: OpaquePointer?, _ asset: UnsafePointer<CChar>?, _ size: UInt32, _ contentMode: Int32, _ destination: UnsafePointer<CChar>?,
    _ completion: photoledger_completion?, _ userData: UnsafeMutableRawPointer?, _ message: OutString?
) -> photoledger_status {
    perform(message: message) {
        let handle = try library(handle)
        guard let completion else {
            throw InterfaceError.invalidArgument("completion is NULL; pass the function to call when the image is written")
        }
        let request = try ThumbnailRequest(asset, size, contentMode, destination)
        try handle.runAsynchronously(Completion(function: completion, userData: userData)) { try request.run(on: handle) }
    }
}
