import Foundation
import LedgerCore
import LedgerCrypto
import LedgerStore
import Synchronization

/// The payload keys a fold may use: library key generations by identifier, asset keys by asset
/// (with the identifier the asset's seals name), and asset keys under a generation. An immutable
/// snapshot: folds run on other threads than the one that changes the keys. The payload key of
/// an asset (and of an asset under a generation) is derived when a fold first asks for it, on the
/// fold's thread: a device that takes a large library's keys by the ten thousand does not derive
/// them all before its pull can start.
final class PayloadKeys: Sendable {
    /// Payload keys of the library key generations.
    let generations: [UInt32: SecretKey]
    /// The generations' and the assets' own keys, from which the other payload keys are derived.
    let generationKeys: [UInt32: SecretKey]
    let assetKeys: [UUID: (id: UInt32, key: SecretKey)]
    private struct DerivedKey: Hashable {
        var object: UUID
        var id: UInt32
    }
    private let derived = Mutex<[DerivedKey: SecretKey]>([:])

    init(generations: [UInt32: SecretKey], generationKeys: [UInt32: SecretKey], assetKeys: [UUID: (id: UInt32, key: SecretKey)]) {
        self.generations = generations
        self.generationKeys = generationKeys
        self.assetKeys = assetKeys
    }

    /// The same keys without those of `destroyed` assets (nothing derived from them is kept).
    func removing(_ destroyed: Set<UUID>) -> PayloadKeys {
        PayloadKeys(generations: generations, generationKeys: generationKeys, assetKeys: assetKeys.filter { !destroyed.contains($0.key) })
    }

    /// The payload key that opens what `keyID` sealed about `object`.
    func payloadKey(_ keyID: UInt32, object: UUID) -> SecretKey? {
        switch KeyKind.of(keyID) {
        case .asset?:
            guard let held = assetKeys[object], held.id == keyID else { return nil }
            return derivedKey(DerivedKey(object: object, id: keyID)) { PayloadSeal.payloadKey(of: held.key) }
        case .assetEpoch?:
            guard assetKeys[object] != nil else { return nil }
            return derivedKey(DerivedKey(object: object, id: keyID)) {
                self.assetEpochKey(keyID, object: object).map(PayloadSeal.payloadKey(of:))
            }
        default:
            return generations[keyID]
        }
    }

    /// The key derived for `name`, derived by `derive` the first time.
    private func derivedKey(_ name: DerivedKey, _ derive: () -> SecretKey?) -> SecretKey? {
        if let cached = derived.withLock({ $0[name] }) { return cached }
        guard let key = derive() else { return nil }
        derived.withLock { $0[name] = key }
        return key
    }

    /// The key of `object` under the generation an `KeyKind.assetEpoch` identifier names (it
    /// seals that asset's later events and resources), or nil when this device lacks the asset
    /// key or the generation.
    func assetEpochKey(_ keyID: UInt32, object: UUID) -> SecretKey? {
        guard let asset = assetKeys[object]?.key, let generation = generationKeys[KeyKind.generation(ofAssetEpoch: keyID)] else {
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
        guard let key = keys?.payloadKey(seal.keyID, object: event.object) else { return .sealed(keyID: seal.keyID) }
        guard let plain = try? PayloadSeal.open(event, payloadKey: key) else { return .unopenable(keyID: seal.keyID) }
        return .plain(plain)
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
        /// Asset keys held, by asset.
        var assetKeys: [UUID: (id: UInt32, key: SecretKey)] = [:]
        /// Payload keys of every key held (library generations and assets).
        var payloadKeys = PayloadKeys(generations: [:], generationKeys: [:], assetKeys: [:])
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
            try db.forEachRow("SELECT asset, key_id, key FROM e2e_asset_keys WHERE key IS NOT NULL") { row in
                guard let asset = UUID(bytes: row.blob(0)) else { return }
                loaded.assetKeys[asset] = (UInt32(truncatingIfNeeded: row.int64(1)), try SecretKey(bytes: row.blob(2)))
            }
        }
        loaded.payloadKeys = Self.payloadKeys(ring: loaded.ring, assets: loaded.assetKeys)
        state.withLock { $0 = loaded }
    }

    static func payloadKeys(ring: KeyRing?, assets: [UUID: (id: UInt32, key: SecretKey)]) -> PayloadKeys {
        var generations: [UInt32: SecretKey] = [:], generationKeys: [UInt32: SecretKey] = [:]
        for (id, key) in ring?.generations ?? [] {
            generations[id] = PayloadSeal.payloadKey(of: key)
            generationKeys[id] = key
        }
        return PayloadKeys(generations: generations, generationKeys: generationKeys, assetKeys: assets)
    }

    /// Adds asset keys to the cache (after the transaction that stored them committed).
    func add(assetKeys: [UUID: (id: UInt32, key: SecretKey)]) {
        guard !assetKeys.isEmpty else { return }
        state.withLock { state in
            state.assetKeys.merge(assetKeys) { _, new in new }
            let keys = state.payloadKeys
            state.payloadKeys = PayloadKeys(generations: keys.generations, generationKeys: keys.generationKeys, assetKeys: state.assetKeys)
        }
    }

    /// Drops destroyed asset keys from the cache.
    func remove(assetKeys: Set<UUID>) {
        state.withLock { state in
            for asset in assetKeys { state.assetKeys[asset] = nil }
            state.payloadKeys = state.payloadKeys.removing(assetKeys)
        }
    }
}
