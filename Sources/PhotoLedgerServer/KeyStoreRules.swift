import Foundation
import LedgerCore
import SyncProtocol

/// Who may change which entry of a library's key store. The server cannot open any entry; the
/// rules only keep a token from replacing what other devices rely on:
///
/// - `library/public` (the library's identity key): written once, by a readWrite device, never
///   deleted.
/// - `library/current` (the current identity key, after a revocation replaced the first):
///   written and replaced by readWrite devices, never deleted.
/// - `device/NAME` (a device's public key): written by that device only; deleted by readWrite
///   devices (revocation).
/// - `ring/NAME` (the key ring sealed for a device): written by readWrite devices (enrolment,
///   rotation) or by the device itself (a restore with the recovery key); deleted by readWrite.
/// - `ring/recovery`: written by readWrite devices.
/// - `writer/NAME` (an add-only device's public key): written by that device only; deleted by
///   readWrite devices (revocation) or by the device itself.
/// - `grant/NAME` (the approval of an add-only device): written and deleted by readWrite devices.
/// - `asset/UUID` (an asset's key sealed under a library key, or sealed to the library's identity
///   by an add-only device): written by devices that may write; an addOnly device only creates the
///   key of a new asset (no entry of that name, no event of that object from another device:
///   `SyncRequestHandler` checks both), never replaces one; deleted (crypto-shredding) by
///   readWrite devices.
/// - `pack/BLOCK.N` (the keys of many assets that one change block made, sealed together under a
///   library key): written, replaced and deleted (a purge replaces a pack by entries of its other
///   keys) by readWrite devices only.
public enum KeyStoreRules {
    /// Why `credential` may not make `change`, or nil when it may.
    public static func problem(with change: KeyChange, for credential: Credential) -> String? {
        let name = change.name
        let own = credential.device.rawValue
        let readWrite = credential.scope == .readWrite
        // The kind and the rest, as substrings (no copies: a push carries its assets' keys by the thousand).
        guard let slash = name.utf8.firstIndex(of: UInt8(ascii: "/")), name.utf8.index(after: slash) != name.utf8.endIndex else {
            return "'\(name)' is not an entry of the key store"
        }
        let kind = name[..<slash], rest = name[name.utf8.index(after: slash)...]
        switch kind {
        case "library":
            guard rest == "public" || rest == "current" else { return "'\(name)' is not an entry of the key store" }
            guard readWrite else { return "only a readWrite device may publish the library's identity key" }
            if rest == "current" {
                guard change.value != nil else { return "the library's current identity key is replaced, never deleted" }
            } else {
                guard change.value != nil, change.createOnly else {
                    return "the library's identity key is written once and never replaced or deleted"
                }
            }
        case "device":
            if change.value == nil {
                guard readWrite || rest == own else { return "only a readWrite device may delete another device's key" }
            } else {
                guard rest == own else { return "a device publishes only its own key ('device/\(own)')" }
            }
        case "writer":
            if change.value == nil {
                guard readWrite || rest == own else { return "only a readWrite device may delete another device's key" }
            } else {
                guard rest == own else { return "a device publishes only its own key ('writer/\(own)')" }
            }
        case "grant":
            guard readWrite else { return "only a readWrite device may approve or revoke an add-only device" }
        case "ring":
            guard readWrite || (rest == own && change.value != nil) else {
                return "only a readWrite device may seal the key ring for another device or for the recovery key"
            }
        case "asset":
            guard KeyStoreRules.isLowercaseUUID(rest.utf8) else {
                return "'\(name)' is not an entry of the key store (an asset key is named asset/ and the asset's UUID in lowercase)"
            }
            if change.value == nil {
                guard readWrite else { return "only a readWrite device may destroy an asset key" }
            } else {
                guard credential.scope.canWrite else { return "a readOnly device may not write asset keys" }
                guard readWrite || change.createOnly else { return "an addOnly device may only create asset keys, not replace them" }
            }
        case "pack":
            guard KeyStoreRules.isPackName(rest.utf8) else {
                return
                    "'\(name)' is not an entry of the key store (a key pack is named pack/, a change block's UUID in lowercase, '.' and a number)"
            }
            guard readWrite else { return "only a readWrite device may write or delete a key pack" }
        default:
            return "'\(name)' is not an entry of the key store"
        }
        return nil
    }
}

extension KeyStoreRules {
    /// Whether `text` is what follows `pack/` in a key pack's name: a UUID in lowercase, a dot,
    /// and a number of one to six digits without leading zeros.
    static func isPackName(_ text: Substring.UTF8View) -> Bool {
        guard text.count >= 38, let dot = text.firstIndex(of: UInt8(ascii: ".")), isLowercaseUUID(text[..<dot]) else { return false }
        let number = text[text.index(after: dot)...]
        guard (1...6).contains(number.count), number.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return false }
        return number.count == 1 || number.first != 0x30
    }

    /// Whether `text` is a UUID in lowercase hexadecimal with its four dashes (checked byte by
    /// byte: a large library's asset keys arrive by the ten thousand).
    static func isLowercaseUUID(_ text: Substring.UTF8View) -> Bool {
        guard text.count == 36 else { return false }
        for (index, byte) in text.enumerated() {
            if index == 8 || index == 13 || index == 18 || index == 23 {
                guard byte == 0x2D else { return false }
            } else {
                guard (byte >= 0x30 && byte <= 0x39) || (byte >= 0x61 && byte <= 0x66) else { return false }
            }
        }
        return true
    }
}

