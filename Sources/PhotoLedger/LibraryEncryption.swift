import Foundation
import LedgerCore
import LedgerCrypto
import LedgerStore
import Synchronization

/// Where a library stands with end-to-end encryption.
public enum EncryptionStatus: Sendable, Hashable {
    /// Payloads and resources travel in the clear (for a trusted server).
    case plain
    /// Encrypted, but this device holds no key yet: it waits to be enrolled by an enrolled device.
    case awaitingEnrolment(code: String?)
    /// Encrypted, and this device holds the library's key ring.
    case enrolled
    /// Encrypted, and this add-only device was approved: it adds assets sealed for the library's
    /// readers, and holds no key that opens anything else.
    case addOnly
}

extension PhotoLibrary {
    // MARK: Status

    /// Whether this library is end-to-end encrypted, and whether this device holds its keys.
    public var encryptionStatus: EncryptionStatus {
        let state = encryption.snapshot
        guard state.enabled else { return .plain }
        guard state.ring != nil else {
            if state.addOnly && state.grant != nil { return .addOnly }
            let code = state.libraryPublicKey.flatMap { library in
                state.device.map {
                    ShortAuthenticationCode.code(libraryPublicKey: library, devicePublicKey: $0.publicKey, addOnly: state.addOnly)
                }
            }
            return .awaitingEnrolment(code: code)
        }
        return .enrolled
    }

    /// This device's public key in an encrypted library (nil in a plain one).
    public var devicePublicKey: [UInt8]? { encryption.snapshot.device?.publicKey }

    // MARK: Making and joining encrypted libraries

    /// Makes this library end-to-end encrypted: a new key ring, this device's key pair, and a
    /// recovery key, returned to be shown once. Only a library without events can start
    /// encrypted (its events could not be sealed afterwards).
    ///
    /// - Throws: ``PhotoLibraryError`` `.changeNotSupported` when the library already holds
    ///   events or is already encrypted.
    public func enableEncryption() throws -> RecoveryKey {
        let recovery = RecoveryKey.generate()
        let ring = KeyRing.generate()
        let device = BoxKeyPair()
        try withDatabase { db in
            guard try db.firstRow("SELECT 1 FROM e2e_state", [], { _ in true }) == nil else {
                throw PhotoLibraryError(.changeNotSupported, "this library is already end-to-end encrypted")
            }
            guard try EventLog(db).count() == 0 else {
                throw PhotoLibraryError(
                    .changeNotSupported,
                    "this library already holds events, which cannot be encrypted afterwards; make a new library with encryption and import into it"
                )
            }
            try db.execute(
                "INSERT INTO e2e_state (id, device_secret, ring, library_public) VALUES (1, ?, ?, ?)",
                [device.secretKey.bytes, ring.serialized, ring.identity.publicKey])
            try Self.queue(db, KeyStoreName.libraryPublicKey, ring.identity.publicKey, createOnly: true)
            try Self.queue(db, KeyStoreName.recoveryRing, ring.wrapped(for: recovery), createOnly: true)
            try Self.queue(db, KeyStoreName.device(self.device), device.publicKey)
            try Self.queue(db, KeyStoreName.ring(for: self.device), try ring.wrapped(for: device.publicKey))
            try encryption.load(db)
        }
        return recovery
    }

    /// Prepares this device to join an encrypted library: makes its key pair (kept), so its
    /// public key can be published for an enrolled device to approve. Returns the public key.
    ///
    /// A device whose token allows adding assets only (addOnly) asks to join as an add-only
    /// device: its key is published as `writer/NAME`, its code is an add-only code, and an
    /// approval gives it an `AddOnlyGrant` instead of the key ring.
    ///
    /// - Throws: ``PhotoLibraryError`` `.changeNotSupported` when the library holds changes of
    ///   its own (a device joins with a new, empty library).
    @discardableResult
    public func prepareEnrolment() throws -> [UInt8] {
        if let key = encryption.snapshot.device?.publicKey { return key }
        let device = BoxKeyPair()
        try withDatabase { db in
            let own = try db.firstRow("SELECT count(*) FROM events WHERE device_id = ?", [self.device.rawValue]) { $0.int64(0) } ?? 0
            guard own == 0 else {
                throw PhotoLibraryError(
                    .changeNotSupported,
                    "this library holds \(own) changes of its own that were made without encryption; join the encrypted library with a new library"
                )
            }
            try db.execute("INSERT INTO e2e_state (id, device_secret) VALUES (1, ?)", [device.secretKey.bytes])
            if binding.withLock({ $0.scope }) == .addOnly {
                try db.execute("INSERT OR REPLACE INTO device_settings (key, value) VALUES ('e2e.addOnly', x'01')")
                try Self.queue(db, KeyStoreName.writer(self.device), device.publicKey)
            } else {
                try Self.queue(db, KeyStoreName.device(self.device), device.publicKey)
            }
            try encryption.load(db)
        }
        return device.publicKey
    }

    /// The short authentication code an enrolled device shows for `devicePublicKey`: the new
    /// device shows the same code when no one substituted a key on the way.
    ///
    /// - Throws: ``PhotoLibraryError`` `.accessRestricted` when this device is not enrolled.
    public func enrolmentCode(for devicePublicKey: [UInt8], addOnly: Bool = false) throws -> String {
        let ring = try enrolledRing("compute an enrolment code")
        return ShortAuthenticationCode.code(libraryPublicKey: ring.identity.publicKey, devicePublicKey: devicePublicKey, addOnly: addOnly)
    }

    /// Approves `device`, whose public key is `devicePublicKey`: the key ring is sealed for it and
    /// queued for the server (the next sync publishes it). Call it only after the user confirmed
    /// that both devices show the same ``enrolmentCode(for:addOnly:)``.
    ///
    /// An add-only device (`addOnly`) receives no key: an `AddOnlyGrant` from the library's
    /// identity, with which it seals the keys of the assets it adds for the library's readers.
    public func approveEnrolment(of device: DeviceID, publicKey devicePublicKey: [UInt8], addOnly: Bool = false) throws {
        let ring = try enrolledRing("approve a device")
        try withDatabase { db in
            if addOnly {
                try Self.queue(
                    db, KeyStoreName.grant(for: device),
                    try AddOnlyGrant.make(identity: ring.identity, devicePublicKey: devicePublicKey, device: device.rawValue))
            } else {
                try Self.queue(db, KeyStoreName.ring(for: device), try ring.wrapped(for: devicePublicKey))
            }
        }
    }

