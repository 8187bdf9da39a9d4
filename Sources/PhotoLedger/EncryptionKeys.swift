import Foundation
import LedgerCore
import LedgerCrypto
import LedgerStore
import Synchronization

/// The payload keys a fold may use, by key identifier: an immutable snapshot (folds run on other
/// threads than the one that changes the keys).
final class PayloadKeys: Sendable {
    let keys: [UInt32: SecretKey]

    init(_ keys: [UInt32: SecretKey]) { self.keys = keys }

    func payloadKey(_ id: UInt32) -> SecretKey? { keys[id] }
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
        guard let key = keys?.payloadKey(seal.keyID) else { return .sealed(keyID: seal.keyID) }
        guard let plain = try? PayloadSeal.open(event, payloadKey: key) else { return .unopenable(keyID: seal.keyID) }
        return .plain(plain)
    }

    /// The verdict on `event`, its payload opened first when this device holds the key.
    func verdict(on event: Event, stamp: WriterStamp) -> EventVerdict {
        switch open(event) {
        case .plain(let payload):
            return schema.verdict(
                type: event.type, version: event.schemaVersion, payload: payload, object: event.object, stamp: stamp, bound: event.library,
                library: library, sealed: false)
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
        /// Asset keys held, by identifier.
        var assetKeys: [UInt32: SecretKey] = [:]
        /// Payload keys of every key held (library generations and assets).
        var payloadKeys = PayloadKeys([:])
    }

    private let state = Mutex(State())

    var snapshot: State { state.withLock { $0 } }

    /// The payload keys for folds; nil for a plain library.
    var payloadKeys: PayloadKeys? { state.withLock { $0.enabled ? $0.payloadKeys : nil } }

    /// Reads the keys from the database.
    func load(_ db: Database) throws {
        var loaded = State()
        if let row = try db.firstRow("SELECT device_secret, ring, library_public FROM e2e_state WHERE id = 1", [], { row in
            (row.blob(0), row.isNull(1) ? nil : row.blob(1), row.isNull(2) ? nil : row.blob(2))
        }) {
            loaded.enabled = true
            loaded.device = BoxKeyPair(secretKey: try SecretKey(bytes: row.0))
            loaded.ring = try row.1.map { try KeyRing(serialized: $0) }
            loaded.libraryPublicKey = row.2 ?? loaded.ring?.identity.publicKey
            try db.forEachRow("SELECT key_id, key FROM e2e_asset_keys WHERE key IS NOT NULL") { row in
                loaded.assetKeys[UInt32(truncatingIfNeeded: row.int64(0))] = try SecretKey(bytes: row.blob(1))
            }
        }
        loaded.payloadKeys = Self.payloadKeys(ring: loaded.ring, assets: loaded.assetKeys)
        state.withLock { $0 = loaded }
    }

    static func payloadKeys(ring: KeyRing?, assets: [UInt32: SecretKey]) -> PayloadKeys {
        var keys: [UInt32: SecretKey] = [:]
        keys.reserveCapacity(assets.count + (ring?.generations.count ?? 0))
        for (id, key) in ring?.generations ?? [] { keys[id] = PayloadSeal.payloadKey(of: key) }
        for (id, key) in assets { keys[id] = PayloadSeal.payloadKey(of: key) }
        return PayloadKeys(keys)
    }

    /// Adds asset keys to the cache (after the transaction that stored them committed).
    func add(assetKeys: [UInt32: SecretKey]) {
        guard !assetKeys.isEmpty else { return }
        let derived = assetKeys.mapValues(PayloadSeal.payloadKey(of:))
        state.withLock { state in
            state.assetKeys.merge(assetKeys) { _, new in new }
            state.payloadKeys = PayloadKeys(state.payloadKeys.keys.merging(derived) { _, new in new })
        }
    }

    /// Drops destroyed asset keys from the cache.
    func remove(assetKeys: Set<UInt32>) {
        state.withLock { state in
            for id in assetKeys { state.assetKeys[id] = nil }
            state.payloadKeys = PayloadKeys(state.payloadKeys.keys.filter { !assetKeys.contains($0.key) })
        }
    }
}
