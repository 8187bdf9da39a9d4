import Foundation
import LedgerCore
import SyncProtocol

/// The rules of a push, the same for every store backend: first the checks each event passes
/// alone (``candidate(for:credential:)``), then the ones that need the library's log
/// (``apply(_:for:in:)``).
///
/// A push is answered event by event, in order:
/// - an event stored before is a duplicate (with its server sequence); one rejected before gets
///   the same rejection; an event whose identifier is stored with other content is rejected (an
///   identifier names one event);
/// - device sequences follow one another: a sequence beyond the next one is a gap, and every
///   event after it in the push is answered with the sequence expected;
/// - a sequence the device used already, by another event, is rejected;
/// - an event the rules refuse is rejected for good, and its sequence is consumed, so the
///   device's queue never blocks;
/// - an accepted event takes the next server sequence and the chain value after the head.
///
/// What an event may be:
/// - its device is the token's device; its content hash matches its canonical bytes; its payload
///   is within the size limit;
/// - it names no library, or the token's library (format 2 binds events to their library);
/// - an addOnly token creates new assets only: `asset.created`, for an object the library does
///   not hold;
/// - a creation never names an object of the other kind, and an asset is created once.
public struct PushRules: Sendable {
    /// The largest event payload accepted, in bytes.
    public var maximumPayloadBytes: Int

    /// Rules with the given payload limit (default 1 MB).
    public init(maximumPayloadBytes: Int = 1 << 20) {
        self.maximumPayloadBytes = maximumPayloadBytes
    }

    // MARK: Each event alone

    /// The checks one received event passes without the log: a candidate to store, or a rejection.
    public func candidate(for received: ReceivedEvent, credential: Credential) -> PushCandidate {
        switch received {
        case .invalid(let id, let sequence, let field, let problem):
            return .reject(id: id, deviceSequence: sequence, reason: "field '\(field)' \(problem)")
        case .valid(let wire):
            let event = wire.event
            let reject = { (reason: String) in PushCandidate.reject(id: event.id, deviceSequence: event.deviceSequence, reason: reason) }
            if event.device != credential.device {
                return .refuse(
                    id: event.id, reason: "the event's device '\(event.device)' is not the token's device '\(credential.device)'")
            }
            if event.payload.count > maximumPayloadBytes {
                return reject("the payload (\(event.payload.count) bytes) exceeds the limit of \(maximumPayloadBytes) bytes")
            }
            if let library = event.library, library != credential.libraryUUID {
                return reject(
                    "the event belongs to library \(library.uuidString), not to '\(credential.library)' (\(credential.libraryUUID.uuidString)); "
                        + "a library's events cannot be pushed into another library")
            }
            if credential.scope == .addOnly, !TokenScope.addOnlyEventTypes.contains(where: { $0.rawValue == event.type }) {
                return reject("an addOnly token may push only the creation of new assets (asset.created), not '\(event.type)'")
            }
            guard constantTimeEquals(wire.hash, event.contentHash) else {
                return reject("the content hash does not match the event's canonical bytes")
            }
            return .accept(event, contentHash: wire.hash)
        }
    }

    // MARK: With the log

    /// Answers `candidates` in order on `transaction` (see the type's documentation), then saves
    /// the library's head and the device's last sequence.
    public func apply(_ candidates: [PushCandidate], for credential: Credential, in transaction: any PushTransaction) throws -> PushResponse
    {
        var state = State(head: transaction.head, lastDeviceSequence: transaction.lastDeviceSequence)
        var results: [PushResult] = []
        results.reserveCapacity(candidates.count)
        for candidate in candidates { results.append(try answer(candidate, credential: credential, state: &state, transaction)) }
        // A snapshot before a purge may hold the purged asset: it must no longer be offered.
        if let purge = state.lastPurge { try transaction.retireSnapshots(before: purge) }
        try transaction.finish(head: state.head, lastDeviceSequence: state.lastDeviceSequence)
        return PushResponse(
            results: results, lastDeviceSequence: state.lastDeviceSequence,
            head: ServerChainHead(serverSequence: state.head.sequence, chainHash: state.head.chainHash))
    }

    /// An event of a push the rules answer by storing every event in order.
    struct AppendedEvent {
        let event: Event
        let contentHash: [UInt8]?
        /// Valid only if the log holds no event about its object (a creation, or any event of
        /// an addOnly token); no event before it in the push is about that object.
        let requiresNewObject: Bool
    }

