import Foundation
import LedgerCore
import LedgerCrypto
import LedgerStore
import MediaSynthesis
import PhotoMedia
import SyncProtocol
import Testing

@testable import PhotoLedger
@testable import PhotoLedgerSync

/// End-to-end encrypted libraries through a real server on loopback: what the server holds,
/// enrolment by code, revocation, and devices without keys.
@Suite("Encryption through the server")
struct EncryptionSyncTests {
    static let titles = ["Grandma's Secret Garden", "Villa Rosalind Holidays"]
    static let fileNames = ["IMG_grandma_birthday.jpg", "beach-at-sunset-lisbon.jpg", "family-tree-scan.png", "first-steps-movie.mp4"]

    /// Photos with EXIF and GPS, a PNG and a movie, under names that must not reach the server.
    func media(in directory: TemporaryDirectory) throws -> [URL] {
        let encoder = JPEGEncoder()
        let files: [[UInt8]] = [
            encoder.encode(
                RGBImage.scene(width: 320, height: 240, seed: 1), creationDate: Date(timeIntervalSince1970: 1_600_000_000),
                location: Location(latitude: 38.7223, longitude: -9.1393)),
            encoder.encode(
                RGBImage.scene(width: 300, height: 200, seed: 2), creationDate: Date(timeIntervalSince1970: 1_650_000_000),
                location: Location(latitude: 51.5007, longitude: -0.1246)),
            SyntheticMedia.sample(.png, width: 64, height: 48, seed: 3),
            SyntheticMedia.sample(.mp4, width: 64, height: 48, seed: 4),
        ]
        return try zip(Self.fileNames, files).map { name, bytes in
            let url = directory.file(name)
            try Data(bytes).write(to: url)
            return url
        }
    }

    @Test("after a two-device sync the server holds no title, file name, media signature or EXIF, and nothing it holds decrypts")
    func serverLearnsNothing() async throws {
        let world = try SyncWorld()
        let (server, directory) = (world.server, world.directory)
        let anna = try world.device("anna-phone", seed: 1)
        let ben = try world.device("ben-tablet", seed: 2)
        _ = try anna.library.enableEncryption()
        let files = try media(in: directory)
        try await anna.library.performChanges { changes in
            let assets = try changes.importAssets(fromFilesAt: files, options: AssetImportOptions(makesThumbnails: true)).compactMap {
                result -> String? in
                if case .created(let request) = result { return request.placeholderForCreatedAsset.localIdentifier }
                return nil
            }
            #expect(assets.count == 4)
            for title in Self.titles { try changes.createAlbum(title: title).addAssets(assets) }
        }
        try await anna.sync()
        // Anna's read position moved past her own writes: she never reads them back.
        #expect(try anna.library.replica.keyStoreCursor() == server.store.keyEntries(libraryID: 1, after: 0).last)

        // Ben's empty library joins: it publishes its key and waits; it reads nothing yet.
        let waiting = try await ben.sync()
        #expect(waiting.encryptionNotes.contains { $0.contains("photoledger device approve ben-tablet") })
        #expect(try ben.library.fetchAssets().count == 0)
        #expect(try ben.library.statistics().quarantined[.sealed] ?? 0 > 0)
        guard case .awaitingEnrolment(let benCode?) = ben.library.encryptionStatus else {
            Issue.record("ben should await enrolment with a code")
            return
        }
        let requests = try await anna.engine.enrolmentRequests()
        #expect(requests.map(\.device) == ["ben-tablet"])
        #expect(requests.first?.code == benCode)
        try await anna.engine.approve(try #require(requests.first))
        let enrolled = try await ben.sync()
        #expect(enrolled.encryptionNotes.contains { $0.contains("enrolled") })
        #expect(try ben.library.statistics().quarantined.isEmpty)
        #expect(try ben.library.fetchAssets().count == 4)
        #expect(Set(try ben.library.fetchAssetCollections(with: .album).map(\.localizedTitle)) == Set(Self.titles))
        for asset in try anna.library.fetchAssets() {
            let resource = try #require(try anna.library.resources(for: asset).first)
            let theirs = try #require(try ben.library.resources(for: asset).first)
            #expect(try ben.library.requestData(for: theirs) == anna.library.requestData(for: resource))
            #expect(theirs.originalFilename == resource.originalFilename)
        }
        // Ben's own change reaches Anna.
        _ = try ben.library.createAlbumForTests("Ben's Private Album")
        try await ben.sync()
        try await anna.sync()
        #expect(try anna.library.fetchAssetCollections(with: .album).contains { $0.localizedTitle == "Ben's Private Album" })

        // The scan of everything the server stores.
        let stored = try everything(under: server.directory.url)
        #expect(!stored.isEmpty)
        var needles: [(String, [UInt8])] = (Self.titles + Self.fileNames + ["Ben's Private Album"]).map { ($0, Array($0.utf8)) }
        needles += [
            ("a PNG signature", [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]), ("an EXIF marker", Array("Exif\0\0".utf8)),
            ("a JFIF marker", Array("JFIF\0".utf8)), ("an MP4 signature", Array("ftypisom".utf8)),
        ]
        for asset in try anna.library.fetchAssets() {
            for resource in try anna.library.resources(for: asset) {
                let plainHash = try #require(Hex.decode(resource.sha256))
                needles.append(("the SHA-256 of \(resource.originalFilename)", plainHash))
                needles.append(("the SHA-256 of \(resource.originalFilename) in hex", Array(resource.sha256.utf8)))
            }
        }
        for (path, bytes) in stored {
            for (what, needle) in needles {
                #expect(bytes.firstRange(of: needle) == nil, "\(path) holds \(what)")
            }
        }
        // The renditions the import made sync too (SyncedRenditions.swift), encrypted like the originals.
        let renditions = try anna.library.readDatabase { db in try db.rows("SELECT sha256 FROM asset_renditions") { $0.blob(0) } }
        #expect(!renditions.isEmpty)
        for rendition in renditions {
            for (path, bytes) in stored {
                #expect(bytes.firstRange(of: rendition) == nil && bytes.firstRange(of: Array(Hex.encode(rendition).utf8)) == nil, "\(path)")
            }
        }
        let blobs = stored.filter { $0.path.contains("/blobs/") }
        #expect(blobs.count == 4 + renditions.count)
        for (path, bytes) in blobs {
            #expect(
                !bytes.starts(with: [0xFF, 0xD8, 0xFF]) && !(bytes.count > 8 && bytes[4..<8].elementsEqual(Array("ftyp".utf8))), "\(path)")
        }

        // Nothing the server holds opens a payload: no key-sized run of bytes of any key store entry.
        let entries = try server.store.keyEntries(libraryID: 1, after: 0).entries
        #expect(entries.contains { $0.name == "library/public" } && entries.contains { $0.name == "ring/ben-tablet" })
        let sealed = try Array(anna.library.allEventsForTests().prefix(12))
        #expect(sealed.allSatisfy { $0.seal != nil })
        for entry in entries {
            for start in stride(from: 0, through: max(0, entry.value.count - SecretKey.length), by: 4)
            where entry.value.count >= SecretKey.length {
                let candidate = try SecretKey(bytes: Array(entry.value[start..<start + SecretKey.length]))
                for event in sealed {
                    #expect((try? PayloadSeal.open(event, payloadKey: PayloadSeal.payloadKey(of: candidate))) == nil)
                    #expect((try? PayloadSeal.open(event, payloadKey: candidate)) == nil)
                }
            }
        }
        #expect(try ben.library.verify() == anna.library.verify())
    }

