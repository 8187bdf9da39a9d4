import Foundation
import LedgerCore
import LedgerCrypto
import PhotoLedger
import SyncProtocol
import SyncTransport

/// The key store steps of a sync in an end-to-end encrypted library (see `PhotoLedger`'s
/// encryption): publish what this device queued (its public key, rings it sealed for devices it
/// enrolled, its assets' keys with their blob names, destroyed keys), then read what changed on
/// the server since the last look (a ring sealed for this device, other devices' asset keys).
extension SyncEngine {
    /// Reads the key store's changes, then publishes queued entries (those of asset keys only
    /// when `assetKeys`: a sync that pushes sends them with the events of their assets). In a
    /// plain library it only
    /// checks that the server's library is plain too: a plain library with changes of its own
    /// never syncs with an encrypted one (its changes would reach the server in the clear), and
    /// an empty one joins it (its public key is published, to be approved).
    ///
    /// With `deferringPublication` (a sync with nothing to push), nothing is published while
    /// the keys just taken are still being written (their rows hold the library's writer, which
    /// recording the server's answers needs): the sync publishes after its pull. Returns whether
    /// publication was deferred.
    ///
    /// - Throws: ``SyncError/invalidRemote(_:)`` when the libraries cannot sync, saying what to do.
    @discardableResult
    func exchangeKeys(_ report: inout SyncReport, assetKeys: Bool = true, deferringPublication: Bool = false) async throws -> Bool {
        if !replica.isEncrypted {
            guard try await serverIsEncrypted() else { return false }
            guard try replica.prepareToJoinEncryptedLibrary() else {
                throw SyncError.invalidRemote(
                    "the library on the server is end-to-end encrypted, but this library is not and holds changes of its own, which would "
                        + "reach the server in the clear; nothing was sent. Join the encrypted library with a new library "
                        + "(`photoledger init`, `photoledger remote`, `photoledger device enroll`)")
            }
        }
        let cursor = try replica.keyStoreCursor()
        let response = try await readKeyStore(after: cursor)
        let absorbed: KeyStoreAbsorption
        do {
            // The read position moves with the keys (once this device is enrolled: entries read
            // before it held the ring could not be opened, and are read again later), whose rows
            // are written while the sync goes on: every later write waits for them.
            absorbed = try replica.absorbKeyStore(
                response.entries.map { (name: $0.name, value: $0.value) }, through: response.last > cursor ? response.last : nil,
                writingKeysInBackground: true)
        } catch let error as PhotoLibraryError {
            throw SyncError.invalidRemote(error.message)
        }
        report.encryptionNotes += absorbed.problems
        if absorbed.enrolled {
            report.encryptionNotes.append(
                replica.encryptionStatus == .addOnly
                    ? "this add-only device was approved: it seals the assets it adds for the library's readers, and reads nothing"
                    : "this device was enrolled: it now reads the library")
        }
        if absorbed.identityRenewed {
            report.encryptionNotes.append(
                "the library's identity changed (a device was revoked): this add-only device now seals what it adds to the new one")
        }
        if absorbed.newGenerations && !absorbed.enrolled {
            report.encryptionNotes.append("a new library key generation arrived (a device was revoked)")
        }
        if !replica.isEnrolled, case .awaitingEnrolment(let code) = replica.encryptionStatus {
            report.encryptionNotes.append(
                "this device holds no key of the encrypted library yet: approve it on an enrolled device (`photoledger device approve "
                    + "\(library.device.rawValue)`)" + (code.map { " and check that it shows the code \($0)" } ?? ""))
        }
        if deferringPublication, replica.isWritingKeys { return true }
        // Published after reading: the server says where this device's writes went, so it need
        // not read them back.
        try await publishKeys(&report, assetKeys: assetKeys)
        return false
    }

    /// Writes the entries this device queued to the server's key store (without those of asset
    /// keys when `assetKeys` is false). When a request's writes
    /// directly follow the position this device has read up to (no other device wrote in
    /// between), the read position moves past them: a device never reads its own writes back.
    func publishKeys(_ report: inout SyncReport, assetKeys: Bool = true) async throws {
        try await publishKeys(try replica.pendingKeyEntries(assetKeys: assetKeys), &report)
    }