    /// The events of `candidates` when the rules answer each by storing it, at the server
    /// sequences after the head, provided the log agrees: the device's last sequence is the one
    /// before the first event's, none of the identifiers is stored or was rejected, and no
    /// object of an event that ``AppendedEvent/requiresNewObject`` is held. Nil when the push
    /// alone shows that some answer would be another (a refused or rejected event, sequences
    /// that do not follow one another, an identifier twice, a creation after another event
    /// about its object, a purge, whose snapshots the push must retire). A backend that checks
    /// those conditions as it writes may store such a push without running ``apply(_:for:in:)``,
    /// and answers it with ``appendedResponse(_:lastServerSequence:chainHash:)``.
    func appendedEvents(_ candidates: [PushCandidate], scope: TokenScope) -> [AppendedEvent]? {
        guard let first = candidates.first?.deviceSequence else { return nil }
        var events: [AppendedEvent] = []
        events.reserveCapacity(candidates.count)
        var ids: Set<UUID> = [], objects: Set<UUID> = []
        for (offset, candidate) in candidates.enumerated() {
            guard case .accept(let event, let contentHash) = candidate, event.deviceSequence == first + Int64(offset),
                event.type != EventType.assetPurged.rawValue, ids.insert(event.id).inserted
            else { return nil }
            let requiresNewObject = Self.needsObjectRule(event, scope: scope)
            guard objects.insert(event.object).inserted || !requiresNewObject else { return nil }
            events.append(AppendedEvent(event: event, contentHash: contentHash, requiresNewObject: requiresNewObject))
        }
        return events
    }

    /// The answer to a push of `events` (``appendedEvents(_:scope:)``) that the log stored
    /// through `lastServerSequence`, with the chain at `chainHash` after the last.
    func appendedResponse(_ events: [AppendedEvent], lastServerSequence: Int64, chainHash: [UInt8]) -> PushResponse {
        let firstServerSequence = lastServerSequence - Int64(events.count) + 1
        return PushResponse(
            results: events.enumerated().map {
                PushResult(id: $1.event.id, status: .stored(serverSequence: firstServerSequence + Int64($0)))
            },
            lastDeviceSequence: events.last?.event.deviceSequence ?? 0,
            head: ServerChainHead(serverSequence: lastServerSequence, chainHash: chainHash))
    }

    private struct State: ~Copyable {
        var head: LibraryHead
        var lastDeviceSequence: Int64
        var gapped = false
        var chain: HashChain
        /// The position of the last purge the push stored.
        var lastPurge: Int64?

        init(head: LibraryHead, lastDeviceSequence: Int64) {
            self.head = head
            self.lastDeviceSequence = lastDeviceSequence
            chain = HashChain(head: head.chainHash)
        }
    }