extension SyncRequestHandler {
    /// Whether the library's key store holds its identity key: the library is end-to-end encrypted.
    func isEndToEndEncrypted(_ credential: Credential) throws -> Bool {
        try store.keyEntry(libraryID: credential.libraryID, name: "library/public") != nil
    }

    func readKeys(_ head: RequestHead, credential: Credential) throws -> HTTPResponse {
        var after: Int64 = 0
        if let text = head.query["after"] {
            guard let value = Int64(text), value >= 0 else { throw HTTPError.badRequest("field 'after': must be a non-negative integer") }
            after = value
        }
        let (entries, last) = try store.keyEntries(libraryID: credential.libraryID, after: after)
        let response = KeyEntriesResponse(entries: entries, last: last)
        return head.acceptsKeyStoreBodies ? .keyStoreBody(KeyStoreBody.encode(response)) : .json(response)
    }

    /// Applies a change request (`binary`: in `KeyStoreBody`'s form, otherwise JSON), answering
    /// in the binary form when `answersBinary`.
    func changeKeys(_ bytes: [UInt8], binary: Bool, answersBinary: Bool, credential: Credential) throws -> HTTPResponse {
        let request: KeyChangesRequest
        do {
            request = binary ? try KeyStoreBody.decodeChanges(bytes) : try KeyChangesRequest.decode(bytes)
        } catch let error as WireFormatError {
            throw HTTPError.badRequest(binary ? "the key change list is invalid: \(error)" : "\(error)")
        }
        let response = try store.withPushTransaction(library: credential.libraryID, device: credential.device, at: configuration.clock()) {
            try KeyStoreRules.apply(request.changes, for: credential, in: $0)
        }
        return answersBinary ? .keyStoreBody(KeyStoreBody.encode(response)) : .json(response)
    }
}

extension KeyStoreRules {
    /// Applies `changes` for `credential` in `transaction` (the key store's route, and a push
    /// that carries the keys of its events): a change ``problem(with:for:)`` or the add-only
    /// rule forbids is answered `forbidden` with the reason and not made; the others are
    /// applied in order. Every change is checked against the store as it was before the
    /// request.
    public static func apply(_ changes: [KeyChange], for credential: Credential, in transaction: any PushTransaction) throws
        -> KeyChangesResponse
    {
        var results: [KeyChangesResponse.Result?] = []
        var allowed: [KeyChange] = []
        results.reserveCapacity(changes.count)
        allowed.reserveCapacity(changes.count)
        for change in changes {
            if let problem = try problem(with: change, for: credential) ?? addOnlyAssetProblem(change, credential, transaction) {
                results.append(KeyChangesResponse.Result(name: change.name, status: .forbidden, reason: problem))
            } else {
                results.append(nil)
                allowed.append(change)
            }
        }
        let applied = try transaction.applyKeyChanges(allowed)
        var statuses = applied.statuses.makeIterator()
        let answered = changes.indices.map { index in
            results[index] ?? KeyChangesResponse.Result(name: changes[index].name, status: statuses.next() ?? .conflict)
        }
        return KeyChangesResponse(results: answered, from: applied.from, through: applied.through)
    }

    /// Why an addOnly device may not write this asset key, or nil: it only creates the key of a
    /// new asset. An entry of that name with other bytes is never replaced, and an asset the log
    /// holds already (made elsewhere, or purged with its key destroyed) gets no key from it.
    private static func addOnlyAssetProblem(_ change: KeyChange, _ credential: Credential, _ transaction: any PushTransaction) throws
        -> String?
    {
        guard credential.scope == .addOnly, let value = change.value, change.name.hasPrefix("asset/"),
            let asset = UUID(uuidString: String(change.name.dropFirst("asset/".count)))
        else { return nil }
        if let held = try transaction.keyEntry(named: change.name) {
            return held == value
                ? nil
                : "an addOnly device may only create the key of a new asset: '\(change.name)' exists already and is never replaced"
        }
        if case .held = try transaction.presence(ofObject: asset) {
            return "an addOnly device may only create the key of a new asset: asset \(asset.uuidString) exists in this library already"
        }
        return nil
    }
}

extension HTTPResponse {
    /// A response with `bytes`, a key store message in its binary form, as its body.
    static func keyStoreBody(_ bytes: [UInt8]) -> HTTPResponse {
        HTTPResponse(status: 200, headers: [("Content-Type", KeyStoreBody.contentType), ("Vary", "Accept")], body: .bytes(bytes))
    }
}