    /// Revokes add-only device `device`: its grant and public key are deleted from the server at
    /// the next sync. It never held a key, so no key changes; revoke its token on the server so
    /// it cannot add more.
    public func revokeAddOnlyDevice(_ device: DeviceID) throws {
        _ = try enrolledRing("revoke a device")
        try withDatabase { db in
            try Self.queue(db, KeyStoreName.grant(for: device), nil)
            try Self.queue(db, KeyStoreName.writer(device), nil)
        }
    }

    /// Revokes `device`: a new library key generation seals every event from now on, and a new
    /// library identity takes over (add-only devices seal new assets' keys to it, new devices
    /// are enrolled to it); the ring (with both) is sealed again for each remaining device in
    /// `remaining` (name and public key) and for the recovery key when given, and the grant of
    /// each add-only device in `writers` (name, public key, and the grant the server holds) is
    /// renewed for the new identity, endorsed by the older ones. The revoked device's ring and
    /// key are deleted from the server at the next sync. Events and assets made before stay
    /// readable to the revoked device if it kept its copy: revocation protects what comes after it.
    ///
    /// A grant is renewed only when one of this ring's identities made it for that name and
    /// key: a key the server substituted gets nothing.
    public func revoke(
        _ device: DeviceID, remaining: [(DeviceID, [UInt8])], writers: [(DeviceID, publicKey: [UInt8], grant: [UInt8])] = [],
        recovery: RecoveryKey?
    ) throws {
        guard device != self.device else {
            throw PhotoLibraryError(.changeNotSupported, "a device cannot revoke itself; revoke it from another enrolled device")
        }
        var ring = try enrolledRing("revoke a device")
        let older = ring.identities
        ring.rotate()
        ring.rotateIdentity()
        try withDatabase { db in
            try db.execute("UPDATE e2e_state SET ring = ?, library_public = ? WHERE id = 1", [ring.serialized, ring.identity.publicKey])
            for (name, key) in remaining where name != device {
                try Self.queue(db, KeyStoreName.ring(for: name), try ring.wrapped(for: key))
            }
            if let recovery { try Self.queue(db, KeyStoreName.recoveryRing, ring.wrapped(for: recovery)) }
            try Self.queue(db, KeyStoreName.currentIdentity, ring.identity.publicKey)
            for (name, key, grant) in writers where name != device {
                let held = AddOnlyGrant.grant(in: grant)
                guard older.contains(where: { AddOnlyGrant.grantee(of: held, devicePublicKey: key, identity: $0) == name.rawValue }) else {
                    continue
                }
                try Self.queue(
                    db, KeyStoreName.grant(for: name),
                    try AddOnlyGrant.renewed(identity: ring.identity, older: older, devicePublicKey: key, device: name.rawValue))
            }
            try Self.queue(db, KeyStoreName.ring(for: device), nil)
            try Self.queue(db, KeyStoreName.device(device), nil)
            try encryption.load(db)
        }
    }

    /// Takes a key ring that another device sealed for this one (or that the recovery key
    /// opened): generations this device lacks are added, and events sealed with them fold.
    ///
    /// - Throws: ``PhotoLibraryError`` `.accessRestricted` when the ring is for another library.
    @discardableResult
    func adopt(_ ring: KeyRing) throws -> Bool {
        let state = encryption.snapshot
        var merged = ring
        if let held = state.ring {
            guard held.founding.publicKey == ring.founding.publicKey else {
                throw PhotoLibraryError(
                    .accessRestricted,
                    "the key ring offered for this device belongs to another library (its identity key differs); nothing was changed")
            }
            guard
                ring.generations.contains(where: { held.key($0.id) == nil })
                    || ring.identities.contains(where: { held.identity(publicKey: $0.publicKey) == nil })
            else { return false }
            merged = held
            for generation in ring.generations where held.key(generation.id) == nil { merged.add(generation) }
            for identity in ring.identities { merged.add(identity: identity) }
        } else if let expected = state.libraryPublicKey, expected != ring.identity.publicKey {
            throw PhotoLibraryError(
                .accessRestricted,
                "the key ring offered for this device belongs to another library (its identity key differs); nothing was changed")
        }
        try withDatabase { db in
            if try db.firstRow("SELECT 1 FROM e2e_state", [], { _ in true }) == nil {
                throw PhotoLibraryError(.changeNotSupported, "this library has no encryption keys; run `photoledger device enroll` first")
            }
            try db.execute(
                "UPDATE e2e_state SET ring = ?, library_public = ? WHERE id = 1", [merged.serialized, merged.identity.publicKey])
            try encryption.load(db)
        }
        try refoldSealed()
        return true
    }

    /// Restores access with the recovery key: opens the recovery copy of the ring that the
    /// server keeps (`sealedRing`), and enrols this device with it.
    ///
    /// - Throws: ``PhotoLibraryError`` `.accessRestricted` when the recovery key does not open it.
    public func restore(with recovery: RecoveryKey, sealedRing: [UInt8]) throws {
        let ring: KeyRing
        do {
            ring = try KeyRing(unwrapping: sealedRing, with: recovery)
        } catch let error as CryptoError {
            throw PhotoLibraryError(.accessRestricted, "could not restore the library's keys: \(error.message); nothing was changed")
        }
        try prepareEnrolment()
        try adopt(ring)
        let device = encryption.snapshot.device!
        try withDatabase { try Self.queue($0, KeyStoreName.ring(for: self.device), try ring.wrapped(for: device.publicKey)) }
    }

    func enrolledRing(_ action: String) throws -> KeyRing {
        let state = encryption.snapshot
        guard state.enabled else {
            throw PhotoLibraryError(.changeNotSupported, "could not \(action): this library is not end-to-end encrypted")
        }
        guard let ring = state.ring else {
            throw PhotoLibraryError(
                .accessRestricted,
                "could not \(action): this device holds no key of the encrypted library yet; run `photoledger device enroll` and approve it on an enrolled device"
            )
        }
        return ring
    }

    // MARK: Keys arriving and leaving