    @Test("a revoked device cannot read what is made after its revocation; the remaining devices read everything")
    func revocation() async throws {
        let world = try SyncWorld()
        let anna = try world.device("anna-phone", seed: 1)
        let ben = try world.device("ben-tablet", seed: 2)
        let cara = try world.device("cara-laptop", seed: 3)
        _ = try anna.library.enableEncryption()
        _ = try anna.library.createAlbumForTests("Before")
        try await anna.sync()
        for device in [ben, cara] {
            try await device.sync()
            for request in try await anna.engine.enrolmentRequests() { try await anna.engine.approve(request) }
            try await device.sync()
        }
        #expect(try cara.library.fetchAssetCollections(with: .album).map(\.localizedTitle) == ["Before"])

        try await anna.engine.revoke("cara-laptop")
        _ = try anna.library.createAlbumForTests("After the revocation")
        try await anna.sync()
        try await ben.sync()
        let caraReport = try await cara.sync()
        #expect(Set(try ben.library.fetchAssetCollections(with: .album).map(\.localizedTitle)) == ["Before", "After the revocation"])
        #expect(try cara.library.fetchAssetCollections(with: .album).map(\.localizedTitle) == ["Before"])
        #expect(try cara.library.statistics().quarantined[.sealed] == 1)
        #expect(caraReport.encryptionNotes.allSatisfy { !$0.contains("new library key generation") })
        // Ben's own new events use the new generation too, and Anna reads them.
        _ = try ben.library.createAlbumForTests("Ben after")
        try await ben.sync()
        try await anna.sync()
        #expect(try anna.library.fetchAssetCollections(with: .album).contains { $0.localizedTitle == "Ben after" })
        let revoke = await #expect(throws: SyncError.self) { try await anna.engine.revoke("nobody") }
        #expect(revoke?.description.contains("no device named 'nobody'") == true)
    }

