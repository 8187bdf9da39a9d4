import Foundation
import LedgerCore
import LedgerCrypto
import LedgerStore
import PhotoMedia

/// Resources of an encrypted library as the server sees them: each resource is encrypted with a
/// subkey of its asset's key (``ResourceCipher``, in chunks, from file to file) and stored as the
/// blob named by the SHA-256 of that ciphertext. The server still checks every upload against its
/// name, and deduplicates repeated uploads of one asset's resource, but a name says nothing of the
/// photo: without the asset key, no one can tell which known photo a blob holds.
///
/// The asset's key record in the server's key store (``WrappedAssetKey``, alone or in an
/// ``AssetKeyPack``) carries the name of each of its resources' blobs, so a device that holds the
/// key finds and opens them.
extension PhotoLibrary {
    /// The subkey of an asset key that encrypts the asset's resources.
    static func resourceKey(of assetKey: SecretKey) -> SecretKey { assetKey.derive("resource") }

    /// Reads the blob names column of `e2e_asset_keys`: plaintext SHA-256 → blob name.
    static func blobMap(_ bytes: [UInt8]) -> [[UInt8]: [UInt8]] {
        var map: [[UInt8]: [UInt8]] = [:]
        var index = 0
        while index + 64 <= bytes.count {
            map[Array(bytes[index..<index + 32])] = Array(bytes[index + 32..<index + 64])
            index += 64
        }
        return map
    }

    static func blobColumn(_ map: [[UInt8]: [UInt8]]) -> [UInt8] {
        map.sorted { $0.key.lexicographicallyPrecedes($1.key) }.flatMap { $0.key + $0.value }
    }

    /// Where a resource's encryption waits to be uploaded.
    func sealedBlobFile(_ name: String) -> URL { resources.directory.appendingPathComponent("tmp/sealed-\(name)") }

    /// The blob names of the resources `events` refer to, in an encrypted library: each resource
    /// is encrypted now when its blob name is not known yet (the name is recorded with the asset
    /// key, and the key record queued for the server's key store again). A resource is encrypted
    /// with the key that sealed the event referring to it: the asset key, or (a later edit) the
    /// asset key under a generation, which a device revoked before that generation cannot compute.
    func encryptedBlobNames(for references: [(asset: UUID, sha256: String, keyID: UInt32)]) throws -> Set<String> {
        try encryptedBlobNamesByAsset(for: references).values.reduce(into: Set<String>()) { $0.formUnion($1) }
    }