    /// Asset keys that arrived from the server's key store, on their own (`sealed`, each sealed
    /// under a library key generation or, by an add-only device, to the library's identity) or
    /// in packs (`packs`, by entry name): those that open are stored, and events sealed with them
    /// fold; for a key held already, the names of its resources' blobs are added (they are added
    /// once the resources are uploaded, or an edit made new ones). Keys this device made or
    /// destroyed (purged assets) are never taken (back). Where an asset comes twice, its key in
    /// a pack counts for the pack it is in, its entry of its own for its key; their blobs are
    /// merged. Returns how many keys were new, and whether the key store's read position
    /// `position` was recorded with them (when given: it is, whenever keys are stored). With
    /// `inBackground`, the keys' rows are written by a ``BackgroundKeyWrite``.
    @discardableResult
    func adoptAssetKeys(
        _ sealed: [(asset: UUID, value: [UInt8])], packs: [(name: String, value: [UInt8])] = [], through position: Int64? = nil,
        inBackground: Bool = false
    ) throws -> (count: Int, positionRecorded: Bool) {
        let state = encryption.snapshot
        guard let ring = state.ring, !sealed.isEmpty || !packs.isEmpty else { return (0, false) }
        // The keys of assets made here (this device's record of their blobs is the one that
        // counts) and keys destroyed here (never taken back).
        let settled = Set(
            try readDatabase { db in
                try db.rows("SELECT asset FROM e2e_asset_keys WHERE own = 1 OR key IS NULL") { UUID(bytes: $0.blob(0)) }.compactMap { $0 }
            })
        var wrappingKeys: [UInt32: SecretKey] = [:], packKeys: [UInt32: SecretKey] = [:]
        for (id, key) in ring.generations {
            wrappingKeys[id] = WrappedAssetKey.wrappingKey(of: key)
            packKeys[id] = AssetKeyPack.packKey(of: key)
        }
        // Every record that opens, with the index in `packNames` of the pack it came in, -1 for
        // none (a pack named twice: its later entry).
        var records: [(record: WrappedAssetKey, pack: Int)] = []
        var packNames: [String] = []
        var laterPacks = Set<String>()
        let unsealing = packKeys
        // Opened on two threads: a pack of 4,096 keys is one AEAD open, but reading its records
        // makes 4,096 keys.
        let openedPacks = Self.mapInHalves(packs.reversed().filter { laterPacks.insert($0.name).inserted }, minimumHalf: 1) {
            name, value -> (name: String, pack: AssetKeyPack)? in
            guard let generation = AssetKeyPack.generation(of: value), let key = unsealing[generation],
                let pack = try? AssetKeyPack(name: name, unsealing: value, packKey: key)
            else { return nil }
            return (name, pack)
        }
        records.reserveCapacity(openedPacks.reduce(sealed.count) { $0 + ($1?.pack.records.count ?? 0) })
        for case let (name, pack)? in openedPacks {
            let index = packNames.count
            packNames.append(name)
            for record in pack.records where !settled.contains(record.asset) { records.append((record, index)) }
        }
        // An asset named twice: its later entry.
        var later = Set<UUID>()
        let arriving = sealed.reversed().filter { !settled.contains($0.asset) && later.insert($0.asset).inserted }
        let keys = wrappingKeys
        // Opened on two threads: each is an AEAD open (or two X25519 agreements), by the ten thousand.
        let opened = Self.mapInHalves(arriving) { asset, value -> WrappedAssetKey? in
            if WrappedAssetKey.isSealedToIdentity(value) {
                // Added by an add-only device: sealed to the identity, with the device's grant.
                return (try? WrappedAssetKey.open(asset: asset, sealedToIdentity: value, ring: ring))?.record
            }
            guard let wrapping = WrappedAssetKey.identifiers(of: value).flatMap({ keys[$0.generation] }) else { return nil }
            return try? WrappedAssetKey(asset: asset, unsealing: value, wrappingKey: wrapping)
        }
        for record in opened { if let record { records.append((record, -1)) } }
        guard !records.isEmpty else { return (0, false) }
        // In asset order (the order of the table's key, which the upsert below writes in), an
        // asset that comes twice merged: the key of its entry of its own (the later in `records`),
        // the pack it is in, the blobs of both.
        var order = Array(records.indices)
        order.sort {
            records[$0].record.asset.precedes(records[$1].record.asset) || (records[$0].record.asset == records[$1].record.asset && $0 < $1)
        }
        var merged: [(record: WrappedAssetKey, pack: Int)] = []
        merged.reserveCapacity(order.count)
        for index in order {
            let next = records[index]
            if let last = merged.last, last.record.asset == next.record.asset {
                var record = next.record
                record.blobs.merge(last.record.blobs) { newer, _ in newer }
                merged[merged.count - 1] = (record, next.pack >= 0 ? next.pack : last.pack)
            } else {
                merged.append(next)
            }
        }
        // Written in asset order with few statements: a large library's keys arrive by the ten
        // thousand, and one upsert each in random order cost more than opening them.
        var blobUpdates: [(asset: UUID, blobs: [[UInt8]: [UInt8]])] = []
        var adopted: [(record: WrappedAssetKey, pack: Int)] = []
        var taken: [(asset: UUID, id: UInt32, key: SecretKey)] = []
        adopted.reserveCapacity(merged.count)
        taken.reserveCapacity(merged.count)
        for (record, pack) in merged {
            if let held = state.assetKeys[record.asset], held.id == record.keyID {
                if !record.blobs.isEmpty { blobUpdates.append((record.asset, record.blobs)) }
            } else {
                adopted.append((record, pack))
                taken.append((record.asset, record.keyID, record.key))
            }
        }
        var members = Array(repeating: [UUID](), count: packNames.count)
        for (record, pack) in adopted where pack >= 0 { members[pack].append(record.asset) }
        let write: @Sendable (Database) throws -> Void = { [blobUpdates, adopted, packNames, members] db in
            let packNumbers = try packNames.map { try Self.packNumber($0, in: db) }
            for (asset, blobs) in blobUpdates {
                guard
                    let held = try db.firstRow(
                        "SELECT blobs FROM e2e_asset_keys WHERE asset = ? AND key IS NOT NULL", [asset.bytes], { $0.blob(0) })
                else { continue }
                var map = Self.blobMap(held)
                let count = map.count
                map.merge(blobs) { held, _ in held }
                if map.count != count {
                    try db.execute("UPDATE e2e_asset_keys SET blobs = ? WHERE asset = ?", [Self.blobColumn(map), asset.bytes])
                }
            }
            try Self.assetKeyUpsert.run(count: adopted.count, in: db) { row, values in
                let (record, pack) = adopted[row]
                values.append(uuid: record.asset)
                values.append(Int64(record.keyID))
                values.append(blob: record.key.bytes)
                values.append(blob: record.blobs.isEmpty ? [] : Self.blobColumn(record.blobs))
                if pack >= 0 { values.append(packNumbers[pack]) } else { values.appendNull() }
            }
            for (index, assets) in members.enumerated() { try Self.addMembers(assets, toPack: packNumbers[index], in: db) }
            if let position { try Self.recordKeyStorePosition(position, in: db) }
        }
        guard !taken.isEmpty else {
            try withDatabase(write)
            return (0, position != nil)
        }
        if inBackground {
            let write = BackgroundKeyWrite.start(
                in: self, cursor: position, holding: { [self, taken] in encryption.add(assetKeys: taken) }, write
            ) {
                [self, taken] in
                // The keys were not stored: the table holds again what the database holds (or,
                // when it cannot be read, loses the keys taken now, which the next sync reads again).
                do {
                    try readDatabase { try encryption.load($0) }
                } catch {
                    encryption.remove(assetKeys: Set(taken.map(\.asset)))
                }
            }
            pendingKeyWrite.withLock { $0 = write }
        } else {
            try withDatabase(write)
            encryption.add(assetKeys: taken)
        }
        try refoldSealed()
        return (taken.count, position != nil)
    }