    /// The queued entries of the keys of the assets `events` are about, which go up with the
    /// push batch of `events` (after its blobs), so a device that pulls the batch finds the keys
    /// that open it: returned, to be carried in the batch itself, when the server takes keyed
    /// batches (``sendsKeyedBatches``); otherwise written to the key store now, while the server
    /// stores the batch before, and none returned.
    func assetKeys(of events: [Replica.PendingEvent], _ report: inout SyncReport) async throws -> [KeyChange] {
        let pending = try replica.pendingKeyEntries(ofAssets: Set(events.map(\.event.object)), blocks: Set(events.map(\.event.changeBlock)))
        if sendsKeyedBatches, pending.count <= KeyStoreBody.maximumChanges { return Self.keyChanges(pending) }
        // The writes before the deletions: a purge that replaces a pack by its other keys deletes
        // the pack only once they are stored (requests of one call may be stored in any order).
        try await publishKeys(pending.filter { $0.value != nil }, &report)
        try await publishKeys(pending.filter { $0.value == nil }, &report)
        return []
    }

    /// Writes `pending` to the server's key store, in requests of at most
    /// `KeyStoreBody.maximumChanges` (`KeyChangesRequest.maximumChanges` in JSON), two at a time
    /// (names are unique, so their order does not matter): the server stores one while the other
    /// travels and this device records the answer to the one before. The read position moves
    /// past a request's writes once every position between it and them is this device's own.
    func publishKeys(_ pending: [(name: String, value: [UInt8]?, createOnly: Bool)], _ report: inout SyncReport) async throws {
        guard !pending.isEmpty else { return }
        var writes = try keyStoreWrites()
        let size = sendsKeyStoreBodies ? KeyStoreBody.maximumChanges : KeyChangesRequest.maximumChanges
        let changes = Self.keyChanges(pending)
        let chunks = stride(from: 0, to: changes.count, by: size).map {
            KeyChangesRequest(changes: Array(changes[$0..<min($0 + size, changes.count)]))
        }
        try await Self.concurrently(chunks, limit: 2) { request in
            try await self.changeKeyStore(request)
        } each: { (answers: [(request: KeyChangesRequest, response: KeyChangesResponse)]) in
            for (request, response) in answers { try recordKeyAnswer(request.changes, response, &writes, &report) }
        }
    }

    /// Queued entries as key store changes.
    static func keyChanges(_ pending: [(name: String, value: [UInt8]?, createOnly: Bool)]) -> [KeyChange] {
        pending.map { KeyChange(name: $0.name, value: $0.value, createOnly: $0.createOnly) }
    }

    /// The positions of the key store this device wrote in one sync: its read position moves
    /// past them once every position between it and them is its own.
    struct KeyStoreWrites {
        /// This device's read position (nil while it is not enrolled: it reads everything again).
        var cursor: Int64?
        /// The positions each answered request wrote: from → through.
        var written: [Int64: Int64] = [:]
    }

    /// The read position this device starts a sync's writes from.
    func keyStoreWrites() throws -> KeyStoreWrites {
        KeyStoreWrites(cursor: replica.isEnrolled ? try replica.keyStoreCursor() : nil)
    }

    /// Records the server's answer to `changes` (a key store request's, or a keyed push's): the
    /// entries it stored, deleted or refused leave the outbox (a refusal is noted in `report`),
    /// and the read position moves past the writes when nothing but this device's writes came
    /// between.
    ///
    /// - Throws: ``SyncError/invalidRemote(_:)`` when the server's library holds another
    ///   identity key.
    func recordKeyAnswer(_ changes: [KeyChange], _ response: KeyChangesResponse, _ writes: inout KeyStoreWrites, _ report: inout SyncReport)
        throws
    {
        if let from = response.from, let through = response.through, through >= from { writes.written[from] = through }
        if let read = writes.cursor, writes.written[read] != nil {
            var moved = read
            while let through = writes.written.removeValue(forKey: moved) { moved = through }
            try replica.setKeyStoreCursor(moved)
            writes.cursor = moved
        }
        var done: [(name: String, value: [UInt8]?)] = []
        for (entry, result) in zip(changes, response.results) {
            switch result.status {
            case .stored, .deleted:
                done.append((entry.name, entry.value))
            case .conflict where entry.name == "library/public":
                throw SyncError.invalidRemote(
                    "the library on the server is already end-to-end encrypted with other keys; this library cannot join it as it is. "
                        + "Join it with a new, empty library (`photoledger init`, `photoledger remote set`, then `photoledger device enroll`)"
                )
            case .forbidden where entry.value != nil && entry.name.hasPrefix("pack/"):
                // A server from before key packs: the pack's keys go up on their own (this sync's
                // last step publishes them; devices that pull the events first wait for them).
                try replica.publishKeysOfRefusedPack(entry.name)
                done.append((entry.name, entry.value))
            case .conflict where entry.createOnly && entry.name.hasPrefix("asset/") && replica.encryptionStatus == .enrolled:
                // A key a purge published on its own, out of its pack: another device did it first.
                done.append((entry.name, entry.value))
            case .conflict, .forbidden:
                report.encryptionNotes.append(
                    "the server refused the key entry '\(entry.name)': \(result.reason ?? "it exists with other bytes")")
                done.append((entry.name, entry.value))
            }
        }
        try replica.keyEntriesPublished(done)
    }

