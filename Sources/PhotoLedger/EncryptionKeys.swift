import Foundation
import LedgerCore
import LedgerCrypto
import LedgerStore
import Synchronization

/// The asset keys this device holds, by asset, with the identifier each asset's seals name: one
/// table shared by every copy of ``EncryptionKeys/State`` and by the ``PayloadKeys`` of folds,
/// changed in place. A change block's new assets and a pull's arriving keys are added without
/// copying the keys of the whole library (they are many in a large one).
final class AssetKeyTable: Sendable {
    private struct Content {
        var keys: [UUID: (id: UInt32, key: SecretKey)]
        /// Counts the changes: a fold records the version it saw.
        var version: UInt64 = 0
    }
    private let content: Mutex<Content>

    init(_ keys: [UUID: (id: UInt32, key: SecretKey)] = [:]) { content = Mutex(Content(keys: keys)) }

    /// The key of `asset`, when this device holds it.
    subscript(asset: UUID) -> (id: UInt32, key: SecretKey)? { content.withLock { $0.keys[asset] } }

    /// Every key held (a copy: reading a sealed snapshot, sealing one).
    var all: [UUID: (id: UInt32, key: SecretKey)] { content.withLock { $0.keys } }

    /// The number of changes made to the table so far.
    var version: UInt64 { content.withLock { $0.version } }

    /// Adds keys, replacing those of the same assets.
    func add(_ added: [UUID: (id: UInt32, key: SecretKey)]) {
        add(added.map { (asset: $0.key, id: $0.value.id, key: $0.value.key) })
    }

    /// Adds keys, replacing those of the same assets.
    func add(_ added: [(asset: UUID, id: UInt32, key: SecretKey)]) {
        content.withLock { content in
            content.keys.reserveCapacity(content.keys.count + added.count)
            for (asset, id, key) in added { content.keys[asset] = (id, key) }
            content.version += 1
        }
    }

    /// Drops the keys of `assets` (destroyed).
    func remove(_ assets: Set<UUID>) {
        content.withLock { content in
            for asset in assets { content.keys[asset] = nil }
            content.version += 1
        }
    }
}

/// The payload keys a fold may use: library key generations by identifier, asset keys by asset
/// (with the identifier the asset's seals name), and asset keys under a generation. The
/// generations are fixed; the asset keys are the device's shared table (keys added while a fold
/// runs are keys that committed transactions stored), less those a purge in progress destroys
/// (`excluded`). The payload key of
/// an asset (and of an asset under a generation) is derived when a fold first asks for it, on the
/// fold's thread: a device that takes a large library's keys by the ten thousand does not derive
/// them all before its pull can start.
final class PayloadKeys: Sendable {
    /// Payload keys of the library key generations.
    let generations: [UInt32: SecretKey]
    /// The generations' and the assets' own keys, from which the other payload keys are derived.
    let generationKeys: [UInt32: SecretKey]
    private let table: AssetKeyTable
    /// Assets whose keys these payload keys do not use (destroyed by a purge not yet committed).
    private let excluded: Set<UUID>
    /// Payload keys derived so far, by object.
    private let derived = Mutex<[UUID: Derived]>([:])

    /// The payload keys derived for one object from its asset key `source`: most objects have
    /// one (an asset's own key), kept without a dictionary of its own.
    private struct Derived {
        let source: SecretKey
        var first: (id: UInt32, key: SecretKey)
        var more: [UInt32: SecretKey] = [:]

        func key(_ id: UInt32) -> SecretKey? { first.id == id ? first.key : more[id] }
    }

    init(
        generations: [UInt32: SecretKey], generationKeys: [UInt32: SecretKey], assetKeys: AssetKeyTable, excluding excluded: Set<UUID> = []
    ) {
        self.generations = generations
        self.generationKeys = generationKeys
        self.table = assetKeys
        self.excluded = excluded
    }

    /// The version of the asset keys (see ``AssetKeyTable/version``).
    var version: UInt64 { table.version }

    /// The key of `asset`, when held and not excluded.
    func assetKey(_ asset: UUID) -> (id: UInt32, key: SecretKey)? { excluded.contains(asset) ? nil : table[asset] }

    /// The same keys without those of `destroyed` assets (nothing derived from them is kept).
    func removing(_ destroyed: Set<UUID>) -> PayloadKeys {
        PayloadKeys(generations: generations, generationKeys: generationKeys, assetKeys: table, excluding: excluded.union(destroyed))
    }

    /// Forgets what was derived from the keys of `assets` (added again, or destroyed).
    func forget(_ assets: some Collection<UUID>) {
        derived.withLock { derived in
            guard !derived.isEmpty else { return }
            for asset in assets { derived[asset] = nil }
        }
    }

