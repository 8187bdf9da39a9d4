import Foundation
import LedgerCore
import LedgerCrypto
import LedgerStore
import Testing

@testable import PhotoLedger

/// An end-to-end encrypted library on one device: what the log holds, what the views show, and
/// what a wrong, missing or damaged key does.
@Suite("Encryption")
struct EncryptionTests {
    @Test("an encrypted library seals every payload in its log, folds the same views, and rebuilds and verifies")
    func sealedLog() throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        let recovery = try library.enableEncryption()
        #expect(library.encryptionStatus == .enrolled)
        #expect(recovery.text.count == 69)
        let assets = try library.createAssets(3, favorite: true)
        _ = try library.createAlbum("Secret Holiday Album", assets: assets)
        try library.performChangesAndWait { try $0.assetChangeRequest(for: assets[0]).setHidden(true) }
        let events = try library.allEvents()
        #expect(events.allSatisfy { $0.seal != nil })
        let title = Array("Secret Holiday Album".utf8)
        #expect(!events.contains { $0.payload.firstRange(of: title) != nil })
        // An asset's creation uses the asset's key, its later events the asset's key under the
        // current generation, album events a library key generation.
        #expect(events.filter { $0.type == "asset.created" }.allSatisfy { KeyKind.of($0.seal!.keyID) == .asset })
        let later = events.filter { $0.type.hasPrefix("asset.") && $0.type != "asset.created" }
        #expect(!later.isEmpty)
        #expect(later.allSatisfy { $0.seal!.keyID == KeyKind.assetEpoch(generation: library.encryption.snapshot.ring!.current.id) })
        #expect(events.filter { $0.type.hasPrefix("album.") }.allSatisfy { KeyKind.of($0.seal!.keyID) == .library })
        let reference = try library.projectionDump()
        try library.rebuild()
        #expect(try library.projectionDump() == reference)
        let verification = try library.verify()
        #expect(verification.isIntact && verification.checkedEvents == events.count)
        #expect(try library.fetchAssetCollections(with: .album).first?.localizedTitle == "Secret Holiday Album")
        #expect(try library.statistics().quarantined.isEmpty)
    }

    @Test(
        "an asset key sealed to the library's identity opens only with that identity, for that asset, from a writer the library approved"
    )
    func keysSealedToTheIdentity() throws {
        let ring = KeyRing.generate()
        let writer = BoxKeyPair()
        let grant = try AddOnlyGrant.make(identity: ring.identity, devicePublicKey: writer.publicKey, device: "camera")
        #expect(AddOnlyGrant.isValid(grant, libraryPublicKey: ring.identity.publicKey, device: writer, device: "camera"))
        #expect(!AddOnlyGrant.isValid(grant, libraryPublicKey: ring.identity.publicKey, device: writer, device: "other"))
        #expect(!AddOnlyGrant.isValid(grant, libraryPublicKey: BoxKeyPair().publicKey, device: writer, device: "camera"))
        let asset = UUID(), key = SecretKey()
        let record = WrappedAssetKey(
            asset: asset, keyID: KeyKind.asset.newIdentifier(), key: key,
            blobs: [Array(repeating: 1, count: 32): Array(repeating: 2, count: 32)])
        let sealed = try record.sealed(toIdentity: ring.identity.publicKey, writer: writer, grant: grant)
        #expect(WrappedAssetKey.isSealedToIdentity(sealed) && !WrappedAssetKey.isSealedToIdentity(record.sealed(under: ring.current)))
        let opened = try WrappedAssetKey.open(asset: asset, sealedToIdentity: sealed, identity: ring.identity)
        #expect(
            opened.writer == "camera" && opened.record.key == key && opened.record.keyID == record.keyID
                && opened.record.blobs == record.blobs)
        // Another library's identity, another asset, a damaged byte: refused.
        #expect(throws: CryptoError.self) {
            try WrappedAssetKey.open(asset: asset, sealedToIdentity: sealed, identity: KeyRing.generate().identity)
        }
        #expect(throws: CryptoError.self) { try WrappedAssetKey.open(asset: UUID(), sealedToIdentity: sealed, identity: ring.identity) }
        var damaged = sealed
        damaged[damaged.count - 1] ^= 1
        #expect(throws: CryptoError.self) { try WrappedAssetKey.open(asset: asset, sealedToIdentity: damaged, identity: ring.identity) }
        // A writer that made its own grant (the server, say, which knows the identity's public key) is refused, even
        // one that names every key right: only the identity's holders compute the tag.
        let forger = BoxKeyPair()
        let selfMade = try AuthenticatedBox.seal(
            Array("photoledger add-only grant v1".utf8) + ring.identity.publicKey + forger.publicKey + Array(repeating: 0, count: 32)
                + Array("camera".utf8), to: ring.identity.publicKey, from: forger)
        let forged = try record.sealed(toIdentity: ring.identity.publicKey, writer: forger, grant: selfMade)
        let refusal = #expect(throws: CryptoError.self) {
            try WrappedAssetKey.open(asset: asset, sealedToIdentity: forged, identity: ring.identity)
        }
        #expect(refusal?.message.contains("did not approve") == true)
        // The asset's key under a generation needs both keys.
        let epoch = PayloadSeal.assetEpochKey(assetKey: key, generationKey: ring.current.key)
        #expect(
            epoch != key && epoch != ring.current.key && epoch == PayloadSeal.assetEpochKey(assetKey: key, generationKey: ring.current.key))
        #expect(epoch != PayloadSeal.assetEpochKey(assetKey: key, generationKey: SecretKey()))
        #expect(KeyKind.of(KeyKind.assetEpoch(generation: ring.current.id)) == .assetEpoch)
        #expect(KeyKind.generation(ofAssetEpoch: KeyKind.assetEpoch(generation: ring.current.id)) == ring.current.id)
    }

    @Test(
        "a revocation's new identity: rings keep every identity (format 1 for one), a renewed grant moves an add-only device only when the identity it trusts endorses it"
    )
    func identityRotation() throws {
        var ring = KeyRing.generate()
        let first = ring.identity
        #expect(ring.serialized.first == 1)
        ring.rotate()
        let second = ring.rotateIdentity()
        #expect(ring.identity.publicKey == second.publicKey && ring.founding.publicKey == first.publicKey)
        #expect(ring.serialized.first == 2)
        let read = try KeyRing(serialized: ring.serialized)
        #expect(read.identities.map(\.publicKey) == [first.publicKey, second.publicKey])
        #expect(read.generations.map(\.id) == ring.generations.map(\.id) && read.current.key == ring.current.key)
        #expect(try KeyRing(serialized: KeyRing(serialized: ring.serialized).serialized).serialized == ring.serialized)
        var damaged = ring.serialized
        damaged[1] = 0
        #expect(throws: CryptoError("the key ring holds 0 identities")) { try KeyRing(serialized: damaged) }

        // The camera was approved by the first identity; a renewal endorsed by it moves the camera to the second.
        let camera = BoxKeyPair()
        let renewed = try AddOnlyGrant.renewed(
            identity: second, older: [first], devicePublicKey: camera.publicKey, device: "camera")
        let accepted = try #require(AddOnlyGrant.accept(renewed, trusted: first.publicKey, device: camera, device: "camera"))
        #expect(accepted.libraryPublicKey == second.publicKey)
        #expect(AddOnlyGrant.grantee(of: accepted.grant, devicePublicKey: camera.publicKey, identity: second) == "camera")
        #expect(AddOnlyGrant.grant(in: renewed) == accepted.grant)
        // Read again once moved, it keeps the second identity; another name or device is refused.
        #expect(
            AddOnlyGrant.accept(renewed, trusted: second.publicKey, device: camera, device: "camera")?.libraryPublicKey == second.publicKey)
        #expect(AddOnlyGrant.accept(renewed, trusted: first.publicKey, device: camera, device: "scanner") == nil)
        #expect(AddOnlyGrant.accept(renewed, trusted: first.publicKey, device: BoxKeyPair(), device: "camera") == nil)
        // An endorsement from an identity the camera does not trust (the server's own, say) moves nothing.
        let stranger = BoxKeyPair(), evil = BoxKeyPair()
        let foreign = try AddOnlyGrant.renewed(identity: evil, older: [stranger], devicePublicKey: camera.publicKey, device: "camera")
        #expect(AddOnlyGrant.accept(foreign, trusted: first.publicKey, device: camera, device: "camera") == nil)
        var cut = renewed
        cut.removeLast(40)
        #expect(AddOnlyGrant.accept(cut, trusted: first.publicKey, device: camera, device: "camera") == nil)
        #expect(AddOnlyGrant.accept(Array(renewed.prefix(9)), trusted: first.publicKey, device: camera, device: "camera") == nil)

        // A record the camera sealed to either identity opens with the ring, checked against that identity's grant.
        let asset = UUID()
        let record = WrappedAssetKey(asset: asset, keyID: KeyKind.asset.newIdentifier(), key: SecretKey())
        let before = try record.sealed(
            toIdentity: first.publicKey, writer: camera,
            grant: try AddOnlyGrant.make(identity: first, devicePublicKey: camera.publicKey, device: "camera"))
        let after = try record.sealed(toIdentity: second.publicKey, writer: camera, grant: accepted.grant)
        #expect(try WrappedAssetKey.open(asset: asset, sealedToIdentity: before, ring: read).record.key == record.key)
        #expect(try WrappedAssetKey.open(asset: asset, sealedToIdentity: after, ring: read).record.key == record.key)
        // A ring without the second identity (a device revoked before it was made) does not open the later record.
        #expect(throws: CryptoError.self) { try WrappedAssetKey.open(asset: asset, sealedToIdentity: after, identity: first) }
    }

    @Test("a library that holds events cannot start encrypted, and an encrypted one cannot be encrypted again")
    func enableOnlyOnEmpty() throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        _ = try library.createAssets(1)
        #expect(throws: PhotoLibraryError.self) { try library.enableEncryption() }
        let fresh = try makeLibrary(directory, name: "fresh")
        _ = try fresh.enableEncryption()
        let error = #expect(throws: PhotoLibraryError.self) { try fresh.enableEncryption() }
        #expect(error?.message.contains("already end-to-end encrypted") == true)
    }

    @Test("a device that holds no key keeps sealed events sealed, changes nothing, and folds them when the ring arrives")
    func sealedUntilKeyArrives() throws {
        let directory = try TemporaryDirectory()
        let anna = try makeLibrary(directory)
        let recovery = try anna.enableEncryption()
        let assets = try anna.createAssets(2)
        _ = try anna.createAlbum("Trip", assets: assets)
        let events = try anna.allEvents()

        let ben = try makeLibrary(directory, device: "ben-tablet", seed: 2, name: "ben")
        let benKey = try ben.prepareEnrolment()
        if case .awaitingEnrolment = ben.encryptionStatus {} else { Issue.record("ben should await enrolment") }
        try ben.applyRemoteEvents(events)
        #expect(try ben.statistics().quarantined[.sealed] == events.count)
        #expect(try ben.fetchAssets().count == 0)
        let blocked = #expect(throws: PhotoLibraryError.self) { try ben.createAlbum("Mine") }
        #expect(blocked?.message.contains("photoledger device enroll") == true)
        #expect(try ben.allEvents().count == events.count)

        // A ring sealed for another key, and a damaged one, change nothing.
        let stranger = BoxKeyPair()
        let ring = try KeyRing(
            unwrapping: try #require(try anna.pendingKeyEntries().first { $0.name == "ring/anna-phone" }?.value),
            with: BoxKeyPair(secretKey: try annaDeviceKey(anna)))
        let wrong = try ben.absorbKeyStore([
            "library/public": ring.identity.publicKey, "ring/ben-tablet": try ring.wrapped(for: stranger.publicKey),
        ])
        #expect(!wrong.problems.isEmpty && !wrong.enrolled)
        var damaged = try ring.wrapped(for: benKey)
        damaged[damaged.count - 1] ^= 1
        #expect(!(try ben.absorbKeyStore(["library/public": ring.identity.publicKey, "ring/ben-tablet": damaged])).problems.isEmpty)
        #expect(try ben.statistics().quarantined[.sealed] == events.count)

        // The code both devices show agrees; the approved ring folds the album events, and the asset keys the assets.
        #expect(
            try anna.enrolmentCode(for: benKey) == { if case .awaitingEnrolment(let code) = ben.encryptionStatus { code } else { nil } }())
        try anna.approveEnrolment(of: "ben-tablet", publicKey: benKey)
        var entries: [String: [UInt8]] = [:]
        for entry in try anna.pendingKeyEntries() { entries[entry.name] = entry.value }
        let absorbed = try ben.absorbKeyStore(entries)
        #expect(absorbed.enrolled && absorbed.assetKeys == 2 && absorbed.problems.isEmpty)
        #expect(try ben.statistics().quarantined.isEmpty)
        #expect(try ben.fetchAssets().count == 2)
        #expect(try ben.projectionDump()["albums"] == anna.projectionDump()["albums"])

        // The recovery key opens the recovery copy; a wrong one says so.
        let third = try makeLibrary(directory, device: "cara-laptop", seed: 3, name: "cara")
        let sealedRing = try #require(entries["ring/recovery"])
        let wrongKey = #expect(throws: PhotoLibraryError.self) { try third.restore(with: RecoveryKey.generate(), sealedRing: sealedRing) }
        #expect(wrongKey?.message.contains("recovery key does not open") == true)
        try third.restore(with: recovery, sealedRing: sealedRing)
        #expect(third.encryptionStatus == .enrolled)
    }

    @Test(
        "a wrapped asset key laid out by hand opens: its associated data is the label, the asset, the key's and the generation's identifiers"
    )
    func wrappedKeyLayout() throws {
        let generation = (id: UInt32(0x4102_0304), key: SecretKey())
        let asset = UUID(uuidString: "0190A3C2-1111-7222-8333-444455556666")!
        let keyID: UInt32 = 0x8A0B_0C0D
        let key = SecretKey()
        let associated =
            Array("photoledger asset key v1".utf8) + asset.bytes + [0x8A, 0x0B, 0x0C, 0x0D] + [0x41, 0x02, 0x03, 0x04]
        let (nonce, ciphertext) = AEAD.seal(
            key.bytes + [0],
            key: WrappedAssetKey.wrappingKey(of: generation.key),
            associatedData: associated)
        let sealed = [0x41, 0x02, 0x03, 0x04, 0x8A, 0x0B, 0x0C, 0x0D] + nonce + ciphertext
        let opened = try WrappedAssetKey(asset: asset, unsealing: sealed, with: generation.key)
        #expect(opened.keyID == keyID && opened.key == key && opened.blobs.isEmpty)
        // And what the library seals reads back the same way.
        #expect(try WrappedAssetKey(asset: asset, unsealing: opened.sealed(under: generation), with: generation.key).key == key)
        #expect(throws: CryptoError.self) { try WrappedAssetKey(asset: UUID(), unsealing: sealed, with: generation.key) }
    }

    @Test("asset key entries' names read back as their assets; other names, and damaged ones, are not asset keys")
    func assetKeyNames() throws {
        var random = SeededRandomNumberGenerator(seed: 21)
        for _ in 0..<200 {
            let asset = UUID(uuid: withUnsafeBytes(of: (random.next(), random.next())) { $0.load(as: uuid_t.self) })
            #expect(KeyStoreName.asset(in: KeyStoreName.asset(asset)) == asset)
            #expect(KeyStoreName.asset(in: "asset/" + asset.uuidString) == asset)
        }
        let name = "asset/0190a3c2-1111-7222-8333-444455556666"
        #expect(KeyStoreName.asset(in: name) == UUID(uuidString: "0190A3C2-1111-7222-8333-444455556666"))
        for other in [
            "ring/ben-tablet", "library/public", String(name.dropLast()), name + "0", name.replacingOccurrences(of: "-7222", with: "x7222"),
            name.replacingOccurrences(of: "a3c2", with: "a3g2"), "asset/0190a3c2-1111-7222-8333-4444555566-6",
            "asset/0190a3c2111172228333444455556666------", "bsset/0190a3c2-1111-7222-8333-444455556666",
        ] {
            #expect(KeyStoreName.asset(in: other) == nil, "\(other)")
        }
    }

    @Test(
        "the key store's entries as a list, in its order: a name that comes twice counts with its later entry, for packs and for keys on their own",
        arguments: [true, false])
    func entriesAsAList(packed: Bool) throws {
        let directory = try TemporaryDirectory()
        let anna = try makeLibrary(directory)
        _ = try anna.enableEncryption()
        // A block each: four packs.
        for _ in 0..<4 { _ = try anna.createAssets(1) }
        let events = try anna.allEvents()
        let ben = try makeLibrary(directory, device: "ben-tablet", seed: 2, name: "ben")
        try anna.approveEnrolment(of: "ben-tablet", publicKey: try ben.prepareEnrolment())
        let pending = try anna.pendingKeyEntries().compactMap { entry in entry.value.map { (name: entry.name, value: $0) } }
        let packs = pending.filter { $0.name.hasPrefix("pack/") }
        #expect(packs.count == 4 && !pending.contains { $0.name.hasPrefix("asset/") })
        // The same keys as entries of their own (as a purge publishes them).
        let ring = try #require(anna.encryption.snapshot.ring)
        let assets = anna.encryption.snapshot.assetKeys.all.sorted { $0.key.precedes($1.key) }.map { asset, key in
            (name: KeyStoreName.asset(asset), value: WrappedAssetKey(asset: asset, keyID: key.id, key: key.key).sealed(under: ring.current))
        }
        let entries = packed ? packs : assets
        #expect(entries.count == 4)
        func damaged(_ value: [UInt8]) -> [UInt8] { value.dropLast() + [value.last! ^ 1] }
        // Two entries come damaged first and whole later; two come whole first and damaged
        // later: the later entry is the one taken.
        let list =
            pending.filter { !$0.name.hasPrefix("pack/") }
            + entries[0..<2].map { (name: $0.name, value: damaged($0.value)) } + entries
            + entries[2..<4].map { (name: $0.name, value: damaged($0.value)) }
        let absorbed = try ben.absorbKeyStore(list)
        #expect(absorbed.enrolled && absorbed.assetKeys == 2)
        try ben.applyRemoteEvents(events)
        // The assets whose later entries were whole are the ones that open.
        let opened = Set(try ben.fetchAssets().map { try #require(LocalIdentifier($0.localIdentifier)).uuid })
        let expected = try entries[0..<2].map { entry in
            packed
                ? try #require(
                    try anna.readDatabase {
                        try $0.firstRow(
                            "SELECT asset FROM e2e_asset_keys k JOIN e2e_packs p ON p.id = k.pack WHERE p.name = ?", [entry.name]
                        ) { UUID(bytes: $0.blob(0)) }
                    } ?? nil)
                : try #require(KeyStoreName.asset(in: entry.name))
        }
        #expect(opened == Set(expected))
        #expect(try ben.statistics().quarantined[.sealed] == 2)
        // The keys taken from packs name their packs: a purge replaces the pack.
        let named = try ben.readDatabase {
            try $0.rows("SELECT p.name FROM e2e_asset_keys k LEFT JOIN e2e_packs p ON p.id = k.pack WHERE k.key IS NOT NULL") {
                $0.isNull(0) ? nil : $0.text(0)
            }
        }
        #expect(named.count == 2 && named.allSatisfy { ($0 != nil) == packed })
    }

    @Test("a page folded before its keys arrived is folded again with them when it is applied: nothing of it stays sealed")
    func pageFoldedBeforeItsKeys() throws {
        let directory = try TemporaryDirectory()
        let anna = try makeLibrary(directory)
        _ = try anna.enableEncryption()
        _ = try anna.createAssets(3)
        let events = try anna.allEvents()
        let ben = try makeLibrary(directory, device: "ben-tablet", seed: 2, name: "ben")
        try anna.approveEnrolment(of: "ben-tablet", publicKey: try ben.prepareEnrolment())
        var entries: [String: [UInt8]] = [:]
        for entry in try anna.pendingKeyEntries() { entries[entry.name] = entry.value }
        // The ring first: the page is folded (as a pull folds the next page ahead) before the asset keys arrive.
        #expect(try ben.absorbKeyStore(entries.filter { !$0.key.hasPrefix("pack/") }).enrolled)
        let page = PreparedPage(
            events: events, serverSequences: nil, chain: [], cursor: nil, localChain: nil,
            folded: FoldedEvents.fold(events, context: ben.foldContext))
        #expect(page.folded.batch.quarantined.allSatisfy { $0.kind == .sealed } && page.folded.batch.quarantined.count == 3)
        #expect(try ben.absorbKeyStore(entries).assetKeys == 3)
        #expect(try ben.applyRemoteEvents(page).newEvents == events.count)
        #expect(try ben.statistics().quarantined.isEmpty)
        #expect(try ben.fetchAssets().count == 3)
        #expect(try ben.projectionDump()["assets"] == anna.projectionDump()["assets"])
    }

    @Test("published key entries leave the outbox, unless they were queued again with other bytes; asset keys are listed apart")
    func publishedKeyEntries() throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        _ = try library.enableEncryption()
        let assets = try library.createAssets(250).map { try #require(LocalIdentifier($0)).uuid }
        let block = try #require(try library.allEvents().last?.changeBlock)
        let pack = KeyStoreName.pack(block: block, index: 0)
        #expect(
            try library.pendingKeyEntries().map(\.name).sorted() == [
                "device/anna-phone", "library/public", pack, "ring/anna-phone", "ring/recovery",
            ])  // the identity key, the pack of the block's asset keys, this device's key and ring, the recovery ring
        #expect(
            try library.pendingKeyEntries(assetKeys: false).map(\.name).sorted() == [
                "device/anna-phone", "library/public", "ring/anna-phone", "ring/recovery",
            ])
        // A batch carries the packs of its blocks.
        let some = Set(assets.prefix(3))
        #expect(try library.pendingKeyEntries(ofAssets: some, blocks: [block]).map(\.name) == [pack])
        #expect(try library.pendingKeyEntries(ofAssets: some, blocks: [UUID()]).isEmpty)
        // Keys queued on their own (an add-only device's, blob names added after a pack went up)
        // are found by name; an entry queued for the push of an asset (a purge's replacement of
        // a pack) goes with that asset's batch.
        try library.withDatabase { db in
            for asset in assets { try PhotoLibrary.queue(db, KeyStoreName.asset(asset), [9]) }
            try PhotoLibrary.queue(db, "pack/00000000-0000-7000-8000-000000000000.0", nil, carrier: assets[1])
        }
        #expect(
            try library.pendingKeyEntries(ofAssets: some, blocks: [block]).map(\.name)
                == some.map(KeyStoreName.asset).sorted() + [pack, "pack/00000000-0000-7000-8000-000000000000.0"])
        #expect(try library.pendingKeyEntries(ofAssets: [assets[0]]).map(\.name) == [KeyStoreName.asset(assets[0])])
        // Assets made together are read as one range of names (others in the range left out);
        // assets far apart, whose range holds many other entries, are looked up one by one.
        let together = Set(assets[10..<60]).subtracting([assets[30]])
        let apart = Set([assets[0], assets[120], assets[249]])
        for chosen in [together, apart] {
            #expect(try library.pendingKeyEntries(ofAssets: chosen).map(\.name) == chosen.map(KeyStoreName.asset).sorted())
        }
        // Queued again with other bytes while the first bytes were on their way: kept. A deletion goes once published.
        let pending = try library.pendingKeyEntries()
        #expect(pending.count == 4 + 1 + 250 + 1)
        let requeued = KeyStoreName.asset(assets[0])
        try library.withDatabase { db in
            try PhotoLibrary.queue(db, requeued, [1, 2, 3])
            try PhotoLibrary.queue(db, "grant/camera", nil)
        }
        try library.keyEntriesPublished(pending.map { (name: $0.name, value: $0.value) } + [(name: "grant/camera", value: nil)])
        let left = try library.pendingKeyEntries()
        #expect(left.map(\.name) == [requeued])
        #expect(left.first?.value == [1, 2, 3])
    }

    @Test("asset keys are one table changed in place: a replaced key is derived again, a purge's keys are left out, folds see the version")
    func assetKeyTable() throws {
        let asset = UUID(), other = UUID()
        let keyID = KeyKind.asset.rawValue | 4
        let first = SecretKey(), second = SecretKey()
        let table = AssetKeyTable([asset: (keyID, first)])
        let keys = PayloadKeys(generations: [:], generationKeys: [:], assetKeys: table)
        let context = FoldContext(schema: .standard, library: nil, keys: keys)
        #expect(keys.payloadKey(keyID, object: asset) == PayloadSeal.payloadKey(of: first))
        #expect(keys.payloadKey(keyID | 8, object: asset) == nil)  // another identifier than the asset's
        // Added in place: the same payload keys see it, and a context made before is told apart.
        table.add([other: (keyID, second)])
        #expect(keys.payloadKey(keyID, object: other) == PayloadSeal.payloadKey(of: second))
        #expect(!context.foldsAlike(FoldContext(schema: .standard, library: nil, keys: keys)))
        // A key replaced under the same identifier: what was derived from the first is not used.
        table.add([asset: (keyID, second)])
        #expect(keys.payloadKey(keyID, object: asset) == PayloadSeal.payloadKey(of: second))
        // A purge in progress leaves its assets' keys out without changing the table.
        let purging = keys.removing([asset])
        #expect(purging.payloadKey(keyID, object: asset) == nil && purging.payloadKey(keyID, object: other) != nil)
        #expect(keys.payloadKey(keyID, object: asset) != nil)
        table.remove([asset])
        #expect(keys.payloadKey(keyID, object: asset) == nil && table[asset] == nil && table.all.count == 1)
    }

    @Test("recovery keys read back, and a mistyped or short one is refused with the reason")
    func recoveryKeyText() throws {
        let key = RecoveryKey.generate()
        #expect(try RecoveryKey(text: key.text.lowercased().replacingOccurrences(of: "-", with: " ")).key == key.key)
        var typo = Array(key.text)
        typo[5] = typo[5] == "7" ? "8" : "7"
        #expect(throws: CryptoError("the recovery key's checksum does not match: a character is mistyped")) {
            try RecoveryKey(text: String(typo))
        }
        #expect(throws: CryptoError.self) { try RecoveryKey(text: String(key.text.dropLast(5))) }
        let invalid = #expect(throws: CryptoError.self) { try RecoveryKey(text: "U" + key.text.dropFirst()) }
        #expect(invalid?.message.contains("'U'") == true)
    }

    @Test(
        "encrypted resources decrypt to the same bytes, cannot be reordered, cut or opened with another key, and are the same for the same key"
    )
    func resourceCipher() throws {
        let directory = try TemporaryDirectory()
        var random = SeededRandomNumberGenerator(seed: 5)
        for size in [0, 1, ResourceCipher.chunkSize, ResourceCipher.chunkSize * 2 + 17] {
            let plain = (0..<size).map { _ in UInt8.random(in: 0...255, using: &random) }
            let source = directory.file("plain-\(size)")
            try Data(plain).write(to: source)
            let key = SecretKey()
            let first = try ResourceCipher.encrypt(fileAt: source, to: directory.file("a"), key: key, contentID: SHA256.hash(plain))
            let again = try ResourceCipher.encrypt(fileAt: source, to: directory.file("b"), key: key, contentID: SHA256.hash(plain))
            #expect(first.sha256 == again.sha256 && first.size == ResourceCipher.encryptedSize(of: Int64(size)))
            #expect(try ResourceCipher.decrypt(fileAt: directory.file("a"), to: directory.file("c"), key: key) == SHA256.hash(plain))
            #expect(try Data(contentsOf: directory.file("c")) == Data(plain))
            #expect(throws: CryptoError.self) {
                try ResourceCipher.decrypt(fileAt: directory.file("a"), to: directory.file("d"), key: SecretKey())
            }
            #expect(!FileManager.default.fileExists(atPath: directory.file("d").path))
            var bytes = try [UInt8](Data(contentsOf: directory.file("a")))
            bytes.removeLast(1)
            try Data(bytes).write(to: directory.file("cut"))
            #expect(throws: CryptoError.self) {
                try ResourceCipher.decrypt(fileAt: directory.file("cut"), to: directory.file("d"), key: key)
            }
        }
    }

    @Test(
        "a damaged or forged sealed payload, a damaged asset key and a damaged blob give clear verdicts and errors and change nothing else")
    func damagedKeysAndCiphertext() throws {
        let directory = try TemporaryDirectory()
        let anna = try makeLibrary(directory)
        _ = try anna.enableEncryption()
        let assets = try anna.performChangesAndWait {
            [try $0.createAsset(from: samplePhoto(7)).placeholderForCreatedAsset.localIdentifier]
        }
        _ = try anna.createAlbum("Trip", assets: assets)
        let events = try anna.allEvents()

        // Ben holds every key, then receives a copy of an album event whose ciphertext was changed.
        let ben = try makeLibrary(directory, device: "ben-tablet", seed: 2, name: "ben")
        let benKey = try ben.prepareEnrolment()
        try anna.approveEnrolment(of: "ben-tablet", publicKey: benKey)
        var entries: [String: [UInt8]] = [:]
        for entry in try anna.pendingKeyEntries() { entries[entry.name] = entry.value }
        // A damaged asset key entry is not taken: the asset's events stay sealed.
        var damagedEntries = entries
        for (name, value) in entries where name.hasPrefix("pack/") { damagedEntries[name] = value.dropLast() + [value.last! ^ 1] }
        let absorbed = try ben.absorbKeyStore(damagedEntries)
        #expect(absorbed.enrolled && absorbed.assetKeys == 0)
        try ben.applyRemoteEvents(events)
        #expect(try ben.statistics().quarantined[.sealed] == 1)  // the asset's creation
        #expect(try ben.fetchAssets().count == 0)
        #expect(try ben.absorbKeyStore(entries).assetKeys == 1)
        #expect(try ben.fetchAssets().count == 1)
        #expect(try ben.statistics().quarantined.isEmpty)

        let album = try #require(events.first { $0.type == EventType.albumCreated.rawValue })
        var forged = album
        forged.id = UUID()
        forged.object = UUID()
        forged.deviceSequence = 99
        forged.payload[0] ^= 0xFF
        let before = try ben.projectionDump()
        try ben.applyRemoteEvents([forged])
        let listed = try ben.quarantine()
        #expect(listed.count == 1 && listed.first?.reason.contains("does not open with key") == true && listed.first?.kind == .quarantined)
        var after = try ben.projectionDump()
        after["quarantine"] = before["quarantine"]
        #expect(after == before)

        // A blob that does not decrypt is refused and not stored.
        let resource = try #require(try anna.resources(for: assets[0]).first)
        let creation = try #require(events.first { $0.type == EventType.assetCreated.rawValue })
        let names = try anna.encryptedBlobNames(
            for: [(asset: creation.object, sha256: resource.sha256, keyID: try #require(creation.seal?.keyID))])
        let name = try #require(names.first)
        var bytes = try [UInt8](Data(contentsOf: anna.sealedBlobFile(name)))
        bytes[bytes.count / 2] ^= 1
        try FileManager.default.createDirectory(
            at: ben.resources.directory.appendingPathComponent("tmp"), withIntermediateDirectories: true)
        let download = ben.resources.directory.appendingPathComponent("tmp/download")
        try Data(bytes).write(to: download)
        for entry in try anna.pendingKeyEntries() { entries[entry.name] = entry.value }
        _ = try ben.absorbKeyStore(entries)
        let refused = #expect(throws: PhotoLibraryError.self) { try ben.adoptDownloadedBlob(at: download, name: name) }
        #expect(refused?.message.contains("does not decrypt") == true)
        #expect(!ben.resources.contains(resource.sha256))
    }

    func annaDeviceKey(_ library: PhotoLibrary) throws -> SecretKey {
        try library.readDatabase { db in
            try SecretKey(bytes: try #require(try db.firstRow("SELECT device_secret FROM e2e_state", []) { $0.blob(0) }))
        }
    }
}