    /// ``encryptedBlobNames(for:)`` by asset.
    func encryptedBlobNamesByAsset(for references: [(asset: UUID, sha256: String, keyID: UInt32)]) throws -> [UUID: Set<String>] {
        let state = encryption.snapshot
        guard let wrapper = state.assetKeyWrapper else { return [:] }
        var names: [UUID: Set<String>] = [:]
        var byAsset: [UUID: [(hash: String, keyID: UInt32)]] = [:]
        for (asset, hash, keyID) in references { byAsset[asset, default: []].append((hash, keyID)) }
        // One read of the known names and one transaction for the new ones, whatever the count.
        var maps = try readDatabase { db in
            var maps: [UUID: [[UInt8]: [UInt8]]] = [:]
            for asset in byAsset.keys {
                maps[asset] = Self.blobMap(
                    try db.firstRow("SELECT blobs FROM e2e_asset_keys WHERE asset = ?", [asset.bytes]) { $0.blob(0) } ?? [])
            }
            return maps
        }
        var changed: [UUID] = []
        for (asset, hashes) in byAsset {
            guard let assetKey = state.assetKeys[asset]?.key else {
                throw PhotoLibraryError(
                    .internalError,
                    "the key of pending asset \(asset.uuidString) is missing on this device; its resources cannot be encrypted")
            }
            var map = maps[asset] ?? [:]
            var updated = false
            for (hash, keyID) in hashes {
                guard let plain = Hex.decode(hash) else { continue }
                if let name = map[plain] {
                    names[asset, default: []].insert(Hex.encode(name))
                    continue
                }
                guard resources.contains(hash), let source = resources.url(for: hash) else {
                    throw PhotoLibraryError(
                        .missingResource, "resource \(hash) of a pending change is missing on this device; it cannot be uploaded")
                }
                let temporary = resources.directory.appendingPathComponent("tmp/sealing-\(UUID.random().lowercaseString)")
                let sealed: (sha256: [UInt8], size: Int64)
                do {
                    var key = assetKey
                    if KeyKind.of(keyID) == .assetEpoch {
                        guard let epoch = state.payloadKeys.assetEpochKey(keyID, object: asset) else {
                            throw CryptoError("this device lacks library key \(KeyKind.generation(ofAssetEpoch: keyID))")
                        }
                        key = epoch
                    }
                    sealed = try ResourceCipher.encrypt(fileAt: source, to: temporary, key: Self.resourceKey(of: key), contentID: plain)
                } catch let error as CryptoError {
                    try? FileManager.default.removeItem(at: temporary)
                    throw PhotoLibraryError(.internalError, "could not encrypt resource \(hash): \(error.message)")
                }
                let name = Hex.encode(sealed.sha256)
                _ = try? FileManager.default.removeItem(at: sealedBlobFile(name))
                try FileManager.default.moveItem(at: temporary, to: sealedBlobFile(name))
                map[plain] = sealed.sha256
                names[asset, default: []].insert(name)
                updated = true
            }
            if updated {
                maps[asset] = map
                changed.append(asset)
            }
        }
        if !changed.isEmpty {
            try withDatabase { db in
                // A key in a pack the server does not hold yet goes with its blobs' names in the
                // pack, sealed again once for all of them; any other is queued on its own.
                var packs = Set<String>()
                for asset in changed {
                    guard let (keyID, key) = state.assetKeys[asset], let map = maps[asset] else { continue }
                    try db.execute("UPDATE e2e_asset_keys SET blobs = ? WHERE asset = ?", [Self.blobColumn(map), asset.bytes])
                    if let pack = try Self.pack(of: asset, in: db), try packs.contains(pack) || Self.isQueuedWrite(pack, in: db) {
                        packs.insert(pack)
                        continue
                    }
                    try Self.queue(
                        db, KeyStoreName.asset(asset), try wrapper.wrap(WrappedAssetKey(asset: asset, keyID: keyID, key: key, blobs: map)),
                        createOnly: wrapper.createOnly)
                }
                if let ring = state.ring {
                    for pack in packs.sorted() { try Self.resealQueuedPack(pack, ring: ring, in: db) }
                }
            }
        }
        return names
    }

    /// The file to upload for blob `name` of an encrypted library: its encryption, made again
    /// when it is no longer waiting.
    func encryptedBlobFile(_ name: String) throws -> URL? {
        let waiting = sealedBlobFile(name)
        if FileManager.default.fileExists(atPath: waiting.path) { return waiting }
        guard let (asset, plain) = try blobOwner(name), let wanted = Hex.decode(name),
            let source = resources.url(for: Hex.encode(plain)), resources.contains(Hex.encode(plain))
        else { return nil }
        // Encrypting is deterministic: the key that gives the blob's name is the one it was made with.
        for key in resourceKeyCandidates(of: asset) {
            do {
                let sealed = try ResourceCipher.encrypt(fileAt: source, to: waiting, key: key, contentID: plain)
                if sealed.sha256 == wanted { return waiting }
            } catch let error as CryptoError {
                throw PhotoLibraryError(.internalError, "could not encrypt resource \(Hex.encode(plain)): \(error.message)")
            }
        }
        try? FileManager.default.removeItem(at: waiting)
        return nil
    }

    /// The resource keys an asset's blobs may be encrypted with: its key's, then its key's under
    /// each library key generation this device holds (newest first).
    private func resourceKeyCandidates(of asset: UUID) -> [SecretKey] {
        let state = encryption.snapshot
        guard let key = state.assetKeys[asset]?.key else { return [] }
        let generations = (state.ring?.generations ?? []).reversed()
        return [Self.resourceKey(of: key)]
            + generations.map { Self.resourceKey(of: PayloadSeal.assetEpochKey(assetKey: key, generationKey: $0.key)) }
    }