    /// `transform` of every input, in input order: the second half on a thread of its own when
    /// it holds at least `minimumHalf` inputs.
    static func mapInHalves<Input: Sendable, Output: Sendable>(
        _ inputs: [Input], minimumHalf: Int = 512, _ transform: @escaping @Sendable (Input) -> Output
    ) -> [Output] {
        let half = inputs.count / 2
        guard half >= minimumHalf else { return inputs.map(transform) }
        let tail = Array(inputs[half...])
        let second = Mutex<[Output]>([])
        let finished = DispatchSemaphore(value: 0)
        Thread {
            let mapped = tail.map(transform)
            second.withLock { $0 = mapped }
            finished.signal()
        }.start()
        let first = inputs[..<half].map(transform)
        finished.wait()
        return first + second.withLock { $0 }
    }

    /// Stores arriving asset keys; a key this device made or destroyed is never replaced.
    private static let assetKeyUpsert = BatchInsert(
        "INSERT INTO e2e_asset_keys (asset, key_id, key, blobs, pack)", columns: 5,
        tail: """
            ON CONFLICT (asset) DO UPDATE SET key_id = excluded.key_id, key = excluded.key, blobs = excluded.blobs,
                pack = coalesce(excluded.pack, e2e_asset_keys.pack)
            WHERE e2e_asset_keys.key IS NOT NULL AND e2e_asset_keys.own = 0
            """)

    /// Folds again, when events wait sealed with keys that this device now holds.
    func refoldSealed() throws {
        let keys = encryption.payloadKeys
        guard let keys else { return }
        let sealed = try readDatabase { db in
            try db.rows(
                "SELECT DISTINCT e.key_id, e.object_id FROM quarantine q JOIN events e ON e.event_id = q.event_id WHERE q.kind = ?",
                [Int64(QuarantineKind.sealed.rawValue)]
            ) { (UInt32(truncatingIfNeeded: $0.int64(0)), UUID(bytes: $0.blob(1))) }
        }
        guard sealed.contains(where: { id, object in object.map { keys.payloadKey(id, object: $0) != nil } ?? false }) else { return }
        try finishKeyWrite()  // the keys stored before the views fold with them
        try rebuild()
    }

    // MARK: The server's key store

    /// Entries of the server's key store this device has to write (a value) or delete (nil);
    /// without the asset keys' entries (`asset/…`, `pack/…`) when `assetKeys` is false.
    package func pendingKeyEntries(assetKeys: Bool = true) throws -> [(name: String, value: [UInt8]?, createOnly: Bool)] {
        try readDatabase { db in
            try db.rows(
                assetKeys
                    ? "SELECT name, value, create_only FROM e2e_outbox ORDER BY name"
                    : "SELECT name, value, create_only FROM e2e_outbox WHERE name NOT GLOB 'asset/*' AND name NOT GLOB 'pack/*' ORDER BY name"
            ) {
                ($0.text(0), $0.isNull(1) ? nil : $0.blob(1), $0.int64(2) != 0)
            }
        }
    }

    /// The entries of the keys of `assets` this device has to write or delete, by name, then
    /// the packs of the change blocks `blocks` and the entries that the push of one of `assets`
    /// carries (a purge's replacement of a pack).
    package func pendingKeyEntries(ofAssets assets: Set<UUID>, blocks: Set<UUID> = []) throws -> [(
        name: String, value: [UInt8]?, createOnly: Bool
    )] {
        var entries = try pendingAssetKeyEntries(ofAssets: assets)
        var named = Set(entries.lazy.map(\.name))
        try readDatabase { db in
            for block in blocks.sorted(by: { $0.precedes($1) }) {
                let (first, last) = KeyStoreName.packRange(block: block)
                for entry in try db.rows(Self.pendingEntryRange, [first, last, Int64(Int32.max)], Self.pendingEntry)
                where named.insert(entry.name).inserted {
                    entries.append(entry)
                }
            }
            try db.forEachRow("SELECT name, value, create_only, carrier FROM e2e_outbox WHERE carrier IS NOT NULL ORDER BY name") { row in
                guard let carrier = UUID(bytes: row.blob(3)), assets.contains(carrier) else { return }
                let entry = Self.pendingEntry(row)
                if named.insert(entry.name).inserted { entries.append(entry) }
            }
        }
        return entries
    }

