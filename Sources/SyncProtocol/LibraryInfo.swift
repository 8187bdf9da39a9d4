import Foundation
import LedgerCore

/// What a device token allows. The server enforces it on event envelopes; the client reads it
/// from ``LibraryInfo`` and never asks for what it may not do.
public enum TokenScope: String, Sendable, Hashable, CaseIterable {
    /// Push and pull events; upload and download blobs.
    case readWrite
    /// Push creations of new assets and upload their blobs only; no pull, no download.
    case addOnly
    /// Pull events and download blobs only.
    case readOnly

    /// Whether the scope allows pulling events and downloading blobs.
    public var canRead: Bool { self != .addOnly }
    /// Whether the scope allows pushing events and uploading blobs.
    public var canWrite: Bool { self != .readOnly }

    /// The event types an addOnly token may push: creations of assets the library does not hold.
    public static let addOnlyEventTypes: Set<EventType> = [.assetCreated]
}

/// `GET /v1/libraries/{library}`: the library as the token sees it.
///
/// ```json
/// {"library":"family","libraryId":"0193…","device":"anna-phone","scope":"readWrite","lastServerSeq":1042,"encryption":"endToEnd"}
/// ```
///
/// A device reads it before it syncs: `libraryId` is what its new events are bound to (and what
/// it checks pulled events against), `scope` what it may do, `encryption` whether the library's
/// payloads and blobs are end-to-end encrypted (`endToEnd`: its key store holds the library's
/// identity key) or travel in the clear (`none`; a server that does not say is read as `none`).
public struct LibraryInfo: WireMessage, Hashable {
    /// The library's name on the server.
    public var library: String
    /// The library's identifier, named by every bound event.
    public var libraryID: UUID
    /// The device the token belongs to.
    public var device: DeviceID
    /// What the token allows.
    public var scope: TokenScope
    /// The library's last server sequence (0 for an empty log).
    public var lastServerSequence: Int64
    /// Whether the library is end-to-end encrypted.
    public var endToEndEncrypted: Bool

    /// Creates the message.
    public init(
        library: String, libraryID: UUID, device: DeviceID, scope: TokenScope, lastServerSequence: Int64, endToEndEncrypted: Bool = false
    ) {
        self.endToEndEncrypted = endToEndEncrypted
        self.library = library
        self.libraryID = libraryID
        self.device = device
        self.scope = scope
        self.lastServerSequence = lastServerSequence
    }

    public func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("library"); writer.string(library)
        writer.key("libraryId"); writer.uuid(libraryID)
        writer.key("device"); writer.string(device.rawValue)
        writer.key("scope"); writer.string(scope.rawValue)
        writer.key("lastServerSeq"); writer.integer(lastServerSequence)
        writer.key("encryption"); writer.string(endToEndEncrypted ? "endToEnd" : "none")
        writer.endObject()
    }

    /// Reads the message strictly: an unknown scope, an invalid name or identifier is malformed.
    public static func read(from reader: inout JSONReader) throws -> LibraryInfo {
        var library: String?, libraryID: UUID?, device: String?, scope: String?, last: Int64?, encryption = "none"
        try readObject(&reader, path: "") { key, reader in
            switch key {
            case "library": library = try reading(key) { try reader.readString() }
            case "libraryId":
                libraryID = try reading(key) { try reader.withStringBytes(parseUUID) }
                if libraryID == nil { throw WireFormatError(field: key, message: "not a valid UUID") }
            case "device": device = try reading(key) { try reader.readString() }
            case "scope": scope = try reading(key) { try reader.readString() }
            case "lastServerSeq": last = try reading(key) { try reader.readInt64() }
            case "encryption":
                encryption = try reading(key) { try reader.readString() }
                guard encryption == "none" || encryption == "endToEnd" else {
                    throw WireFormatError(field: key, message: "must be none or endToEnd")
                }
            default: return false
            }
            return true
        }
        let name = try required(library, "library")
        if let problem = LibraryName.problem(with: name) { throw WireFormatError(field: "library", message: problem) }
        let deviceName = try required(device, "device")
        if let problem = DeviceID.problem(with: deviceName) { throw WireFormatError(field: "device", message: problem) }
        guard let tokenScope = TokenScope(rawValue: try required(scope, "scope")) else {
            throw WireFormatError(field: "scope", message: "must be readWrite, addOnly or readOnly")
        }
        let lastServerSequence = try required(last, "lastServerSeq")
        guard lastServerSequence >= 0 else { throw WireFormatError(field: "lastServerSeq", message: "must not be negative") }
        return LibraryInfo(
            library: name, libraryID: try required(libraryID, "libraryId"), device: DeviceID(deviceName), scope: tokenScope,
            lastServerSequence: lastServerSequence, endToEndEncrypted: encryption == "endToEnd")
    }
}