    /// Whether changes of the key store go in their binary form (the options allow it, and the
    /// server has not refused it).
    private var sendsKeyStoreBodies: Bool {
        options.exchangesKeyStoreBodies && serverTakesKeyStoreBodies.load(ordering: .relaxed)
    }

    /// Sends `request` to the key store, in the binary form when ``sendsKeyStoreBodies``, and
    /// returns each request sent with its answer: `request` itself, or, when a server that reads
    /// JSON only refused the binary form, the parts of it sent as JSON.
    private func changeKeyStore(_ request: KeyChangesRequest) async throws -> [(request: KeyChangesRequest, response: KeyChangesResponse)] {
        let path = SyncRoutes.keys(library: remote.libraryName)
        if sendsKeyStoreBodies {
            let headers = ["Content-Type": KeyStoreBody.contentType, "Accept": Self.keyStoreAccept]
            let response = try await send(
                HTTPRequest(method: .post, url: remote.url(path), headers: authorized(headers), body: .bytes(KeyStoreBody.encode(request))))
            if response.status != 415 {
                guard response.isSuccess else { throw SyncError.from(status: response.status, body: response.body.bytes) }
                return [(request, try decodingKeyStoreAnswer(response, path: path, KeyStoreBody.decodeResults, KeyChangesResponse.decode))]
            }
            // A server that reads JSON changes only.
            serverTakesKeyStoreBodies.store(false, ordering: .relaxed)
        }
        var answers: [(request: KeyChangesRequest, response: KeyChangesResponse)] = []
        for start in stride(from: 0, to: request.changes.count, by: KeyChangesRequest.maximumChanges) {
            let part = KeyChangesRequest(
                changes: Array(request.changes[start..<min(start + KeyChangesRequest.maximumChanges, request.changes.count)]))
            answers.append((part, try await exchange(.post, path, part, as: KeyChangesResponse.self)))
        }
        return answers
    }

    /// The entries of the server's key store written after position `after`, asked for in the
    /// binary form when the options allow it (a server that does not offer it answers JSON).
    func readKeyStore(after: Int64) async throws -> KeyEntriesResponse {
        let path = SyncRoutes.keys(library: remote.libraryName, after: after)
        guard options.exchangesKeyStoreBodies else {
            return try await exchange(.get, path, nil as KeyChangesRequest?, as: KeyEntriesResponse.self)
        }
        let response = try await send(
            HTTPRequest(method: .get, url: remote.url(path), headers: authorized(["Accept": Self.keyStoreAccept])))
        guard response.isSuccess else { throw SyncError.from(status: response.status, body: response.body.bytes) }
        return try decodingKeyStoreAnswer(response, path: path, KeyStoreBody.decodeEntries, KeyEntriesResponse.decode)
    }

    /// The `Accept` of the key store's requests: the binary form, or JSON.
    private static let keyStoreAccept = "\(KeyStoreBody.contentType), \(SyncRoutes.jsonContentType);q=0.5"

    /// Decodes a key store answer in the form the server chose: `binary` for the binary form, `json` otherwise.
    private func decodingKeyStoreAnswer<T>(
        _ response: HTTPResponse, path: String, _ binary: ([UInt8]) throws -> T, _ json: ([UInt8]) throws -> T
    ) throws -> T {
        let isBinary = response.headers["Content-Type"].map(SyncRoutes.mediaType) == KeyStoreBody.contentType
        return try decoding(response, path: path) { isBinary ? try binary($0) : try json($0) }
    }

    /// Whether the server says the library is end-to-end encrypted.
    private func serverIsEncrypted() async throws -> Bool {
        do {
            let info = try await exchange(
                .get, SyncRoutes.library(remote.libraryName), nil as KeyChangesRequest?, as: LibraryInfo.self,
                notFound: .invalidResponse("legacy"))
            return info.endToEndEncrypted
        } catch SyncError.invalidResponse("legacy") {
            return false
        }
    }
}

/// A device that asked to join an encrypted library: its public key is on the server, and no
/// ring is sealed for it yet.
public struct EnrolmentRequest: Sendable, Hashable {
    /// The device's name.
    public var device: DeviceID
    /// Its public key, as the server holds it.
    public var publicKey: [UInt8]
    /// The short authentication code the approving device shows; the new device must show the same.
    public var code: String
    /// Whether the device asked to join as an add-only device (its token may only add assets):
    /// approving it gives it no key, only the right to seal new assets for the library's readers.
    public var addOnly: Bool = false
}