    /// The entries of the keys of `assets` this device has to write or delete, by name.
    private func pendingAssetKeyEntries(ofAssets assets: Set<UUID>) throws -> [(name: String, value: [UInt8]?, createOnly: Bool)] {
        // Most keys go up in packs: no names to make when no key waits on its own.
        guard !assets.isEmpty, try readDatabase({ try $0.firstRow(Self.anyPendingAssetEntry) { _ in true } }) == true else { return [] }
        let names = assets.map(KeyStoreName.asset).sorted()
        guard let first = names.first, let last = names.last else { return [] }
        let size = Self.pendingEntryLookupSize
        return try readDatabase { db in
            // The assets a push batch creates have UUIDv7 identifiers made in order, so their
            // names lie together in the outbox's name order: one range read finds them, unless
            // the range holds many other entries (then the names are looked up one by one).
            let limit = names.count * 4 + 16
            let range = try db.rows(Self.pendingEntryRange, [first, last, Int64(limit)], Self.pendingEntry)
            if range.count < limit {
                let wanted = Set(names)
                return range.filter { wanted.contains($0.name) }
            }
            // A statement per few hundred names (a push batch's assets go by the thousand), each
            // with as many names: the last one repeats its last name (one statement text to cache).
            var entries: [(name: String, value: [UInt8]?, createOnly: Bool)] = []
            entries.reserveCapacity(names.count)
            for start in stride(from: 0, to: names.count, by: size) {
                let part = names[start..<min(start + size, names.count)]
                let bound = Array(part) + Array(repeating: part.last!, count: size - part.count)
                entries += try db.rows(Self.pendingEntryLookup, bound, Self.pendingEntry)
            }
            return entries
        }
    }

    /// Whether the outbox holds an entry of an asset key of its own (`asset/…`: a range of its key).
    private static let anyPendingAssetEntry = "SELECT 1 FROM e2e_outbox WHERE name >= 'asset/' AND name < 'asset0' LIMIT 1"

    /// An outbox row read by ``pendingKeyEntries(ofAssets:)``.
    private static func pendingEntry(_ row: Statement) -> (name: String, value: [UInt8]?, createOnly: Bool) {
        (name: row.text(0), value: row.isNull(1) ? nil : row.blob(1), createOnly: row.int64(2) != 0)
    }

    /// The outbox entries whose names lie between two names, in name order, at most as many as asked.
    private static let pendingEntryRange =
        "SELECT name, value, create_only FROM e2e_outbox WHERE name BETWEEN ? AND ? ORDER BY name LIMIT ?"

    /// The names ``pendingKeyEntries(ofAssets:)`` looks up with one statement.
    private static let pendingEntryLookupSize = 250
    /// The outbox entries of ``pendingEntryLookupSize`` names, in name order.
    private static let pendingEntryLookup =
        "SELECT name, value, create_only FROM e2e_outbox WHERE name IN ("
        + Array(repeating: "?", count: pendingEntryLookupSize).joined(separator: ", ") + ") ORDER BY name"

    /// Forgets entries the server has taken (unless they were queued again since, with other
    /// bytes): one prepared statement run per entry, each a lookup of its name in the outbox's
    /// key (a large library's asset keys go by the thousand).
    package func keyEntriesPublished(_ entries: [(name: String, value: [UInt8]?)]) throws {
        try withDatabase { db in
            let written = try db.cachedStatement(Self.publishedEntryDelete, clearingBindings: false)
            for (name, value) in entries {
                guard let value else { continue }
                written.resetKeepingBindings()
                try written.bind(name, at: 1)
                try written.bind(value, at: 2)
                try written.step()
            }
            written.reset()
            for (name, value) in entries where value == nil {
                try db.execute("DELETE FROM e2e_outbox WHERE name = ? AND value IS NULL", [name])
            }
        }
    }

    /// Deletes the outbox entry of a name while it holds the bytes given.
    private static let publishedEntryDelete = PreparedSQL("DELETE FROM e2e_outbox WHERE name = ? AND value = ?")

    /// Queues a write (`value`) or a deletion (nil) of entry `name` for the server's key store;
    /// `carrier` names the asset whose push batch must carry it (see the outbox's `carrier`).
    static func queue(_ db: Database, _ name: String, _ value: [UInt8]?, createOnly: Bool = false, carrier: UUID? = nil) throws {
        try db.execute(
            """
            INSERT INTO e2e_outbox (name, value, create_only, carrier) VALUES (?, ?, ?, ?)
            ON CONFLICT (name) DO UPDATE SET value = excluded.value, create_only = excluded.create_only, carrier = excluded.carrier
            """,
            [name, value.map { SQLValue.blob($0) } ?? .null, Int64(createOnly ? 1 : 0), carrier.map { SQLValue.blob($0.bytes) } ?? .null])
    }

    /// Reads what the server's key store says about this device and the library (`entries` by
    /// name; see the form that takes the entries as a list).
    package func absorbKeyStore(_ entries: [String: [UInt8]]) throws -> KeyStoreAbsorption {
        try absorbKeyStore(entries.map { (name: $0.key, value: $0.value) })
    }

    /// Reads what the server's key store says about this device and the library: a ring
    /// sealed for this device is adopted (enrolment, or a new generation after a revocation),
    /// asset keys this device lacks are opened and stored. Returns what changed. `entries` come
    /// in the store's order; where a name comes twice, the later entry counts. The asset keys
    /// (a large library's come by the ten thousand) are read from the list as they are, the
    /// other entries looked up by name.
    ///
    /// `position` is the key store position the entries were read through: it becomes this
    /// device's read position once the device is enrolled (entries read before cannot be opened,
    /// and are read again), in the transaction that stores the keys. With
    /// `writingKeysInBackground`, the keys' rows are written on a thread of their own while the
    /// caller goes on (``BackgroundKeyWrite``): the keys count from the return, and every later
    /// write of the library waits for the rows.
    package func absorbKeyStore(
        _ list: [(name: String, value: [UInt8])], through position: Int64? = nil, writingKeysInBackground: Bool = false
    ) throws -> KeyStoreAbsorption {
        try finishKeyWrite()
        var absorption = try absorbKeyStoreEntries(list, through: position, inBackground: writingKeysInBackground)
        if let position, !absorption.positionRecorded, encryption.snapshot.isEnrolled {
            try withDatabase { try Self.recordKeyStorePosition(position, in: $0) }
            absorption.positionRecorded = true
        }
        return absorption
    }

    /// Moves the key store's read position forward to `position` (never back).
    static func recordKeyStorePosition(_ position: Int64, in db: Database) throws {
        try db.execute("UPDATE e2e_state SET key_cursor = max(key_cursor, ?) WHERE id = 1", [position])
    }