    @Test(
        "a revoked device cannot read a favorite, a new place or an edit made after its revocation on an asset it held; the other devices read them"
    )
    func revokedDeviceCannotReadLaterChanges() async throws {
        let world = try SyncWorld()
        let (server, directory) = (world.server, world.directory)
        let anna = try world.device("anna-phone", seed: 1)
        let ben = try world.device("ben-tablet", seed: 2)
        let cara = try world.device("cara-laptop", seed: 3)
        _ = try anna.library.enableEncryption()
        let files = Array(try media(in: directory).prefix(1))
        let asset = try await anna.library.performChanges { changes in
            guard case .created(let request)? = try changes.importAssets(fromFilesAt: files).first else {
                throw PhotoLibraryError(.internalError, "the photo was not imported")
            }
            return request.placeholderForCreatedAsset.localIdentifier
        }
        try await anna.sync()
        for device in [ben, cara] {
            try await device.sync()
            for request in try await anna.engine.enrolmentRequests() { try await anna.engine.approve(request) }
            try await device.sync()
        }
        #expect(try cara.library.fetchAssets().count == 1)
        #expect(cara.library.encryption.snapshot.assetKeys.all.count == 1)

        // The renditions Anna recorded before the revocation stay readable to Cara, like the original.
        let beforeRevocation = Set(try anna.library.allEventsForTests().map(\.id))
        let renditionsBefore = try anna.library.readDatabase { db in
            try db.firstRow("SELECT count(DISTINCT sha256) FROM asset_renditions") { Int($0.int64(0)) } ?? 0
        }
        try await anna.engine.revoke("cara-laptop")
        let rendered = Data(JPEGEncoder().encode(RGBImage.scene(width: 200, height: 100, seed: 9)))
        try anna.library.performChangesAndWait { changes in
            let request = try changes.assetChangeRequest(for: asset)
            try request.setFavorite(true)
            try request.setLocation(Location(latitude: 59.3293, longitude: 18.0686))
            try request.setContentEditingOutput(
                ContentEditingOutput(
                    renderedContent: .data(rendered), adjustmentFormatIdentifier: "com.example.crop", adjustmentFormatVersion: "1",
                    adjustmentData: Data("crop".utf8)))
        }
        try await anna.sync()
        try await ben.sync()
        try await cara.sync()

        // Ben reads the changes: the favorite, the place, the edit and its bytes.
        let benAsset = try #require(try ben.library.fetchAssets().first)
        #expect(benAsset.isFavorite && abs((benAsset.location?.latitude ?? 0) - 59.3293) < 0.001)
        #expect(try ben.library.adjustmentData(for: asset)?.formatIdentifier == "com.example.crop")
        #expect(try ben.library.requestImageData(for: asset) == rendered)
        #expect(try ben.library.viewsForTests() == anna.library.viewsForTests())

        // Cara kept the asset key, and still sees the asset only as it was: the changes wait sealed.
        let caraAsset = try #require(try cara.library.fetchAssets().first)
        #expect(!caraAsset.isFavorite && abs((caraAsset.location?.latitude ?? 0) - 38.7223) < 0.001)
        #expect(try cara.library.adjustmentData(for: asset) == nil)
        let uuid = try #require(LocalIdentifier(asset)).uuid
        let later = try anna.library.allEventsForTests().filter { $0.object == uuid && !beforeRevocation.contains($0.id) }
        #expect(later.count >= 2)
        #expect(later.allSatisfy { $0.seal.map { KeyKind.of($0.keyID) == .assetEpoch } == true })
        #expect(try cara.library.statistics().quarantined[.sealed] == later.count)
        // No key Cara holds, nor any it can derive, opens them or the edit's bytes.
        let held = cara.library.encryption.snapshot
        let generations = held.ring?.generations.map(\.key) ?? []
        var keys = held.assetKeys.all.values.map(\.key) + generations
        keys += generations.flatMap { generation in
            held.assetKeys.all.values.map { PayloadSeal.assetEpochKey(assetKey: $0.key, generationKey: generation) }
        }
        keys += keys.map(PayloadSeal.payloadKey(of:))
        for event in later {
            for key in keys { #expect((try? PayloadSeal.open(event, payloadKey: key)) == nil) }
        }
        let blobs = try everything(under: server.directory.url).filter { $0.path.contains("/blobs/") }
        #expect(blobs.count >= 2)
        let opening = blobs.filter { blob in
            keys.contains { key in
                (try? ResourceCipher.decrypt(
                    fileAt: URL(fileURLWithPath: blob.path), to: directory.file("attempt"), key: PhotoLibrary.resourceKey(of: key))) != nil
            }
        }
        #expect(opening.count == 1 + renditionsBefore)
        // A device enrolled after the revocation reads everything, and the chains agree.
        let dave = try world.device("dave-phone", seed: 4)
        try await dave.sync()
        for request in try await anna.engine.enrolmentRequests() { try await anna.engine.approve(request) }
        try await dave.sync()
        #expect(try dave.library.viewsForTests() == anna.library.viewsForTests())
        #expect(try dave.library.requestImageData(for: asset) == rendered)
        #expect(try cara.library.verify().failure == nil)
    }

    @Test(
        "a revocation makes a new library identity: add-only devices move to it, the revoked device cannot open what they add afterwards, and cannot get a device enrolled"
    )
    func revocationRotatesTheIdentity() async throws {
        let server = try TestServer()
        let clock = TestClock()
        let directory = try TemporaryDirectory()
        let anna = try Device("anna-phone", server: server, directory: directory, clock: clock, seed: 1)
        let ben = try Device("ben-tablet", server: server, directory: directory, clock: clock, seed: 2)
        let cara = try Device("cara-laptop", server: server, directory: directory, clock: clock, seed: 3)
        let camera = try Device("camera", server: server, directory: directory, clock: clock, seed: 4, scope: .addOnly)
        _ = try anna.library.enableEncryption()
        _ = try anna.library.createAlbumForTests("Before")
        try await anna.sync()
        for device in [ben, cara, camera] {
            try await device.sync()
            for request in try await anna.engine.enrolmentRequests() { try await anna.engine.approve(request) }
            try await device.sync()
        }
        #expect(camera.library.encryptionStatus == .addOnly)
        let caraRing = try #require(cara.library.encryption.snapshot.ring)

        try await anna.engine.revoke("cara-laptop")
        let annaRing = try #require(anna.library.encryption.snapshot.ring)
        #expect(annaRing.identities.count == 2 && annaRing.founding.publicKey == caraRing.identity.publicKey)
        #expect(try server.store.keyEntry(libraryID: 1, name: KeyStoreName.currentIdentity) == annaRing.identity.publicKey)
        // The camera takes its renewed grant and seals to the new identity from now on.
        let renewal = try await camera.sync()
        #expect(renewal.encryptionNotes.contains { $0.contains("the library's identity changed") })
        #expect(camera.library.encryption.snapshot.libraryPublicKey == annaRing.identity.publicKey)
        #expect(camera.library.encryptionStatus == .addOnly)
        let files = try media(in: directory)
        try await camera.library.performChanges { _ = try $0.importAssets(fromFilesAt: [files[0]]) }
        #expect(try await camera.sync().uploadedResources == 1)
        try await ben.sync()
        try await cara.sync()
        #expect(try ben.library.fetchAssets().count == 1)
        #expect(ben.library.encryption.snapshot.ring?.identity.publicKey == annaRing.identity.publicKey)
        #expect(try cara.library.fetchAssets().count == 0)
        #expect(try cara.library.statistics().quarantined[.sealed] ?? 0 >= 1)
        // The key record on the server opens with the readers' ring, and with no identity Cara holds.
        let added = try #require(try camera.library.allEventsForTests().first).object
        let record = try #require(try server.store.keyEntry(libraryID: 1, name: KeyStoreName.asset(added)))
        #expect(try WrappedAssetKey.open(asset: added, sealedToIdentity: record, ring: annaRing).writer == "camera")
        for identity in caraRing.identities {
            #expect(throws: CryptoError.self) { try WrappedAssetKey.open(asset: added, sealedToIdentity: record, identity: identity) }
        }

        // Cara's old identity cannot enrol a new device: the codes differ, and a ring Cara sealed is refused.
        let dave = try Device("dave-phone", server: server, directory: directory, clock: clock, seed: 5)
        try await dave.sync()
        guard case .awaitingEnrolment(let daveCode?) = dave.library.encryptionStatus,
            let daveKey = dave.library.devicePublicKey
        else {
            Issue.record("dave should await enrolment with a code")
            return
        }
        #expect(try cara.library.enrolmentCode(for: daveKey) != daveCode)
        #expect(try anna.library.enrolmentCode(for: daveKey) == daveCode)
        let fromCara = try dave.library.absorbKeyStore([KeyStoreName.ring(for: "dave-phone"): try caraRing.wrapped(for: daveKey)])
        #expect(fromCara.problems.contains { $0.contains("belongs to another library") })
        if case .awaitingEnrolment = dave.library.encryptionStatus {} else { Issue.record("dave should still wait") }
        let request = try #require(try await anna.engine.enrolmentRequests().first { $0.device == "dave-phone" })
        #expect(request.code == daveCode)
        try await anna.engine.approve(request)
        try await dave.sync()
        #expect(try dave.library.fetchAssets().count == 1)
        #expect(try dave.library.viewsForTests() == ben.library.viewsForTests())
        #expect(try dave.library.statistics().quarantined.isEmpty)
    }

    @Test("a readOnly device reads an encrypted library but cannot enrol others: the server's refusal is the error")
    func readOnlyCannotApprove() async throws {
        let world = try SyncWorld()
        let anna = try world.device("anna-phone", seed: 1)
        let frame = try world.device("frame", seed: 2, scope: .readOnly)
        let dave = try world.device("dave-phone", seed: 3)
        _ = try anna.library.enableEncryption()
        _ = try anna.library.createAlbumForTests("Visible to the frame")
        try await anna.sync()
        try await frame.sync()
        for request in try await anna.engine.enrolmentRequests() { try await anna.engine.approve(request) }
        try await frame.sync()
        #expect(try frame.library.fetchAssetCollections(with: .album).map(\.localizedTitle) == ["Visible to the frame"])
        try await dave.sync()
        let request = try #require(try await frame.engine.enrolmentRequests().first)
        let refused = await #expect(throws: SyncError.self) { try await frame.engine.approve(request) }
        #expect(refused?.description.contains("only a readWrite device may seal the key ring") == true)
        try await dave.sync()
        if case .awaitingEnrolment = dave.library.encryptionStatus {} else { Issue.record("dave should still wait") }
    }

    @Test("a plain library with changes of its own refuses to sync with an encrypted one, and sends nothing")
    func plainWithChangesRefused() async throws {
        let world = try SyncWorld()
        let server = world.server
        let anna = try world.device("anna-phone", seed: 1)
        let ben = try world.device("ben-tablet", seed: 2)
        _ = try anna.library.enableEncryption()
        _ = try anna.library.createAlbumForTests("Encrypted")
        try await anna.sync()
        _ = try ben.library.createAlbumForTests("Plain Title Never Sent")
        let error = await #expect(throws: SyncError.self) { try await ben.sync() }
        #expect(error?.description.contains("nothing was sent") == true)
        let stored = try everything(under: server.directory.url)
        #expect(stored.allSatisfy { $0.bytes.firstRange(of: Array("Plain Title Never Sent".utf8)) == nil })
        #expect(try ben.library.statistics().pendingEvents == 1)
    }

    @Test(
        "purging an asset destroys its key on every device and on the server: its payloads and bytes stay sealed, verify passes, rebuild gives the same views"
    )
    func cryptoShredding() async throws {
        let world = try SyncWorld()
        let (server, directory) = (world.server, world.directory)
        let anna = try world.device("anna-phone", seed: 1, encrypted: true)
        let ben = try world.device("ben-tablet", seed: 2)
        // No thumbnails: the counts of blobs and events below are the originals' (RenditionSyncTests
        // shreds renditions).
        let assets = try await sharedAlbumOfTwo(anna, ben, from: directory, makesThumbnails: false)
        #expect(try ben.library.fetchAssets().count == 2)
        let doomed = try #require(LocalIdentifier(assets[0])).uuid
        let resource = try #require(try anna.library.resources(for: assets[0]).first)
        let doomedEvents = try anna.library.allEventsForTests().filter { $0.object == doomed && $0.type != EventType.assetPurged.rawValue }
        let assetKeyID = try #require(doomedEvents.first?.seal?.keyID)
        #expect(KeyKind.of(assetKeyID) == .asset)
        // Both keys went up in the pack of the block that made the assets, with their blobs' names.
        let entry = "asset/\(doomed.uuidString.lowercased())"
        let kept = try #require(LocalIdentifier(assets[1])).uuid
        let pack = try #require(
            try anna.library.readDatabase {
                try PhotoLibrary.pack(of: doomed, in: $0)
            })
        #expect(try server.store.keyEntry(libraryID: 1, name: pack) != nil)
        #expect(try server.store.keyEntries(libraryID: 1, after: 0).entries.filter { $0.name.hasPrefix("asset/") }.isEmpty)

        try anna.library.performChangesAndWait { try $0.deleteAssets([assets[0]]) }
        try anna.library.performChangesAndWait { try $0.purgeAssets([assets[0]]) }
        try await anna.sync()
        try await ben.sync()

        // The key is gone everywhere: the pack that held it is replaced by the other asset's key on
        // its own. What any device still holds opens none of the asset's payloads or bytes.
        #expect(try server.store.keyEntry(libraryID: 1, name: entry) == nil)
        #expect(try server.store.keyEntry(libraryID: 1, name: pack) == nil)
        #expect(
            try server.store.keyEntries(libraryID: 1, after: 0).entries.map(\.name).filter {
                $0.hasPrefix("asset/") || $0.hasPrefix("pack/")
            } == [
                "asset/\(kept.uuidString.lowercased())"
            ])
        for device in [anna, ben] {
            #expect(device.library.encryption.snapshot.assetKeys[doomed] == nil)
            #expect(
                try device.library.readDatabase {
                    try $0.firstRow("SELECT key IS NULL FROM e2e_asset_keys WHERE asset = ?", [doomed.bytes]) { $0.int64(0) }
                } == 1)
            #expect(!device.library.resources.contains(resource.sha256))
            #expect(try device.library.fetchAssets().count == 1)
            #expect(try device.library.statistics().quarantined.isEmpty)
            let held = device.library.encryption.snapshot
            var keys = held.assetKeys.all.values.map(\.key) + (held.ring?.generations.map(\.key) ?? [])
            keys += keys.map(PayloadSeal.payloadKey(of:))
            for event in doomedEvents {
                for key in keys { #expect((try? PayloadSeal.open(event, payloadKey: key)) == nil) }
            }
            // Of the two blobs, only the kept asset's opens with any key still held.
            let blobs = try everything(under: server.directory.url).filter { $0.path.contains("/blobs/") }
            #expect(blobs.count == 2)
            let opening = blobs.filter { blob in
                (held.assetKeys.all.values.map(\.key) + (held.ring?.generations.map(\.key) ?? [])).contains { key in
                    (try? ResourceCipher.decrypt(
                        fileAt: URL(fileURLWithPath: blob.path), to: directory.file("attempt"), key: PhotoLibrary.resourceKey(of: key)))
                        != nil
                }
            }
            #expect(opening.count == 1)
        }
        // The chains verify, the views are the fold of the log (`verify --deep`: a refold
        // leaves nothing of the purged asset waiting for its key), a rebuild gives the same
        // views, and both devices hold the same views.
        #expect(try anna.library.verify() == ben.library.verify())
        #expect(try anna.library.verifyViews().isIntact && ben.library.verifyViews().isIntact)
        let annaViews = try anna.library.viewsForTests()
        try anna.library.rebuild()
        try ben.library.rebuild()
        #expect(try anna.library.viewsForTests() == annaViews)
        #expect(try ben.library.viewsForTests() == annaViews)
        // The history says the asset existed and who purged it, nothing of its content.
        let history = try ben.library.history(of: assets[0]).entries
        #expect(history.map(\.type) == ["asset.created", "asset.deleted", "asset.purged"])
        #expect(history.last?.device == "anna-phone")
        #expect(history.prefix(2).allSatisfy { $0.changes.isEmpty })