    /// The payload key that opens what `keyID` sealed about `object`.
    func payloadKey(_ keyID: UInt32, object: UUID) -> SecretKey? {
        switch KeyKind.of(keyID) {
        case .asset?:
            // Only an asset's creation is sealed with its own key: derived each time, not kept
            // (a pull of a large library's creations would fill the cache with keys used once).
            return ownAssetKey(keyID, object: object).map(PayloadSeal.payloadKey(of:))
        case .assetEpoch?:
            guard let held = assetKey(object), let generation = generationKeys[KeyKind.generation(ofAssetEpoch: keyID)] else { return nil }
            return derivedKey(object, keyID, from: held.key) {
                PayloadSeal.payloadKey(of: PayloadSeal.assetEpochKey(assetKey: held.key, generationKey: generation))
            }
        default:
            return generations[keyID]
        }
    }

    /// The plain payload of sealed `event` (sealed with `keyID`), or nil when this device does
    /// not hold the key. An asset's creation (sealed with the asset's own key) is opened with a
    /// payload key derived for that one open.
    ///
    /// - Throws: ``CryptoError`` when the key held does not open it.
    func open(_ event: Event, keyID: UInt32) throws -> [UInt8]? {
        if KeyKind.of(keyID) == .asset {
            guard let key = ownAssetKey(keyID, object: event.object) else { return nil }
            return try PayloadSeal.open(event, payloadKeyOf: key)
        }
        guard let key = payloadKey(keyID, object: event.object) else { return nil }
        return try PayloadSeal.open(event, payloadKey: key)
    }

    /// The asset key of `object` when it is the one `keyID` (an asset key's identifier) names.
    private func ownAssetKey(_ keyID: UInt32, object: UUID) -> SecretKey? {
        guard let held = assetKey(object), held.id == keyID else { return nil }
        return held.key
    }

    /// The key derived for `object` and `keyID` from the asset key `source`, derived by `derive`
    /// the first time (again when the asset's key is another one now: a derivation that raced
    /// with a replaced key is never used).
    private func derivedKey(_ object: UUID, _ keyID: UInt32, from source: SecretKey, _ derive: () -> SecretKey) -> SecretKey {
        if let cached = derived.withLock({ derived in derived[object].flatMap { $0.source === source ? $0.key(keyID) : nil } }) {
            return cached
        }
        let key = derive()
        derived.withLock { derived in
            if derived[object]?.source === source {
                derived[object]!.more[keyID] = key
            } else {
                derived[object] = Derived(source: source, first: (keyID, key))
            }
        }
        return key
    }

    /// The key of `object` under the generation an `KeyKind.assetEpoch` identifier names (it
    /// seals that asset's later events and resources), or nil when this device lacks the asset
    /// key or the generation.
    func assetEpochKey(_ keyID: UInt32, object: UUID) -> SecretKey? {
        guard let asset = assetKey(object)?.key, let generation = generationKeys[KeyKind.generation(ofAssetEpoch: keyID)] else {
            return nil
        }
        return PayloadSeal.assetEpochKey(assetKey: asset, generationKey: generation)
    }
}

/// What a fold reads of an event's payload.
enum OpenedPayload {
    /// Plain, or opened with a key this device holds.
    case plain([UInt8])
    /// Sealed with a key this device does not hold (yet).
    case sealed(keyID: UInt32)
    /// Sealed with a key this device holds, but it does not open: forged or damaged.
    case unopenable(keyID: UInt32)
}

extension FoldContext {
    /// The payload of `event` as this device can read it.
    func open(_ event: Event) -> OpenedPayload {
        guard let seal = event.seal else { return .plain(event.payload) }
        do {
            guard let plain = try keys?.open(event, keyID: seal.keyID) else { return .sealed(keyID: seal.keyID) }
            return .plain(plain)
        } catch {
            return .unopenable(keyID: seal.keyID)
        }
    }

    /// The verdict on `event`, its payload opened first when this device holds the key; with
    /// the writer's claims only when `keepingClaims` (``EventSchema``).
    func verdict(on event: Event, stamp: WriterStamp, keepingClaims: Bool = true) -> EventVerdict {
        switch open(event) {
        case .plain(let payload):
            return schema.verdict(
                type: event.type, version: event.schemaVersion, payload: payload, object: event.object, stamp: stamp, bound: event.library,
                library: library, sealed: false, keepingClaims: keepingClaims)
        case .sealed(let keyID):
            if let bound = event.library, let library, bound != library {
                return .quarantined("it belongs to library \(bound.uuidString), not to this library (\(library.uuidString))")
            }
            return .sealed("its payload is sealed with key \(keyID), which this device does not hold (yet)")
        case .unopenable(let keyID):
            return .quarantined("its payload does not open with key \(keyID): it was damaged or forged")
        }
    }
}