    private func absorbKeyStoreEntries(_ list: [(name: String, value: [UInt8])], through position: Int64?, inBackground: Bool) throws
        -> KeyStoreAbsorption
    {
        var entries: [String: [UInt8]] = [:]
        var assets: [(asset: UUID, value: [UInt8])] = []
        var packs: [(name: String, value: [UInt8])] = []
        assets.reserveCapacity(list.count)
        for (name, value) in list {
            if let asset = KeyStoreName.asset(in: name) {
                assets.append((asset, value))
            } else if KeyStoreName.isPack(name) {
                packs.append((name, value))
            } else {
                entries[name] = value
            }
        }
        var result = KeyStoreAbsorption()
        var state = encryption.snapshot
        if !state.enabled {
            result.serverEncrypted = entries[KeyStoreName.libraryPublicKey] != nil
            return result
        }
        result.serverEncrypted = true
        // Until it is enrolled or approved, a device computes its code from the newest identity
        // published (a revocation replaces it); afterwards only its keys say which identity counts.
        if state.ring == nil, state.grant == nil,
            let published = entries[KeyStoreName.currentIdentity] ?? entries[KeyStoreName.libraryPublicKey],
            published != state.libraryPublicKey
        {
            try withDatabase { db in
                try db.execute("UPDATE e2e_state SET library_public = ? WHERE id = 1", [published])
                try encryption.load(db)
            }
            state = encryption.snapshot
        }
        if state.addOnly && state.ring == nil {
            // An add-only device takes its grant, and nothing else: it holds no key to open entries with.
            if let entry = entries[KeyStoreName.grant(for: device)], let pair = state.device {
                guard let library = state.libraryPublicKey,
                    let (identity, grant) = AddOnlyGrant.accept(entry, trusted: library, device: pair, device: device.rawValue)
                else {
                    result.problems.append(
                        state.grant == nil
                            ? "the approval on the server for this add-only device does not come from the library's identity key; it was ignored"
                            : "the approval on the server for this add-only device changed, but not by the identity that approved it; it was ignored, and this device keeps sealing to that identity"
                    )
                    return result
                }
                guard identity != library || grant != state.grant else { return result }
                try withDatabase { db in
                    try db.execute("INSERT OR REPLACE INTO device_settings (key, value) VALUES ('e2e.addOnlyGrant', ?)", [grant])
                    try db.execute("UPDATE e2e_state SET library_public = ? WHERE id = 1", [identity])
                    try encryption.load(db)
                }
                result.enrolled = state.grant == nil
                result.identityRenewed = state.grant != nil && identity != library
            }
            return result
        }
        if let sealed = entries[KeyStoreName.ring(for: device)], let pair = state.device {
            do {
                let ring = try KeyRing(unwrapping: sealed, with: pair)
                result.enrolled = state.ring == nil
                result.newGenerations = try adopt(ring)
            } catch let error as CryptoError {
                result.problems.append(error.message)
            } catch let error as PhotoLibraryError {
                result.problems.append(error.message)
            }
        }
        (result.assetKeys, result.positionRecorded) = try adoptAssetKeys(
            assets, packs: packs, through: position, inBackground: inBackground)
        return result
    }
}

/// What reading the server's key store changed.
package struct KeyStoreAbsorption: Sendable {
    /// Whether the server's library is encrypted (its identity key is published).
    package var serverEncrypted = false
    /// Whether this device was enrolled now.
    package var enrolled = false
    /// Whether a ring with new generations was adopted.
    package var newGenerations = false
    /// Whether this add-only device moved to a new library identity (after a revocation).
    package var identityRenewed = false
    /// Asset keys taken.
    package var assetKeys = 0
    /// Whether the key store's read position was recorded with the keys.
    var positionRecorded = false
    /// Entries that did not open, with why.
    package var problems: [String] = []
}

/// The names of the server key store's entries.
package enum KeyStoreName {
    /// The library identity's public key (written once, by the device that made the library).
    package static let libraryPublicKey = "library/public"
    /// The current library identity's public key, once a revocation replaced the first one
    /// (written by the revoking device): new devices compute their enrolment code from it.
    package static let currentIdentity = "library/current"
    /// The key ring sealed under the recovery key.
    package static let recoveryRing = "ring/recovery"
    /// A device's public key, published by the device itself.
    package static func device(_ device: DeviceID) -> String { "device/\(device.rawValue)" }
    /// The key ring sealed for a device.
    package static func ring(for device: DeviceID) -> String { "ring/\(device.rawValue)" }
    /// An add-only device's public key, published by the device itself.
    package static func writer(_ device: DeviceID) -> String { "writer/\(device.rawValue)" }
    /// The approval of an add-only device (`AddOnlyGrant`), written by an enrolled device.
    package static func grant(for device: DeviceID) -> String { "grant/\(device.rawValue)" }
    /// An asset's key, sealed under a library key generation: `asset/` and the asset's UUID in
    /// lowercase.
    package static func asset(_ asset: UUID) -> String { "asset/\(asset.lowercaseString)" }
    /// A pack of the keys one change block made (`AssetKeyPack`): `pack/`, the block's UUID in
    /// lowercase, a dot and the pack's index among the block's.
    package static func pack(block: UUID, index: Int) -> String { "pack/\(block.lowercaseString).\(index)" }
    /// Whether `name` is a pack's name (``pack(block:index:)``).
    package static func isPack(_ name: String) -> Bool { name.hasPrefix("pack/") }
    /// The names of every pack of `block` lie between these two, in name order.
    package static func packRange(block: UUID) -> (first: String, last: String) {
        ("pack/\(block.lowercaseString).", "pack/\(block.lowercaseString).~")
    }

    /// The asset of an asset key's entry, or nil for another entry (read byte by byte: a large
    /// library's keys arrive by the ten thousand).
    package static func asset(in name: String) -> UUID? {
        let utf8 = name.utf8
        guard utf8.count == 42, name.hasPrefix("asset/") else { return nil }
        var value: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        let complete = withUnsafeMutableBytes(of: &value) { bytes in
            var count = 0
            var high: UInt8?
            for (index, character) in utf8.dropFirst(6).enumerated() {
                if index == 8 || index == 13 || index == 18 || index == 23 {
                    guard character == 0x2D else { return false }
                    continue
                }
                let nibble: UInt8
                switch character {
                case 0x30...0x39: nibble = character - 0x30
                case 0x61...0x66: nibble = character - 0x61 + 10
                case 0x41...0x46: nibble = character - 0x41 + 10
                default: return false
                }
                if let first = high {
                    guard count < 16 else { return false }
                    bytes[count] = first << 4 | nibble
                    count += 1
                    high = nil
                } else {
                    high = nibble
                }
            }
            return count == 16
        }
        return complete ? UUID(uuid: value) : nil
    }
}