        // A device enrolled afterwards folds the same views.
        let cara = try world.device("cara-laptop", seed: 3)
        try await cara.sync()
        for request in try await anna.engine.enrolmentRequests() { try await anna.engine.approve(request) }
        try await cara.sync()
        #expect(try cara.library.viewsForTests() == annaViews)
    }

    @Test(
        "two devices that purge two assets of one key pack at once: neither key stays on the server, the pack's other keys do, and a new device reads the rest"
    )
    func concurrentPurgesOfOnePack() async throws {
        let world = try SyncWorld()
        let server = world.server
        let anna = try world.device("anna-phone", seed: 1, encrypted: true)
        let ben = try world.device("ben-tablet", seed: 2)
        let assets = try anna.library.performChangesAndWait { changes in
            try (0..<4).map { _ in
                try changes.createImageRecord(width: 40, height: 30, creationDate: nil).placeholderForCreatedAsset.localIdentifier
            }
        }
        let ids = try assets.map { try #require(LocalIdentifier($0)).uuid }
        try await anna.sync()
        try await ben.sync()
        for request in try await anna.engine.enrolmentRequests() { try await anna.engine.approve(request) }
        try await ben.sync()
        #expect(try ben.library.fetchAssets().count == 4)
        let names = try server.store.keyEntries(libraryID: 1, after: 0).entries.map(\.name)
        #expect(names.filter { $0.hasPrefix("pack/") }.count == 1 && !names.contains { $0.hasPrefix("asset/") })

        // Each purges one asset of the pack before it hears of the other's purge.
        try anna.library.performChangesAndWait { try $0.deleteAssets([assets[0]]) }
        try anna.library.performChangesAndWait { try $0.purgeAssets([assets[0]]) }
        try ben.library.performChangesAndWait { try $0.deleteAssets([assets[1]]) }
        try ben.library.performChangesAndWait { try $0.purgeAssets([assets[1]]) }
        let first = try await anna.sync()
        let second = try await ben.sync()
        #expect(first.encryptionNotes.isEmpty && second.encryptionNotes.isEmpty, "\(first.encryptionNotes) \(second.encryptionNotes)")
        try await anna.sync()
        try await ben.sync()

        // The server holds the two other keys on their own, and neither purged key nor the pack.
        let held = try server.store.keyEntries(libraryID: 1, after: 0).entries.map(\.name).filter {
            $0.hasPrefix("asset/") || $0.hasPrefix("pack/")
        }
        #expect(held == ids[2...].map(KeyStoreName.asset).sorted())
        for device in [anna, ben] {
            #expect(try device.library.fetchAssets().count == 2)
            #expect(try device.library.statistics().quarantined.isEmpty)
            for purged in ids[..<2] { #expect(device.library.encryption.snapshot.assetKeys[purged] == nil) }
            #expect(try device.library.pendingKeyEntries().isEmpty)
        }
        #expect(try anna.library.viewsForTests() == ben.library.viewsForTests())

        // A device enrolled afterwards takes the two keys and folds the same views.
        let cara = try world.device("cara-laptop", seed: 3)
        try await cara.sync()
        for request in try await anna.engine.enrolmentRequests() { try await anna.engine.approve(request) }
        try await cara.sync()
        #expect(Set(cara.library.encryption.snapshot.assetKeys.all.keys) == Set(ids[2...]))
        #expect(try cara.library.viewsForTests() == anna.library.viewsForTests())
    }

    @Test(
        "a purge of one asset of a large pack publishes the other keys before it deletes the pack, even when they are too many for the purge's batch"
    )
    func purgeOfALargePack() async throws {
        let world = try SyncWorld()
        let server = world.server
        let anna = try world.device("anna-phone", seed: 1, encrypted: true)
        // Two packs (4,096 and 1,104 keys); a purge of one asset of each replaces both by 5,198
        // keys of their own, more than one push batch carries.
        let count = KeyStoreBody.maximumChanges + 200
        let assets = try anna.library.performChangesAndWait { changes in
            try (0..<count).map { _ in
                try changes.createImageRecord(width: 40, height: 30, creationDate: nil).placeholderForCreatedAsset.localIdentifier
            }
        }
        try await anna.sync()
        #expect(try server.store.keyEntries(libraryID: 1, after: 0).entries.filter { $0.name.hasPrefix("pack/") }.count == 2)
        let purged = [assets[7], assets[AssetKeyPack.maximumRecords + 4]]
        try anna.library.performChangesAndWait { try $0.deleteAssets(purged) }
        try anna.library.performChangesAndWait { try $0.purgeAssets(purged) }
        let report = try await anna.sync()
        #expect(report.encryptionNotes.isEmpty, "\(report.encryptionNotes)")
        let names = try server.store.keyEntries(libraryID: 1, after: 0).entries.map(\.name)
        #expect(!names.contains { $0.hasPrefix("pack/") })
        #expect(names.filter { $0.hasPrefix("asset/") }.count == count - 2)
        for asset in purged { #expect(!names.contains(KeyStoreName.asset(try #require(LocalIdentifier(asset)).uuid))) }

        let ben = try world.device("ben-tablet", seed: 2)
        try await ben.sync()
        for request in try await anna.engine.enrolmentRequests() { try await anna.engine.approve(request) }
        try await ben.sync()
        #expect(try ben.library.fetchAssets().count == count - 2)
        #expect(try ben.library.statistics().quarantined.isEmpty)
    }

    @Test(
        "an add-only device adds photos that readers open with their metadata and bytes, holds nothing that opens anything else, and cannot replace an asset's key"
    )
    func addOnlyDeviceWritesWithoutReading() async throws {
        let world = try SyncWorld()
        let (server, directory) = (world.server, world.directory)
        let anna = try world.device("anna-phone", seed: 1)
        let camera = try world.device("camera", seed: 2, scope: .addOnly)
        _ = try anna.library.enableEncryption()
        let files = try media(in: directory)
        let annaAssets = try await anna.library.performChanges { changes in
            let assets = try changes.importAssets(fromFilesAt: [files[0]]).compactMap { result -> String? in
                if case .created(let request) = result { return request.placeholderForCreatedAsset.localIdentifier }
                return nil
            }
            try changes.createAlbum(title: Self.titles[0]).addAssets(assets)
            return assets
        }
        try await anna.sync()

        // The camera asks to join as an add-only device, with a code of its own; before it is approved it adds nothing.
        let waiting = try await camera.sync()
        #expect(waiting.encryptionNotes.contains { $0.contains("photoledger device approve camera") })
        guard case .awaitingEnrolment(let code?) = camera.library.encryptionStatus else {
            Issue.record("the camera should await approval with a code")
            return
        }
        let early = await #expect(throws: PhotoLibraryError.self) {
            try await camera.library.performChanges { _ = try $0.importAssets(fromFilesAt: [files[1]]) }
        }
        #expect(early?.message.contains("add-only device has not been approved yet") == true)
        let requests = try await anna.engine.enrolmentRequests()
        let request = try #require(requests.first)
        #expect(requests.count == 1 && request.device == "camera" && request.addOnly && request.code == code)
        try await anna.engine.approve(request)
        let approved = try await camera.sync()
        #expect(approved.encryptionNotes.contains { $0.contains("add-only device was approved") })
        #expect(camera.library.encryptionStatus == .addOnly)

        // Two imports on the camera: photos with EXIF and GPS and a movie, then a PNG on its own (no album).
        try await camera.library.performChanges { changes in
            let results = try changes.importAssets(fromFilesAt: [files[1], files[3]])
            #expect(results.allSatisfy { if case .created = $0 { true } else { false } })
        }
        try await camera.library.performChanges { _ = try $0.createAsset(fromImageAt: files[2]) }
        let report = try await camera.sync()
        #expect(report.encryptionNotes.isEmpty)
        #expect(report.uploadedResources == 3)
        let cameraEvents = try camera.library.allEventsForTests()
        #expect(cameraEvents.count == 3 && cameraEvents.allSatisfy { $0.seal.map { KeyKind.of($0.keyID) == .asset } == true })

        // Anna reads the camera's assets: metadata and bytes.
        try await anna.sync()
        #expect(try anna.library.statistics().quarantined.isEmpty)
        let all = try anna.library.fetchAssets()
        #expect(all.count == 4)
        let added = all.filter { !annaAssets.contains($0.localIdentifier) }
        #expect(added.count == 3)
        var names: [String: Asset] = [:]
        for asset in added {
            let resource = try #require(try anna.library.resources(for: asset).first)
            names[resource.originalFilename] = asset
            let original = try Data(contentsOf: try #require(files.first { $0.lastPathComponent == resource.originalFilename }))
            #expect(try anna.library.requestData(for: resource) == original)
        }
        #expect(Set(names.keys) == Set(Self.fileNames.dropFirst()))
        let beach = try #require(names[Self.fileNames[1]])
        #expect(beach.creationDate == Date(timeIntervalSince1970: 1_650_000_000))
        #expect(abs((beach.location?.latitude ?? 0) - 51.5007) < 0.001 && abs((beach.location?.longitude ?? 0) + 0.1246) < 0.001)
        #expect(names[Self.fileNames[3]]?.mediaType == .video)
        // Anna may edit them like any asset, and the chains agree.
        try anna.library.performChangesAndWait { try $0.assetChangeRequest(for: beach).setFavorite(true) }
        try await anna.sync()
        #expect(try anna.library.fetchAssets().first { $0.localIdentifier == beach.localIdentifier }?.isFavorite == true)

        // Nothing the camera holds or received opens any other asset's payload: not its device key, not the keys of its
        // own assets, not any key-sized run of bytes of its database or of the server's key store.
        let state = camera.library.encryption.snapshot
        #expect(state.ring == nil)
        let cameraObjects = Set(cameraEvents.map(\.object))
        #expect(Set(state.assetKeys.all.keys) == cameraObjects)
        let others = try anna.library.allEventsForTests().filter { $0.seal != nil && !cameraObjects.contains($0.object) }
        #expect(others.count >= 3)
        var candidates: [[UInt8]] = state.assetKeys.all.values.map(\.key.bytes) + [try #require(state.device).secretKey.bytes]
        let held = try camera.library.readDatabase { db in
            try ["e2e_state", "e2e_asset_keys", "e2e_outbox", "device_settings"].flatMap { table in
                try db.rows("SELECT * FROM \(table)") { row in (0..<row.columnCount).map { row.value($0) } }.joined()
            }
        }
        let received = try await camera.engine.keyStoreEntries().values
        for case .blob(let bytes) in held { candidates.append(bytes) }
        candidates += received
        for bytes in candidates where bytes.count >= SecretKey.length {
            for start in 0...(bytes.count - SecretKey.length) {
                let key = try SecretKey(bytes: Array(bytes[start..<start + SecretKey.length]))
                for event in others {
                    #expect((try? PayloadSeal.open(event, payloadKey: PayloadSeal.payloadKey(of: key))) == nil)
                    #expect((try? PayloadSeal.open(event, payloadKey: key)) == nil)
                }
            }
        }

        // The camera may not replace the key of an existing asset: the server refuses, saying why.
        let target = try #require(LocalIdentifier(annaAssets[0])).uuid
        let forged = try WrappedAssetKey(asset: target, keyID: KeyKind.asset.newIdentifier(), key: SecretKey()).sealed(
            toIdentity: try #require(state.libraryPublicKey), writer: try #require(state.device), grant: try #require(state.grant))
        try camera.library.withDatabase { try PhotoLibrary.queue($0, KeyStoreName.asset(target), forged, createOnly: true) }
        let refused = try await camera.sync()
        #expect(
            refused.encryptionNotes.contains {
                $0.contains("refused the key entry 'asset/\(target.uuidString.lowercased())'")
                    && $0.contains("an addOnly device may only create the key of a new asset")
            })
        #expect(try server.store.keyEntry(libraryID: 1, name: KeyStoreName.asset(target)) != forged)
        // Nor create one for an asset the log holds whose entry is gone.
        let png = try #require(names[Self.fileNames[2]])
        let orphan = try #require(LocalIdentifier(png.localIdentifier)).uuid
        _ = try server.store.applyKeyChanges(
            libraryID: 1, [KeyChange(name: KeyStoreName.asset(orphan), value: nil)], by: "anna-phone", at: 1)
        let again = try WrappedAssetKey(asset: orphan, keyID: KeyKind.asset.newIdentifier(), key: SecretKey()).sealed(
            toIdentity: try #require(state.libraryPublicKey), writer: try #require(state.device), grant: try #require(state.grant))
        try camera.library.withDatabase { try PhotoLibrary.queue($0, KeyStoreName.asset(orphan), again, createOnly: true) }
        let refusedAgain = try await camera.sync()
        #expect(refusedAgain.encryptionNotes.contains { $0.contains("exists in this library already") })
        #expect(try anna.library.verify().failure == nil)
    }

    @Test(
        "purging an asset whose creation was compacted into the archive shreds it there too: views, verify and rebuild agree on every device"
    )
    func purgeAfterCompaction() async throws {
        let world = try SyncWorld()
        let directory = world.directory
        let anna = try world.device("anna-phone", seed: 1, encrypted: true)
        let ben = try world.device("ben-tablet", seed: 2)
        let assets = try await sharedAlbumOfTwo(anna, ben, from: directory, makesThumbnails: true)
        _ = try anna.library.createAlbumForTests("Later")
        try await anna.sync()
        try await ben.sync()
        try await anna.sync()
        let doomed = try #require(LocalIdentifier(assets[0])).uuid
        for device in [anna, ben] {
            let result = try await device.engine.compactAcknowledgedEvents()
            #expect(result.report.archivedEvents > 0)
            let live = try device.library.readDatabase { db in
                try db.firstRow("SELECT count(*) FROM events WHERE object_id = ?", [doomed.bytes]) { $0.int64(0) }
            }
            #expect(live == 0, "the asset's creation is in the archive of \(device.library.device)")
        }

        let doomedResource = try #require(try anna.library.resources(for: assets[0]).first)
        try anna.library.performChangesAndWait { try $0.deleteAssets([assets[0]]) }
        try anna.library.performChangesAndWait { try $0.purgeAssets([assets[0]]) }
        try await anna.sync()
        try await ben.sync()

        // Nothing of the purged asset's content (its file name, the hash of its bytes) stays in any table, the
        // projection snapshot included.
        let name = Array(Self.fileNames[0].utf8)
        let hash = try #require(Hex.decode(doomedResource.sha256))
        let annaViews = try anna.library.viewsForTests()
        for device in [anna, ben] {
            let tables = try device.library.readDatabase { db in
                try db.rows("SELECT name FROM sqlite_master WHERE type = 'table'") { $0.text(0) }
            }
            for table in tables {
                let values = try device.library.readDatabase { db in
                    try db.rows("SELECT * FROM \(table)") { row in (0..<row.columnCount).map { row.value($0) } }.joined()
                }
                for value in values {
                    switch value {
                    case .text(let text):
                        #expect(
                            !text.contains(Self.fileNames[0]) && !text.contains(doomedResource.sha256), "\(device.library.device): \(table)"
                        )
                    case .blob(let bytes):
                        #expect(
                            bytes.firstRange(of: name) == nil && bytes.firstRange(of: hash) == nil, "\(device.library.device): \(table)")
                    default: break
                    }
                }
            }
            #expect(try device.library.fetchAssets().count == 1)
            #expect(try device.library.statistics().quarantined.isEmpty)
            #expect(device.library.encryption.snapshot.assetKeys[doomed] == nil)
            #expect(try device.library.verify().failure == nil)
            #expect(try device.library.verify().archivedEvents > 0)
            #expect(try device.library.verifyViews().isIntact, "\(device.library.device)")
            #expect(try device.library.viewsForTests() == annaViews, "\(device.library.device)")
            try device.library.rebuild()
            #expect(try device.library.viewsForTests() == annaViews, "\(device.library.device) after a rebuild")
        }
        // The renditions the import recorded stay in the history too, as events without content.
        let history = try ben.library.history(of: assets[0]).entries
        let recorded = EventType.assetRenditionRecorded.rawValue
        #expect(history.map(\.type).filter { $0 != recorded } == ["asset.created", "asset.deleted", "asset.purged"])
        #expect(history.contains { $0.type == recorded })
        #expect(history.dropLast().allSatisfy { $0.changes.isEmpty })
        #expect(try anna.library.fetchAssetCollections(with: .album).count == 2)
    }

    /// Imports two of ``media(in:)`` into Anna's encrypted library, in the album "Kept Album",
    /// and syncs them to Ben, enrolled by Anna; returns the two assets.
    func sharedAlbumOfTwo(_ anna: Device, _ ben: Device, from directory: TemporaryDirectory, makesThumbnails: Bool) async throws
        -> [String]
    {
        let files = Array(try media(in: directory).prefix(2))
        let assets = try await anna.library.performChanges { changes in
            let options = AssetImportOptions(makesThumbnails: makesThumbnails)
            let assets = try changes.importAssets(fromFilesAt: files, options: options).compactMap { result -> String? in
                if case .created(let request) = result { return request.placeholderForCreatedAsset.localIdentifier }
                return nil
            }
            try changes.createAlbum(title: "Kept Album").addAssets(assets)
            return assets
        }
        try await anna.sync()
        try await ben.sync()
        for request in try await anna.engine.enrolmentRequests() { try await anna.engine.approve(request) }
        try await ben.sync()
        return assets
    }

    /// Every file under `directory`, with its bytes.
    func everything(under directory: URL) throws -> [(path: String, bytes: [UInt8])] {
        var files: [(String, [UInt8])] = []
        let enumerator = FileManager.default.enumerator(at: directory, includingPropertiesForKeys: [.isRegularFileKey])
        while let url = enumerator?.nextObject() as? URL {
            guard (try url.resourceValues(forKeys: [.isRegularFileKey])).isRegularFile == true else { continue }
            files.append((url.path, try [UInt8](Data(contentsOf: url))))
        }
        return files
    }
}

extension PhotoLibrary {
    func allEventsForTests() throws -> [Event] {
        try readDatabase { db in
            var events: [Event] = []
            try EventLog(db).forEach { events.append($0.event) }
            return events
        }
    }

    /// The projection tables, row by row.
    func viewsForTests() throws -> [String: [[SQLValue]]] {
        try readDatabase { db in
            var dump: [String: [[SQLValue]]] = [:]
            for table in Projection.tables {
                dump[table] = try db.rows("SELECT * FROM \(table) ORDER BY 1, 2") { row in (0..<row.columnCount).map { row.value($0) } }
            }
            return dump
        }
    }

    func createAlbumForTests(_ title: String) throws -> String {
        try performChangesAndWait { try $0.createAlbum(title: title).placeholderForCreatedAssetCollection.localIdentifier }
    }
}