    /// The asset and plaintext hash of blob `name`.
    private func blobOwner(_ name: String) throws -> (UUID, [UInt8])? {
        guard let wanted = Hex.decode(name) else { return nil }
        return try readDatabase { db in
            var found: (UUID, [UInt8])?
            try db.forEachRow("SELECT asset, blobs FROM e2e_asset_keys WHERE key IS NOT NULL AND length(blobs) > 0") { row in
                guard found == nil, let asset = UUID(bytes: row.blob(0)) else { return }
                if let plain = Self.blobMap(row.blob(1)).first(where: { $0.value == wanted })?.key { found = (asset, plain) }
            }
            return found
        }
    }

    /// The blob name of a resource (hex SHA-256 of its plaintext) in an encrypted library, or nil.
    func encryptedBlobName(forResource hash: String) throws -> String? {
        guard let plain = Hex.decode(hash) else { return nil }
        return try readDatabase { db in
            var found: String?
            try db.forEachRow("SELECT blobs FROM e2e_asset_keys WHERE key IS NOT NULL AND length(blobs) > 0") { row in
                if found == nil, let name = Self.blobMap(row.blob(0))[plain] { found = Hex.encode(name) }
            }
            return found
        }
    }

    /// The blobs of referenced resources this device lacks, by name, with their plaintext sizes;
    /// resources whose blob name is not known yet (their asset's key has not arrived) are left
    /// for a later sync.
    func missingEncryptedBlobs() throws -> [(hash: String, size: Int64)] {
        try readDatabase { db in
            var names: [[UInt8]: [UInt8]] = [:]
            try db.forEachRow("SELECT blobs FROM e2e_asset_keys WHERE key IS NOT NULL AND length(blobs) > 0") { row in
                names.merge(Self.blobMap(row.blob(0))) { first, _ in first }
            }
            return try db.rows("SELECT sha256, size FROM referenced_resources ORDER BY sha256") { ($0.blob(0), $0.int64(1)) }
                .filter { !resources.contains(Hex.encode($0.0)) }
                .compactMap { plain, size in names[plain].map { (Hex.encode($0), size) } }
        }
    }

    /// Opens a downloaded blob of an encrypted library into the resource store, after checking
    /// that it decrypts with its asset's key to the bytes the asset names.
    func adoptDownloadedBlob(at file: URL, name: String) throws {
        defer { try? FileManager.default.removeItem(at: file) }
        guard let (asset, plain) = try blobOwner(name), case let keys = resourceKeyCandidates(of: asset), !keys.isEmpty else {
            throw PhotoLibraryError(
                .missingResource, "blob \(name) belongs to no asset key this device holds; sync again once its key has arrived")
        }
        let opened = file.appendingPathExtension("plain")
        defer { try? FileManager.default.removeItem(at: opened) }
        do {
            // The first chunk tells a wrong key at once.
            var sha: [UInt8]?
            var failure: CryptoError?
            for key in keys where sha == nil {
                do { sha = try ResourceCipher.decrypt(fileAt: file, to: opened, key: key) } catch let error as CryptoError {
                    failure = error
                }
            }
            guard let sha else { throw failure ?? CryptoError("no key opens it") }
            guard sha == plain else {
                throw PhotoLibraryError(
                    .networkError,
                    "the downloaded blob \(name) decrypted to other bytes (\(Hex.encode(sha))) than resource \(Hex.encode(plain)); sync again"
                )
            }
            _ = try resources.ingest(fileAt: opened, transfer: .move)
        } catch let error as CryptoError {
            throw PhotoLibraryError(
                .networkError, "the downloaded blob \(name) does not decrypt with its asset's key (\(error.message)); sync again")
        } catch let error as MediaError {
            throw Self.translate(error)
        }
    }

    /// Removes encrypted copies left for uploads.
    func removeSealedBlobFiles() {
        let directory = resources.directory.appendingPathComponent("tmp")
        for name in (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? [] where name.hasPrefix("sealed-") {
            try? FileManager.default.removeItem(at: directory.appendingPathComponent(name))
        }
    }
}