// MARK: Sealing in change blocks

extension LibraryChanges {
    /// `event` as the log keeps it: sealed in an encrypted library (an asset's events with the
    /// asset's key, made now for a new asset; album events and purges with the current library
    /// key generation), unchanged in a plain one.
    func sealedIfEncrypted(_ event: Event, change: ChangeEvent) throws -> Event {
        let keys = library.encryption.snapshot
        guard keys.enabled else { return event }
        guard let wrapper = keys.assetKeyWrapper else {
            throw PhotoLibraryError(
                .accessRestricted,
                keys.addOnly
                    ? "this add-only device has not been approved yet, so it cannot add assets; approve it on an enrolled device (`photoledger device approve \(library.device.rawValue)`), then sync here"
                    : "this device holds no key of the encrypted library yet, so it cannot make changes; run `photoledger device enroll` and approve it on an enrolled device"
            )
        }
        switch change {
        case .assetCreated(let creation):
            // An add-only device publishes a new asset's key once, with its blobs' names, when the
            // resources are encrypted for upload (the server lets it create the entry, never replace it).
            let (id, key) = try assetKey(
                for: event.object, creating: true, wrapper: wrapper, held: keys,
                publishNow: !wrapper.createOnly || creation.resources.isEmpty)
            return PayloadSeal.seal(event, keyID: id, payloadKey: key)
        case .assetChanged, .assetDeleted, .assetRecovered, .assetContentEdited, .renditionRecorded:
            // Later changes of an asset (and the renditions recorded of it) are sealed with its key
            // under the current generation: a device revoked before this generation holds the
            // asset key, and still cannot open them.
            guard let ring = keys.ring else {
                throw PhotoLibraryError(.accessRestricted, "an add-only device can only add assets; this change needs an enrolled device")
            }
            let current = ring.current
            let id = KeyKind.assetEpoch(generation: current.id)
            if let key = keys.payloadKeys.payloadKey(id, object: event.object) {
                return PayloadSeal.seal(event, keyID: id, payloadKey: key)
            }
            let assetKey = try heldAssetKey(event.object)
            return PayloadSeal.seal(
                event, keyID: id,
                payloadKey: PayloadSeal.payloadKey(of: PayloadSeal.assetEpochKey(assetKey: assetKey, generationKey: current.key)))
        default:
            guard let ring = keys.ring else {
                throw PhotoLibraryError(.accessRestricted, "an add-only device can only add assets; this change needs an enrolled device")
            }
            let current = ring.current
            return PayloadSeal.seal(
                event, keyID: current.id,
                payloadKey: keys.payloadKeys.payloadKey(current.id, object: event.object) ?? PayloadSeal.payloadKey(of: current.key))
        }
    }

    /// The key of `asset` as this device holds it (made in this block, or stored).
    private func heldAssetKey(_ asset: UUID) throws -> SecretKey {
        if let made = newAssetKeys[asset] { return made.key }
        guard
            let stored = try database.firstRow(
                "SELECT key FROM e2e_asset_keys WHERE asset = ? AND key IS NOT NULL", [asset.bytes], { $0.blob(0) })
        else {
            throw PhotoLibraryError(
                .accessRestricted,
                "this device does not hold the key of asset \(LocalIdentifier(uuid: asset, kind: .asset)); sync, then try again")
        }
        return try SecretKey(bytes: stored)
    }

    /// The identifier and payload key of `asset`'s key: a new key for a new asset (stored in this
    /// transaction, queued for the server's key store), the held one otherwise.
    private func assetKey(for asset: UUID, creating: Bool, wrapper: AssetKeyWrapper, held: EncryptionKeys.State, publishNow: Bool) throws
        -> (
            UInt32, SecretKey
        )
    {
        if let (id, stored) = try database.firstRow(
            "SELECT key_id, key FROM e2e_asset_keys WHERE asset = ? AND key IS NOT NULL", [asset.bytes], { ($0.int64(0), $0.blob(1)) })
        {
            let keyID = UInt32(truncatingIfNeeded: id)
            if let key = held.payloadKeys.payloadKey(keyID, object: asset) { return (keyID, key) }
            return (keyID, PayloadSeal.payloadKey(of: try SecretKey(bytes: stored)))
        }
        guard creating else {
            throw PhotoLibraryError(
                .accessRestricted,
                "this device does not hold the key of asset \(LocalIdentifier(uuid: asset, kind: .asset)); sync, then try again")
        }
        let keyID = KeyKind.asset.newIdentifier()
        let key = SecretKey()
        // A device that holds the ring publishes the block's new keys in packs (``packNewAssetKeys()``),
        // the key of the n-th new asset in the pack n / AssetKeyPack.maximumRecords; an add-only
        // device publishes each key on its own, sealed to the library's identity.
        var pack: Int64?
        if wrapper.ring != nil {
            let index = packedAssets.count / AssetKeyPack.maximumRecords
            if packNumbers.count <= index {
                packNumbers.append(try PhotoLibrary.packNumber(KeyStoreName.pack(block: changeBlock, index: index), in: database))
            }
            pack = packNumbers[index]
        }
        try database.execute(
            "INSERT INTO e2e_asset_keys (asset, key_id, key, own, pack) VALUES (?, ?, ?, 1, ?)",
            [asset.bytes, Int64(keyID), key.bytes, pack.map { SQLValue.integer($0) } ?? .null])
        if pack != nil {
            packedAssets.append(asset)
        } else if publishNow {
            try PhotoLibrary.queue(
                database, KeyStoreName.asset(asset), try wrapper.wrap(WrappedAssetKey(asset: asset, keyID: keyID, key: key)),
                createOnly: wrapper.createOnly)
        }
        newAssetKeys[asset] = (keyID, key)
        return (keyID, PayloadSeal.payloadKey(of: key))
    }

