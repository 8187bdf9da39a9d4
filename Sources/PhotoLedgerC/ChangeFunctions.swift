import CPhotoLedger
import Foundation
import PhotoLedger

// The functions of photoledger.h that save media and change albums and assets. Each is
// documented in the header; the Swift names are not part of the interface.

/// The save arguments every variant checks before doing anything.
private struct SaveRequest: Sendable {
    let path: String
    let albumTitle: String?
    let moveFile: Bool

    init(_ path: UnsafePointer<CChar>?, _ albumTitle: UnsafePointer<CChar>?, _ flags: UInt32) throws {
        try checkFlags(flags, known: UInt32(PHOTOLEDGER_SAVE_MOVE_FILE), "flags")
        self.path = try text(path, "file_path")
        self.albumTitle = try optionalText(albumTitle, "album_title")
        moveFile = flags & UInt32(PHOTOLEDGER_SAVE_MOVE_FILE) != 0
    }

    func run(on handle: LibraryHandle) throws -> String {
        try handle.saveToAlbum(fileAt: path, albumTitle: albumTitle, moveFile: moveFile)
    }
}

/// `photoledger_save_to_album`: saves a photo or video first into an album, blocking.
@_cdecl("photoledger_save_to_album")
public func saveToAlbum(
    _ handle: OpaquePointer?, _ path: UnsafePointer<CChar>?, _ albumTitle: UnsafePointer<CChar>?, _ flags: UInt32, _ identifier: OutString?,
    _ message: OutString?
) -> photoledger_status {
    perform(message: message, clearing: [identifier]) {
        let handle = try library(handle)
        give(try SaveRequest(path, albumTitle, flags).run(on: handle), to: identifier)
    }
}

/// `photoledger_save_to_album_async`: the same on the worker thread, with a completion.
@_cdecl("photoledger_save_to_album_async")
public func saveToAlbumAsynchronously(
    _ handle: OpaquePointer?, _ path: UnsafePointer<CChar>?, _ albumTitle: UnsafePointer<CChar>?, _ flags: UInt32,
    _ completion: photoledger_completion?, _ userData: UnsafeMutableRawPointer?, _ message: OutString?
) -> photoledger_status {
    perform(message: message) {
        let handle = try library(handle)
        guard let completion else {
            throw InterfaceError.invalidArgument("completion is NULL; pass the function to call when the save ends")
        }
        let request = try SaveRequest(path, albumTitle, flags)
        try handle.runAsynchronously(Completion(function: completion, userData: userData)) { try request.run(on: handle) }
    }
}

/// `photoledger_create_album`.
@_cdecl("photoledger_create_album")
public func createAlbum(_ handle: OpaquePointer?, _ title: UnsafePointer<CChar>?, _ identifier: OutString?, _ message: OutString?)
    -> photoledger_status
{
    perform(message: message, clearing: [identifier]) {
        let handle = try library(handle)
        give(try handle.createAlbum(title: try text(title, "title")), to: identifier)
    }
}

/// `photoledger_rename_album`.
@_cdecl("photoledger_rename_album")
public func renameAlbum(_ handle: OpaquePointer?, _ album: UnsafePointer<CChar>?, _ title: UnsafePointer<CChar>?, _ message: OutString?)
    -> photoledger_status
{
    perform(message: message) {
        let handle = try library(handle)
        let title = try text(title, "title")
        try handle.changeAlbum(try text(album, "album")) { try $0.setTitle(title) }
    }
}

/// `photoledger_delete_album`.
@_cdecl("photoledger_delete_album")
public func deleteAlbum(_ handle: OpaquePointer?, _ album: UnsafePointer<CChar>?, _ message: OutString?) -> photoledger_status {
    perform(message: message) { try library(handle).deleteAlbum(try text(album, "album")) }
}

/// `photoledger_add_to_album`.
@_cdecl("photoledger_add_to_album")
public func addToAlbum(
    _ handle: OpaquePointer?, _ album: UnsafePointer<CChar>?, _ assets: TextArray?, _ count: Int, _ message: OutString?
) -> photoledger_status {
    perform(message: message) {
        let handle = try library(handle)
        let assets = try identifiers(assets, count: count, "assets")
        try handle.changeAlbum(try text(album, "album")) { try $0.addAssets(assets) }
    }
}