/// The keys of an encrypted library as this device holds them, cached from `e2e_state` and
/// `e2e_asset_keys`.
final class EncryptionKeys: Sendable {
    struct State: Sendable {
        /// Whether the library is encrypted (it has `e2e_state`).
        var enabled = false
        var device: BoxKeyPair?
        var ring: KeyRing?
        var libraryPublicKey: [UInt8]?
        /// Whether this device joined as an add-only device: it seals what it adds to the
        /// library's identity and never holds the ring.
        var addOnly = false
        /// The approval of this add-only device by the library's identity (`AddOnlyGrant`),
        /// once it arrived and was checked.
        var grant: [UInt8]?
        /// Whether this device holds the ring, or is an approved add-only device.
        var isEnrolled: Bool { ring != nil || (addOnly && grant != nil) }
        /// Asset keys held, by asset (one table, shared by every copy of the state).
        var assetKeys = AssetKeyTable()
        /// Payload keys of every key held (library generations and assets).
        var payloadKeys: PayloadKeys

        init() {
            payloadKeys = PayloadKeys(generations: [:], generationKeys: [:], assetKeys: assetKeys)
        }
    }

    private let state = Mutex(State())

    var snapshot: State { state.withLock { $0 } }

    /// The payload keys for folds; nil for a plain library.
    var payloadKeys: PayloadKeys? { state.withLock { $0.enabled ? $0.payloadKeys : nil } }

    /// Reads the keys from the database.
    func load(_ db: Database) throws {
        var loaded = State()
        if let row = try db.firstRow(
            "SELECT device_secret, ring, library_public FROM e2e_state WHERE id = 1", [],
            { row in
                (row.blob(0), row.isNull(1) ? nil : row.blob(1), row.isNull(2) ? nil : row.blob(2))
            })
        {
            loaded.enabled = true
            loaded.device = BoxKeyPair(secretKey: try SecretKey(bytes: row.0))
            loaded.ring = try row.1.map { try KeyRing(serialized: $0) }
            loaded.libraryPublicKey = row.2 ?? loaded.ring?.identity.publicKey
            try db.forEachRow("SELECT key, value FROM device_settings WHERE key IN ('e2e.addOnly', 'e2e.addOnlyGrant')") { row in
                if row.text(0) == "e2e.addOnly" { loaded.addOnly = row.blob(1) == [1] } else { loaded.grant = row.blob(1) }
            }
            var keys: [UUID: (id: UInt32, key: SecretKey)] = [:]
            try db.forEachRow("SELECT asset, key_id, key FROM e2e_asset_keys WHERE key IS NOT NULL") { row in
                guard let asset = UUID(bytes: row.blob(0)) else { return }
                keys[asset] = (UInt32(truncatingIfNeeded: row.int64(1)), try SecretKey(bytes: row.blob(2)))
            }
            loaded.assetKeys = AssetKeyTable(keys)
        }
        loaded.payloadKeys = Self.payloadKeys(ring: loaded.ring, assets: loaded.assetKeys)
        state.withLock { $0 = loaded }
    }

    static func payloadKeys(ring: KeyRing?, assets: AssetKeyTable) -> PayloadKeys {
        var generations: [UInt32: SecretKey] = [:], generationKeys: [UInt32: SecretKey] = [:]
        for (id, key) in ring?.generations ?? [] {
            generations[id] = PayloadSeal.payloadKey(of: key)
            generationKeys[id] = key
        }
        return PayloadKeys(generations: generations, generationKeys: generationKeys, assetKeys: assets)
    }

    /// Adds asset keys to the cache (after the transaction that stored them committed).
    func add(assetKeys: [UUID: (id: UInt32, key: SecretKey)]) {
        add(assetKeys: assetKeys.map { (asset: $0.key, id: $0.value.id, key: $0.value.key) })
    }

    /// Adds asset keys to the cache (after the transaction that stored them committed).
    func add(assetKeys: [(asset: UUID, id: UInt32, key: SecretKey)]) {
        guard !assetKeys.isEmpty else { return }
        state.withLock { state in
            state.assetKeys.add(assetKeys)
            state.payloadKeys.forget(assetKeys.lazy.map(\.asset))
        }
    }

    /// Drops destroyed asset keys from the cache.
    func remove(assetKeys: Set<UUID>) {
        state.withLock { state in
            state.assetKeys.remove(assetKeys)
            state.payloadKeys.forget(assetKeys)
        }
    }
}