    /// Queues the packs of the keys this block made (``packedAssets``) for the server's key
    /// store: `pack/BLOCK.N`, sealed under the current generation, which go up with the first
    /// push batch that holds an event of the block. (A purge in the same block seals its pack
    /// again without the purged key: ``PhotoLibrary/shred(_:in:archive:publishing:)``.)
    func packNewAssetKeys() throws {
        guard !packedAssets.isEmpty, let ring = library.encryption.snapshot.ring else { return }
        let db = try database
        for start in stride(from: 0, to: packedAssets.count, by: AssetKeyPack.maximumRecords) {
            let records = packedAssets[start..<min(start + AssetKeyPack.maximumRecords, packedAssets.count)].compactMap { asset in
                newAssetKeys[asset].map { WrappedAssetKey(asset: asset, keyID: $0.id, key: $0.key) }
            }
            let index = start / AssetKeyPack.maximumRecords
            let name = KeyStoreName.pack(block: changeBlock, index: index)
            try PhotoLibrary.queue(db, name, AssetKeyPack(records: records).sealed(name: name, under: ring.current))
            try PhotoLibrary.addMembers(records.map(\.asset), toPack: packNumbers[index], in: db)
        }
    }
}

// MARK: For the sync engine

extension Replica {
    /// Whether the library is end-to-end encrypted here.
    package var isEncrypted: Bool { library.encryption.snapshot.enabled }

    /// Whether this device holds the library's key ring, or was approved as an add-only device.
    package var isEnrolled: Bool { library.encryption.snapshot.isEnrolled }

    /// The server key store's position this device has read up to (with the keys still being
    /// written: the position they are written with).
    package func keyStoreCursor() throws -> Int64 {
        let stored = try library.readDatabase { try $0.firstRow("SELECT key_cursor FROM e2e_state WHERE id = 1") { $0.int64(0) } ?? 0 }
        return max(stored, library.pendingKeyWrite.withLock { $0?.cursor } ?? stored)
    }

    /// Records the key store's position read up to (never back), once the keys read before it
    /// are stored.
    ///
    /// - Throws: ``PhotoLibraryError`` when the keys written on a thread of their own could not
    ///   be stored: the position stays.
    package func setKeyStoreCursor(_ cursor: Int64) throws {
        try library.finishKeyWrite()
        try library.withDatabase { try PhotoLibrary.recordKeyStorePosition(cursor, in: $0) }
    }

    /// Waits for the keys a key store read took to be stored (they are written on a thread of
    /// their own while the first pull page folds).
    ///
    /// - Throws: ``PhotoLibraryError`` when they could not be: they and the read position were
    ///   not stored, and the next sync reads them again.
    package func finishKeyWrite() throws { try library.finishKeyWrite() }

    /// Whether keys a key store read took are still being written (see ``finishKeyWrite()``).
    package var isWritingKeys: Bool { library.pendingKeyWrite.withLock { $0 != nil } }

    /// Joins the server's encrypted library from a plain library that holds no changes of its
    /// own: makes this device's key pair and queues its public key. Returns false when the
    /// library holds changes of its own (they were made without encryption and cannot join).
    package func prepareToJoinEncryptedLibrary() throws -> Bool {
        do {
            try library.prepareEnrolment()
            return true
        } catch let error as PhotoLibraryError where error.code == .changeNotSupported {
            return false
        }
    }

    /// The entries this device still has to write to the server's key store (without those of
    /// asset keys when `assetKeys` is false).
    package func pendingKeyEntries(assetKeys: Bool = true) throws -> [(name: String, value: [UInt8]?, createOnly: Bool)] {
        try library.pendingKeyEntries(assetKeys: assetKeys)
    }

    /// The entries of the keys of `assets` this device still has to write to the server's key
    /// store, the packs of change blocks `blocks`, and the entries the push of `assets` carries.
    package func pendingKeyEntries(ofAssets assets: Set<UUID>, blocks: Set<UUID> = []) throws -> [(
        name: String, value: [UInt8]?, createOnly: Bool
    )] {
        try library.pendingKeyEntries(ofAssets: assets, blocks: blocks)
    }

    /// The server refused key pack `name`: its keys are queued on their own. Returns how many.
    @discardableResult
    package func publishKeysOfRefusedPack(_ name: String) throws -> Int { try library.publishKeysOfRefusedPack(name) }

    /// Forgets entries the server took or refused for good.
    package func keyEntriesPublished(_ entries: [(name: String, value: [UInt8]?)]) throws { try library.keyEntriesPublished(entries) }

    /// Takes what the server's key store holds for this device.
    package func absorbKeyStore(_ entries: [String: [UInt8]]) throws -> KeyStoreAbsorption { try library.absorbKeyStore(entries) }

    /// Takes what the server's key store holds for this device, from its entries in the store's
    /// order, read through `position` (see ``PhotoLibrary/absorbKeyStore(_:through:writingKeysInBackground:)``).
    package func absorbKeyStore(
        _ entries: [(name: String, value: [UInt8])], through position: Int64? = nil, writingKeysInBackground: Bool = false
    ) throws -> KeyStoreAbsorption {
        try library.absorbKeyStore(entries, through: position, writingKeysInBackground: writingKeysInBackground)
    }

    /// What `photoledger status` and the sync summary say of the encryption.
    package var encryptionStatus: EncryptionStatus { library.encryptionStatus }
}

/// How this device wraps the keys of the assets it makes: under the ring's current generation,
/// or, on an approved add-only device, sealed to the library's identity with its grant.
struct AssetKeyWrapper {
    let ring: KeyRing?
    let identity: (publicKey: [UInt8], writer: BoxKeyPair, grant: [UInt8])?

    /// Whether the server's entry may only be created, never replaced (an add-only device's).
    var createOnly: Bool { ring == nil }

    /// The record as the server's key store keeps it.
    func wrap(_ record: WrappedAssetKey) throws -> [UInt8] {
        if let ring { return record.sealed(under: ring.current) }
        guard let identity else { throw PhotoLibraryError(.internalError, "no key wraps the asset keys of this device") }
        do {
            return try record.sealed(toIdentity: identity.publicKey, writer: identity.writer, grant: identity.grant)
        } catch let error as CryptoError {
            throw PhotoLibraryError(.accessRestricted, "could not seal the key of a new asset for the library's readers: \(error.message)")
        }
    }
}

extension EncryptionKeys.State {
    /// How this device wraps new asset keys, or nil when it can make none (not enrolled, or an
    /// add-only device not approved yet).
    var assetKeyWrapper: AssetKeyWrapper? {
        if let ring { return AssetKeyWrapper(ring: ring, identity: nil) }
        if addOnly, let grant, let libraryPublicKey, let device {
            return AssetKeyWrapper(ring: nil, identity: (libraryPublicKey, device, grant))
        }
        return nil
    }
}