    private func answer(_ candidate: PushCandidate, credential: Credential, state: inout State, _ transaction: any PushTransaction) throws
        -> PushResult
    {
        let id = candidate.id
        if case .refuse(_, let reason) = candidate { return PushResult(id: id, status: .rejected(reason: reason)) }
        let expected = state.lastDeviceSequence + 1
        let sequence = candidate.deviceSequence
        if state.gapped || sequence > expected {
            state.gapped = true
            return PushResult(id: id, status: .gap(expectedDeviceSequence: expected))
        }
        if sequence < expected {
            if let stored = try duplicate(candidate, transaction) { return PushResult(id: id, status: stored) }
            if let reason = try transaction.rejectionReason(ofEvent: id) { return PushResult(id: id, status: .rejected(reason: reason)) }
            return PushResult(
                id: id,
                status: try reject(
                    id, sequence, "device sequence \(sequence) already used (last is \(state.lastDeviceSequence))", transaction))
        }
        // The next sequence. A stored duplicate shows up as a refused insert below; a rejection
        // of the same event before needs a lookup here.
        if let reason = try transaction.rejectionReason(ofEvent: id) { return PushResult(id: id, status: .rejected(reason: reason)) }
        switch candidate {
        case .refuse(_, let reason):
            return PushResult(id: id, status: .rejected(reason: reason))
        case .reject(_, _, let reason):
            state.lastDeviceSequence = sequence
            return PushResult(id: id, status: try reject(id, sequence, reason, transaction))
        case .accept(let event, let contentHash):
            // A transaction that checks new events on its write is told which need a new object;
            // when a check fails there, the push runs again with the lookups below.
            let checkedOnWrite = transaction.checksNewEventsOnWrite
            if !checkedOnWrite {
                if let stored = try duplicate(candidate, transaction) {
                    // Stored before under another sequence: the duplicate it is, or another event
                    // under a taken identifier, whose rejection consumes the sequence.
                    guard case .rejected(let reason) = stored else { return PushResult(id: id, status: stored) }
                    state.lastDeviceSequence = sequence
                    return PushResult(id: id, status: try reject(id, sequence, reason, transaction))
                }
                if let reason = try objectRule(event, scope: credential.scope, transaction) {
                    state.lastDeviceSequence = sequence
                    return PushResult(id: id, status: try reject(id, sequence, reason, transaction))
                }
            }
            let hash = state.chain.hash(linking: event)
            guard
                try transaction.insert(
                    event, serverSequence: state.head.sequence + 1, chainHash: hash, contentHash: contentHash,
                    requiringNewObject: checkedOnWrite && Self.needsObjectRule(event, scope: credential.scope))
            else {
                // Stored by another push since the lookup above (not within one transaction).
                return PushResult(id: id, status: .rejected(reason: "conflicting event identifier"))
            }
            state.chain.advance(to: hash)
            state.head = LibraryHead(sequence: state.head.sequence + 1, chainHash: hash)
            state.lastDeviceSequence = sequence
            if event.type == EventType.assetPurged.rawValue { state.lastPurge = state.head.sequence }
            return PushResult(id: id, status: .stored(serverSequence: state.head.sequence))
        }
    }

    /// The answer for an event whose identifier is stored: a duplicate when the stored event has
    /// the same content (or was stored without its hash), a rejection otherwise; nil when the
    /// identifier is not stored.
    private func duplicate(_ candidate: PushCandidate, _ transaction: any PushTransaction) throws -> PushResult.Status? {
        guard let stored = try transaction.storedEvent(candidate.id) else { return nil }
        if case .accept(_, let hash?) = candidate, let storedHash = stored.contentHash, !constantTimeEquals(hash, storedHash) {
            return .rejected(
                reason: "another event with the identifier \(candidate.id.uuidString) is stored; an identifier names one event")
        }
        return .duplicate(serverSequence: stored.serverSequence)
    }

    /// Why the log refuses `event` for the object it names, or nil: the scope and creation rules.
    private func objectRule(_ event: Event, scope: TokenScope, _ transaction: any PushTransaction) throws -> String? {
        guard Self.needsObjectRule(event, scope: scope), let type = EventType(rawValue: event.type) else { return nil }
        let presence = try transaction.presence(ofObject: event.object)
        guard case .held(let kind) = presence else { return nil }
        let object = event.object.uuidString
        if scope == .addOnly {
            return "an addOnly token may only create new assets, and object \(object) exists in this library already"
        }
        switch (type, kind) {
        case (.assetCreated, _):
            return "asset \(object) exists in this library already; an asset is created once"
        case (.albumCreated, .asset?):
            return "object \(object) is an asset in this library; an album cannot be created with its identifier"
        case (.albumCreated, .collectionList?):
            return "object \(object) is a folder in this library; an album cannot be created with its identifier"
        case (.collectionListCreated, .collectionList?):
            return "folder \(object) exists in this library already; a folder is created once"
        case (.collectionListCreated, let held?):
            return
                "object \(object) is \(held == .asset ? "an asset" : "an album") in this library; a folder cannot be created with its identifier"
        default:
            return nil
        }
    }

    /// Whether `event` is valid only for an object the log does not hold yet, or only for an
    /// object of some kind: a creation, or anything from an addOnly token.
    private static func needsObjectRule(_ event: Event, scope: TokenScope) -> Bool {
        guard let type = EventType(rawValue: event.type) else { return false }
        return type.isCreation || scope == .addOnly
    }

    private func reject(_ id: UUID, _ sequence: Int64, _ reason: String, _ transaction: any PushTransaction) throws -> PushResult.Status {
        try transaction.recordRejection(ofEvent: id, deviceSequence: sequence, reason: reason)
        return .rejected(reason: reason)
    }
}
