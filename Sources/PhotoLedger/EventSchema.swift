import Foundation
import LedgerCore

/// The payload schema of library events, in one place: the versions this build writes and reads,
/// the upcasters from older versions, and the verdict on every event it is asked to fold.
///
/// - Version 1: the first payloads.
/// - Version 2: version 1's fields, then the writer's causal claims (``CausalClaims``): for each
///   last-writer-wins register the change writes, the stamp of the write it overwrote.
/// - Version 3: bursts. An asset's creation carries its burst identifier and selection types
///   after the version 1 fields; an asset change may set the burst user pick (mask bit 16).
///   Only those changes are written in version 3 (``ChangeEvent/schemaVersion``): every other
///   change is written in version 2, so a build that reads version 2 keeps folding it.
///
/// Upcasting version 1 to the current model gives the same change with unknown claims (nil):
/// ``ObjectHistory`` reads such writes by a documented rule instead of a claim.
///
/// An event of a type or version this build does not know is not an error: it is kept, counted
/// and forwarded, and folded by the first build that knows it (a library refolds on open when the
/// versions its build reads grew, ``fingerprint``).
package struct EventSchema: Sendable {
    /// The newest version this build reads and writes (each change is written in the lowest
    /// version that carries it).
    package static let currentVersion = 3

    /// Converts a payload of a version newer than ``currentVersion`` to the current one: what a
    /// newer build's reader does. Registered only by tests that simulate an upgrade.
    package typealias Converter = @Sendable ([UInt8]) throws -> [UInt8]

    /// Converters for newer versions, by type and version.
    private var converters: [EventType: [Int: Converter]] = [:]

    /// The schema of this build.
    package static let standard = EventSchema()

    /// A schema that also reads `version` of `type`, converting it with `converter`.
    package func reading(_ type: EventType, version: Int, with converter: @escaping Converter) -> EventSchema {
        var schema = self
        schema.converters[type, default: [:]][version] = converter
        return schema
    }

    /// What this build reads, as text: when it differs from the one a library last folded with,
    /// events that needed a newer build are folded again.
    var fingerprint: String {
        let extra = converters.flatMap { type, versions in versions.keys.map { "\(type.rawValue)@\($0)" } }.sorted()
        return (["types=\(EventType.allCases.count)", "version=\(Self.currentVersion)"] + extra).joined(separator: ";")
    }

    /// Whether this build reads `version` of `type`.
    func reads(_ type: EventType, version: Int) -> Bool {
        (1...Self.currentVersion).contains(version) || converters[type]?[version] != nil
    }

    /// The verdict on an event: fold it, keep it for a newer build, or quarantine it.
    ///
    /// - Parameters:
    ///   - library: The library's identifier, when it has one: an event bound to another library
    ///     is quarantined.
    ///   - keepingClaims: Whether a folded verdict carries the writer's causal claims (an object's
    ///     history reads them); without, they are checked and dropped, and the verdict carries nil.
    func verdict(
        type name: String, version: Int, payload: [UInt8], object: UUID, stamp: WriterStamp, bound: UUID?, library: UUID?, sealed: Bool,
        keepingClaims: Bool = true
    ) -> EventVerdict {
        verdict(
            type: name, parsed: EventType(rawValue: name), version: version, payload: payload, object: object, stamp: stamp, bound: bound,
            library: library, sealed: sealed, keepingClaims: keepingClaims)
    }

    /// ``verdict(type:version:payload:object:stamp:bound:library:sealed:keepingClaims:)`` with the
    /// type already parsed from its name (`parsed`: nil for a name this build does not know), for
    /// a caller that reads runs of events of one type.
    func verdict(
        type name: String, parsed: EventType?, version: Int, payload: [UInt8], object: UUID, stamp: WriterStamp, bound: UUID?,
        library: UUID?, sealed: Bool, keepingClaims: Bool = true
    ) -> EventVerdict {
        if let bound, let library, bound != library {
            return .quarantined("it belongs to library \(bound.uuidString), not to this library (\(library.uuidString))")
        }
        guard let type = parsed else { return .deferred("the event type '\(name)' is newer than this build") }
        if sealed { return .sealed("its payload is sealed with a key this device does not hold") }
        guard version >= 1 else { return .quarantined("schema version \(version) does not exist") }
        var bytes = payload
        var decodedVersion = version
        if version > Self.currentVersion {
            guard let converter = converters[type]?[version] else {
                return .deferred("\(type.rawValue) version \(version) is newer than this build (it reads up to \(Self.currentVersion))")
            }
            do {
                bytes = try converter(payload)
                decodedVersion = Self.currentVersion
            } catch {
                return .quarantined("its \(type.rawValue) version \(version) payload does not convert: \(error)")
            }
        }
        var decoded: (ChangeEvent, CausalClaims?)
        do {
            if keepingClaims {
                decoded = try ChangeEvent.decode(type: type, version: decodedVersion, payload: bytes)
            } else {
                // The usual event contradicts nothing: its claims need not be kept to say so.
                let checked = try ChangeEvent.decode(type: type, version: decodedVersion, payload: bytes, checkingClaimsAgainst: stamp)
                decoded = (checked.change, nil)
                if checked.contradicted { decoded = try ChangeEvent.decode(type: type, version: decodedVersion, payload: bytes) }
            }
        } catch {
            return .quarantined("its \(type.rawValue) payload is invalid: \(error)")
        }
        if case .albumMerged(let winner) = decoded.0, winner == object {
            return .quarantined("it merges the album into itself")
        }
        if case .listMoved(let parent?) = decoded.0, parent == object {
            return .quarantined("it moves the folder into itself")
        }
        if let (field, claimed) = decoded.1?.contradiction(of: decoded.0, writtenAt: stamp) {
            return .quarantined(
                "it claims to overwrite the \(field) written at \(claimed.hlc) by '\(claimed.device)', not before its own clock value \(stamp.hlc)"
            )
        }
        return .fold(decoded.0, decoded.1)
    }
}

/// What becomes of an event in the fold.
enum EventVerdict: Sendable, Hashable {
    /// Decoded and valid: folded, with the writer's claims (nil for a version-1 event, and when
    /// the verdict was asked for without them).
    case fold(ChangeEvent, CausalClaims?)
    /// Kept for a build that knows its type or version: not folded yet.
    case deferred(String)
    /// Sealed with a key this device does not hold: folded when the key arrives.
    case sealed(String)
    /// Invalid: kept in the log (the chains stay whole), folded as nothing, listed with the reason.
    case quarantined(String)

    /// The kind stored in the quarantine table, and listed.
    var stored: (kind: QuarantineKind, reason: String)? {
        switch self {
        case .fold: return nil
        case .deferred(let reason): return (.needsNewerVersion, reason)
        case .sealed(let reason): return (.sealed, reason)
        case .quarantined(let reason): return (.quarantined, reason)
        }
    }
}

/// Why an event is not folded, as the quarantine table records it.
public enum QuarantineKind: Int, Sendable, Hashable, CaseIterable {
    /// Invalid: it can never be folded.
    case quarantined = 1
    /// Of a type or version this build does not read: folded by a build that can.
    case needsNewerVersion = 2
    /// Sealed with a key this device does not hold: folded when the key arrives.
    case sealed = 3
}