/// `photoledger_insert_into_album`.
@_cdecl("photoledger_insert_into_album")
public func insertIntoAlbum(
    _ handle: OpaquePointer?, _ album: UnsafePointer<CChar>?, _ assets: TextArray?, _ count: Int, _ index: Int, _ message: OutString?
) -> photoledger_status {
    perform(message: message) {
        let handle = try library(handle)
        let assets = try identifiers(assets, count: count, "assets")
        guard index >= 0, index <= Int.max - assets.count else { throw InterfaceError.invalidArgument("index \(index) is out of range") }
        try handle.changeAlbum(try text(album, "album")) { try $0.insertAssets(assets, at: IndexSet(index..<(index + assets.count))) }
    }
}

/// `photoledger_remove_from_album`.
@_cdecl("photoledger_remove_from_album")
public func removeFromAlbum(
    _ handle: OpaquePointer?, _ album: UnsafePointer<CChar>?, _ assets: TextArray?, _ count: Int, _ message: OutString?
) -> photoledger_status {
    perform(message: message) {
        let handle = try library(handle)
        let assets = try identifiers(assets, count: count, "assets")
        try handle.changeAlbum(try text(album, "album")) { try $0.removeAssets(assets) }
    }
}

/// `photoledger_set_favorite`.
@_cdecl("photoledger_set_favorite")
public func setFavorite(_ handle: OpaquePointer?, _ assets: TextArray?, _ count: Int, _ favorite: Int32, _ message: OutString?)
    -> photoledger_status
{
    perform(message: message) {
        let handle = try library(handle)
        let assets = try identifiers(assets, count: count, "assets")
        try handle.change { changes in
            for asset in assets { try changes.assetChangeRequest(for: asset).setFavorite(favorite != 0) }
        }
    }
}

/// `photoledger_set_hidden`.
@_cdecl("photoledger_set_hidden")
public func setHidden(_ handle: OpaquePointer?, _ assets: TextArray?, _ count: Int, _ hidden: Int32, _ message: OutString?)
    -> photoledger_status
{
    perform(message: message) {
        let handle = try library(handle)
        let assets = try identifiers(assets, count: count, "assets")
        try handle.change { changes in
            for asset in assets { try changes.assetChangeRequest(for: asset).setHidden(hidden != 0) }
        }
    }
}

/// `photoledger_delete_assets`: moves assets to Recently Deleted.
@_cdecl("photoledger_delete_assets")
public func deleteAssets(_ handle: OpaquePointer?, _ assets: TextArray?, _ count: Int, _ message: OutString?) -> photoledger_status {
    perform(message: message) {
        let handle = try library(handle)
        let assets = try identifiers(assets, count: count, "assets")
        try handle.change { try $0.deleteAssets(assets) }
    }
}

/// `photoledger_recover_assets`: brings assets back from Recently Deleted.
@_cdecl("photoledger_recover_assets")
public func recoverAssets(_ handle: OpaquePointer?, _ assets: TextArray?, _ count: Int, _ message: OutString?) -> photoledger_status {
    perform(message: message) {
        let handle = try library(handle)
        let assets = try identifiers(assets, count: count, "assets")
        try handle.change { try $0.recoverAssets(assets) }
    }
}

/// `photoledger_export`: writes an asset's photo or video to a new file.
@_cdecl("photoledger_export")
public func exportAsset(
    _ handle: OpaquePointer?, _ asset: UnsafePointer<CChar>?, _ version: Int32, _ destination: UnsafePointer<CChar>?, _ message: OutString?
) -> photoledger_status {
    perform(message: message) {
        let handle = try library(handle)
        guard let version = ImageVersion(rawValue: Int(version)) else {
            throw InterfaceError.invalidArgument("image version \(version) is unknown; pass one of PHOTOLEDGER_IMAGE_*")
        }
        try handle.export(try text(asset, "asset"), version: version, to: try text(destination, "destination"))
    }
}