extension SyncEngine {
    /// Every entry of the server's key store, by name.
    func keyStoreEntries() async throws -> [String: [UInt8]] {
        let response = try await readKeyStore(after: 0)
        var entries: [String: [UInt8]] = [:]
        for entry in response.entries { entries[entry.name] = entry.value }
        return entries
    }

    /// The devices waiting to be enrolled, with the code to compare.
    ///
    /// - Throws: `PhotoLibraryError` `.accessRestricted` when this device is not enrolled.
    public func enrolmentRequests() async throws -> [EnrolmentRequest] {
        let entries = try await keyStoreEntries()
        return try entries.keys.sorted().compactMap { name in
            let addOnly = name.hasPrefix("writer/")
            guard name.hasPrefix("device/") || addOnly, let key = entries[name], key.count == 32 else { return nil }
            let device = DeviceID(String(name.drop { $0 != "/" }.dropFirst()))
            guard entries[addOnly ? "grant/\(device.rawValue)" : "ring/\(device.rawValue)"] == nil, device != library.device else {
                return nil
            }
            return EnrolmentRequest(
                device: device, publicKey: key, code: try library.enrolmentCode(for: key, addOnly: addOnly), addOnly: addOnly)
        }
    }

    /// Approves a device (after the user confirmed the codes match) and publishes its ring.
    public func approve(_ request: EnrolmentRequest) async throws {
        try library.approveEnrolment(of: request.device, publicKey: request.publicKey, addOnly: request.addOnly)
        try await publishKeysOrThrow()
    }

    /// Revokes `device`: a new library key generation and a new library identity, sealed for
    /// every other enrolled device (and for `recovery` when given), the add-only devices' grants
    /// renewed for the new identity, published at once; the device's ring and key are deleted
    /// from the server. Revoke the device's token on the server as well (`photoledger-server
    /// admin revoke-token`), so it cannot even fetch the ciphertext.
    public func revoke(_ device: DeviceID, recovery: RecoveryKeyText? = nil) async throws {
        let entries = try await keyStoreEntries()
        if entries["writer/\(device.rawValue)"] != nil || entries["grant/\(device.rawValue)"] != nil {
            // An add-only device held no key: its grant goes, no key changes.
            try library.revokeAddOnlyDevice(device)
            try await publishKeysOrThrow()
            return
        }
        guard entries["device/\(device.rawValue)"] != nil || entries["ring/\(device.rawValue)"] != nil else {
            throw SyncError.invalidRemote(
                "no device named '\(device.rawValue)' is enrolled in this library; `photoledger device list` shows them")
        }
        let remaining: [(DeviceID, [UInt8])] = entries.compactMap { name, value in
            guard name.hasPrefix("device/"), value.count == 32 else { return nil }
            let other = DeviceID(String(name.dropFirst("device/".count)))
            return other == device || entries["ring/\(other.rawValue)"] == nil ? nil : (other, value)
        }
        let writers: [(DeviceID, publicKey: [UInt8], grant: [UInt8])] = entries.compactMap { name, value in
            guard name.hasPrefix("writer/"), value.count == 32 else { return nil }
            let writer = DeviceID(String(name.dropFirst("writer/".count)))
            return entries["grant/\(writer.rawValue)"].map { (writer, value, $0) }
        }
        try library.revoke(device, remaining: remaining, writers: writers, recovery: try recovery.map { try $0.key() })
        try await publishKeysOrThrow()
    }

    /// Restores this (new, empty) library's access to the server's encrypted library with the
    /// recovery key shown when the library was made.
    public func restore(with recovery: RecoveryKeyText) async throws {
        let entries = try await keyStoreEntries()
        guard let sealed = entries["ring/recovery"] else {
            throw SyncError.invalidRemote(
                "the server's library has no recovery copy of its keys: it is not end-to-end encrypted, or was made without one")
        }
        try library.restore(with: try recovery.key(), sealedRing: sealed)
        try await publishKeysOrThrow()
    }
}

extension SyncEngine {
    /// Publishes queued entries now; an entry the server refused is an error saying why.
    func publishKeysOrThrow() async throws {
        var report = SyncReport()
        try await publishKeys(&report)
        if !report.encryptionNotes.isEmpty {
            throw SyncError.invalidRemote(report.encryptionNotes.joined(separator: "; ") + " (a readWrite device must do this)")
        }
    }
}

/// A recovery key as the user typed it.
public struct RecoveryKeyText: Sendable {
    /// The text.
    public var text: String

    /// Wraps typed text.
    public init(_ text: String) { self.text = text }

    func key() throws -> RecoveryKey {
        do { return try RecoveryKey(text: text) } catch let error as CryptoError {
            throw PhotoLibraryError(.accessRestricted, "the recovery key is not valid: \(error.message); nothing was changed")
        }
    }
}
