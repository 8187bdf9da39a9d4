import Foundation
import LedgerCore

/// A request or response body of the sync protocol: encodes to and decodes from JSON bytes.
public protocol WireMessage: Sendable {
    /// Writes the message as one JSON value.
    func write(to writer: inout JSONWriter)
    /// Reads the message from a JSON value.
    static func read(from reader: inout JSONReader) throws -> Self
}

extension WireMessage {
    /// The message as compact JSON bytes.
    public func encoded() -> [UInt8] {
        var writer = JSONWriter(capacity: 1024)
        write(to: &writer)
        return writer.bytes
    }

    /// Decodes a message from JSON bytes.
    ///
    /// - Throws: ``WireFormatError`` naming the field that is malformed, missing or of the wrong type.
    public static func decode(_ bytes: [UInt8]) throws -> Self {
        do {
            return try JSONReader.read(bytes) { try read(from: &$0) }
        } catch let error as JSONError {
            throw WireFormatError(field: "", message: error.description)
        }
    }
}

/// Reads an object member by member; unknown members are skipped (for forward compatibility).
func readObject(_ reader: inout JSONReader, path: @autoclosure () -> String, _ member: (String, inout JSONReader) throws -> Bool)
    throws
{
    func named() -> String {
        let path = path()
        return path.isEmpty ? "body" : path
    }
    try reading(named()) { try reader.beginObject() }
    while let key = try reading(named(), { try reader.nextKey() }) {
        if try !member(key, &reader) { try reading(key) { try reader.skipValue() } }
    }
}

/// Reads the array of member `key` element by element: `element` reads one, given its index.
func readArray<Element>(_ reader: inout JSONReader, _ key: String, _ element: (inout JSONReader, Int) throws -> Element) throws -> [Element]
{
    var list: [Element] = []
    try reading(key) { try reader.beginArray() }
    while try reading(key, { try reader.nextElement() }) {
        list.append(try element(&reader, list.count))
    }
    return list
}

/// Throws a "missing" error for `field` when `value` is nil.
func required<T>(_ value: T?, _ field: @autoclosure () -> String) throws -> T {
    guard let value else { throw WireFormatError(field: field(), message: "is missing") }
    return value
}

// MARK: Push

/// `POST /v1/libraries/{library}/events`: a batch of one device's events, in device order.
///
/// ```json
/// {"device":"anna-phone","events":[{…WireEvent…}, …]}
/// ```
public struct PushRequest: WireMessage, Hashable {
    /// The pushing device; it must be the device of the token.
    public var device: DeviceID
    /// The events, in device-sequence order.
    public var events: [WireEvent]

    /// Creates a push request.
    public init(device: DeviceID, events: [WireEvent]) {
        self.device = device
        self.events = events
    }

    /// Creates a push request from log events, computing each content hash.
    public init(device: DeviceID, events: [Event]) {
        self.init(device: device, events: WireEvent.hashing(events))
    }

    public func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("device"); writer.string(device.rawValue)
        writer.key("events")
        writer.beginArray()
        for event in events { event.write(to: &writer) }
        writer.endArray()
        writer.endObject()
    }

    public static func read(from reader: inout JSONReader) throws -> PushRequest {
        let received = try ReceivedPush.read(from: &reader)
        var events: [WireEvent] = []
        events.reserveCapacity(received.events.count)
        for event in received.events {
            switch event {
            case .valid(let event): events.append(event)
            case .invalid(_, _, let field, let problem): throw WireFormatError(field: field, message: problem)
            }
        }
        return PushRequest(device: received.device, events: events)
    }
}

/// A push request as the server reads it: events with invalid fields are kept (as
/// ``ReceivedEvent/invalid(id:deviceSequence:field:problem:)``) so they can be acknowledged as rejected.
public struct ReceivedPush: WireMessage, Hashable {
    /// The pushing device.
    public var device: DeviceID
    /// The key store changes sent with the events (only in the keyed binary form,
    /// `EventBatch.keyedContentType`; never in JSON).
    public var keys: [KeyChange]
    /// The events, in the order sent.
    public var events: [ReceivedEvent]

    /// Creates a received push.
    public init(device: DeviceID, keys: [KeyChange] = [], events: [ReceivedEvent]) {
        self.device = device
        self.keys = keys
        self.events = events
    }

    public func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("device"); writer.string(device.rawValue)
        writer.key("events")
        writer.beginArray()
        for case .valid(let event) in events { event.write(to: &writer) }
        writer.endArray()
        writer.endObject()
    }

    public static func read(from reader: inout JSONReader) throws -> ReceivedPush {
        var device: DeviceID?
        var events: [ReceivedEvent]?
        try readObject(&reader, path: "") { key, reader in
            switch key {
            case "device":
                let name = try reading(key) { try reader.readString() }
                if let problem = DeviceID.problem(with: name) { throw WireFormatError(field: key, message: problem) }
                device = DeviceID(name)
            case "events":
                var list: [ReceivedEvent] = []
                try reading(key) { try reader.beginArray() }
                while try reading(key, { try reader.nextElement() }) {
                    list.append(try WireEvent.readReceived(from: &reader, path: "events[\(list.count)]"))
                }
                events = list
            default: return false
            }
            return true
        }
        return ReceivedPush(device: try required(device, "device"), events: try required(events, "events"))
    }
}

/// What the server did with one pushed event.
public struct PushResult: Sendable, Hashable {
    /// The outcome.
    public enum Status: Sendable, Hashable {
        /// Stored now, at this server sequence.
        case stored(serverSequence: Int64)
        /// Already stored earlier, at this server sequence; nothing changed.
        case duplicate(serverSequence: Int64)
        /// Refused for good; the event consumed its device sequence, so drop it from the queue.
        case rejected(reason: String)
        /// Not stored: the server expects this device sequence first. Re-push from there.
        case gap(expectedDeviceSequence: Int64)
    }

    /// The event's identifier.
    public var id: UUID
    /// The outcome.
    public var status: Status

    /// Creates a result.
    public init(id: UUID, status: Status) {
        self.id = id
        self.status = status
    }

    /// The server sequence when the event is stored (now or before).
    public var serverSequence: Int64? {
        switch status {
        case .stored(let sequence), .duplicate(let sequence): return sequence
        case .rejected, .gap: return nil
        }
    }

    func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("id"); writer.uuid(id)
        switch status {
        case .stored(let sequence):
            writer.key("status"); writer.string("stored")
            writer.key("serverSeq"); writer.integer(sequence)
        case .duplicate(let sequence):
            writer.key("status"); writer.string("duplicate")
            writer.key("serverSeq"); writer.integer(sequence)
        case .rejected(let reason):
            writer.key("status"); writer.string("rejected")
            writer.key("reason"); writer.string(reason)
        case .gap(let expected):
            writer.key("status"); writer.string("gap")
            writer.key("expectedDeviceSeq"); writer.integer(expected)
        }
        writer.endObject()
    }

    static func read(from reader: inout JSONReader, path: @autoclosure () -> String) throws -> PushResult {
        var id: UUID?, status: String?, sequence: Int64?, reason: String?, expected: Int64?
        try readObject(&reader, path: path()) { key, reader in
            switch key {
            case "id":
                id = try reading("\(path()).\(key)") { try reader.withStringBytes(parseUUID) }
                if id == nil { throw WireFormatError(field: "\(path()).\(key)", message: "not a valid UUID") }
            case "status": status = try reading("\(path()).\(key)") { try reader.readString() }
            case "serverSeq": sequence = try reading("\(path()).\(key)") { try reader.readInt64() }
            case "reason": reason = try reading("\(path()).\(key)") { try reader.readString() }
            case "expectedDeviceSeq": expected = try reading("\(path()).\(key)") { try reader.readInt64() }
            default: return false
            }
            return true
        }
        let resolved: Status
        switch try required(status, "\(path()).status") {
        case "stored": resolved = .stored(serverSequence: try required(sequence, "\(path()).serverSeq"))
        case "duplicate": resolved = .duplicate(serverSequence: try required(sequence, "\(path()).serverSeq"))
        case "rejected": resolved = .rejected(reason: try required(reason, "\(path()).reason"))
        case "gap": resolved = .gap(expectedDeviceSequence: try required(expected, "\(path()).expectedDeviceSeq"))
        case let other: throw WireFormatError(field: "\(path()).status", message: "unknown status '\(other)'")
        }
        return PushResult(id: try required(id, "\(path()).id"), status: resolved)
    }
}

/// The answer to a push: one result per event, in request order, and the highest device
/// sequence the server has consumed for the device.
///
/// ```json
/// {"results":[{"id":"…","status":"stored","serverSeq":12},
///             {"id":"…","status":"duplicate","serverSeq":5},
///             {"id":"…","status":"rejected","reason":"…"},
///             {"id":"…","status":"gap","expectedDeviceSeq":7}],
///  "lastDeviceSeq":9}
/// ```
public struct PushResponse: WireMessage, Hashable {
    /// One result per pushed event, in request order.
    public var results: [PushResult]
    /// The highest device sequence consumed (stored or rejected) for the device.
    public var lastDeviceSequence: Int64
    /// The library's head when the push committed: its last server sequence and the chain value
    /// after it (`"head":{"serverSeq":N,"chainHash":"…"}`; absent from older servers). A device
    /// whose events were stored right after everything it had pulled confirms them from this:
    /// it chains its own copies from the value it holds and compares, so it need not pull its
    /// own events back.
    public var head: ServerChainHead?
    /// What became of the key store changes the push carried (keyed form only): stored in the
    /// transaction that stored the events (`"keys":{…}`, see ``PushedKeyChanges``).
    public var keys: PushedKeyChanges?

    /// Creates a push response.
    public init(results: [PushResult], lastDeviceSequence: Int64, head: ServerChainHead? = nil, keys: PushedKeyChanges? = nil) {
        self.results = results
        self.lastDeviceSequence = lastDeviceSequence
        self.head = head
        self.keys = keys
    }

    public func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("results")
        writer.beginArray()
        for result in results { result.write(to: &writer) }
        writer.endArray()
        writer.key("lastDeviceSeq"); writer.integer(lastDeviceSequence)
        if let head {
            writer.key("head")
            writer.beginObject()
            writer.key("serverSeq"); writer.integer(head.serverSequence)
            writer.key("chainHash"); writer.hex(head.chainHash)
            writer.endObject()
        }
        if let keys {
            writer.key("keys")
            keys.write(to: &writer)
        }
        writer.endObject()
    }

    public static func read(from reader: inout JSONReader) throws -> PushResponse {
        var results: [PushResult]?, last: Int64?, head: ServerChainHead?, keys: PushedKeyChanges?
        try readObject(&reader, path: "") { key, reader in
            switch key {
            case "results":
                var list: [PushResult] = []
                try reading(key) { try reader.beginArray() }
                while try reading(key, { try reader.nextElement() }) {
                    list.append(try PushResult.read(from: &reader, path: "results[\(list.count)]"))
                }
                results = list
            case "lastDeviceSeq": last = try reading(key) { try reader.readInt64() }
            case "head": head = try ServerChainHead.read(from: &reader, path: key)
            case "keys": keys = try PushedKeyChanges.read(from: &reader, path: key)
            default: return false
            }
            return true
        }
        return PushResponse(
            results: try required(results, "results"), lastDeviceSequence: try required(last, "lastDeviceSeq"), head: head, keys: keys)
    }
}

/// A position in the server's log and the chain value after it.
public struct ServerChainHead: Sendable, Hashable {
    /// The server sequence (0 for an empty log).
    public var serverSequence: Int64
    /// The chain value after the event at `serverSequence` (64 zero digits for an empty log).
    public var chainHash: [UInt8]

    /// Creates a head.
    public init(serverSequence: Int64, chainHash: [UInt8]) {
        self.serverSequence = serverSequence
        self.chainHash = chainHash
    }

    static func read(from reader: inout JSONReader, path: String) throws -> ServerChainHead {
        var sequence: Int64?, hash: [UInt8]?
        try readObject(&reader, path: path) { key, reader in
            switch key {
            case "serverSeq": sequence = try reading("\(path).\(key)") { try reader.readInt64() }
            case "chainHash":
                hash = try reading("\(path).\(key)") { try reader.withStringBytes { parseHex($0, count: 32) } }
                if hash == nil { throw WireFormatError(field: "\(path).\(key)", message: "must be 64 hexadecimal digits") }
            default: return false
            }
            return true
        }
        return ServerChainHead(
            serverSequence: try required(sequence, "\(path).serverSeq"), chainHash: try required(hash, "\(path).chainHash"))
    }
}

// MARK: Pull

/// `GET /v1/libraries/{library}/events?since=N&limit=M`: a page of events in server order.
///
/// ```json
/// {"events":[{…WireEvent with serverSeq and chainHash…}],"nextCursor":1000,"hasMore":true}
/// ```
/// Pass `nextCursor` as the next `since`; stop when `hasMore` is false.
public struct PullResponse: WireMessage, Hashable {
    /// The events after the cursor, in server order, each with `serverSequence` and `chainHash`.
    public var events: [WireEvent]
    /// The server sequence of the last event of the page (the request's `since` when empty).
    public var nextCursor: Int64
    /// Whether more events follow.
    public var hasMore: Bool

    /// Creates a pull response.
    public init(events: [WireEvent], nextCursor: Int64, hasMore: Bool) {
        self.events = events
        self.nextCursor = nextCursor
        self.hasMore = hasMore
    }

    public func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("events")
        writer.beginArray()
        for event in events { event.write(to: &writer) }
        writer.endArray()
        writer.key("nextCursor"); writer.integer(nextCursor)
        writer.key("hasMore"); writer.bool(hasMore)
        writer.endObject()
    }

    public static func read(from reader: inout JSONReader) throws -> PullResponse {
        var events: [WireEvent]?, cursor: Int64?, hasMore: Bool?
        try readObject(&reader, path: "") { key, reader in
            switch key {
            case "events":
                var list: [WireEvent] = []
                try reading(key) { try reader.beginArray() }
                while try reading(key, { try reader.nextElement() }) {
                    list.append(try WireEvent.read(from: &reader, path: "events[\(list.count)]"))
                }
                events = list
            case "nextCursor": cursor = try reading(key) { try reader.readInt64() }
            case "hasMore": hasMore = try reading(key) { try reader.readBool() }
            default: return false
            }
            return true
        }
        return PullResponse(
            events: try required(events, "events"), nextCursor: try required(cursor, "nextCursor"),
            hasMore: try required(hasMore, "hasMore"))
    }
}

// MARK: Blobs

/// `POST /v1/libraries/{library}/blobs/missing` body: `{"hashes":["<64 hex>", …]}`.
public struct MissingBlobsRequest: WireMessage, Hashable {
    /// Lowercase hex SHA-256 names of blobs the client holds.
    public var hashes: [String]

    /// Creates the request.
    public init(hashes: [String]) { self.hashes = hashes }

    public func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("hashes")
        writer.beginArray()
        for hash in hashes { writer.string(hash) }
        writer.endArray()
        writer.endObject()
    }

    public static func read(from reader: inout JSONReader) throws -> MissingBlobsRequest {
        MissingBlobsRequest(hashes: try readStringList(&reader, member: "hashes"))
    }
}

/// The answer to ``MissingBlobsRequest``: `{"missing":["<64 hex>", …]}`, the hashes the server
/// does not hold for the library, in request order.
public struct MissingBlobsResponse: WireMessage, Hashable {
    /// The hashes to upload.
    public var missing: [String]

    /// Creates the response.
    public init(missing: [String]) { self.missing = missing }

    public func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("missing")
        writer.beginArray()
        for hash in missing { writer.string(hash) }
        writer.endArray()
        writer.endObject()
    }

    public static func read(from reader: inout JSONReader) throws -> MissingBlobsResponse {
        MissingBlobsResponse(missing: try readStringList(&reader, member: "missing"))
    }
}

/// The answer to `GET /v1/libraries/{library}/uploads/{sha256}`, and to a resumable upload's
/// `PUT` that left the blob unfinished: `{"offset":N,"stored":false}`. `offset` is the number of
/// bytes of the blob the server holds from this device's unfinished upload (0 when there is
/// none); the next `PUT` sends the bytes from there. `stored` is true when the library already
/// holds the blob, so nothing needs to be sent.
public struct UploadStatus: WireMessage, Hashable {
    /// The bytes held, from the blob's start.
    public var offset: Int64
    /// Whether the library holds the whole blob already.
    public var stored: Bool

    /// Creates the status.
    public init(offset: Int64, stored: Bool = false) {
        self.offset = offset
        self.stored = stored
    }

    public func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("offset"); writer.integer(offset)
        writer.key("stored"); writer.bool(stored)
        writer.endObject()
    }

    public static func read(from reader: inout JSONReader) throws -> UploadStatus {
        var offset: Int64?, stored = false
        try readObject(&reader, path: "") { key, reader in
            switch key {
            case "offset":
                offset = try reading(key) { try reader.readInt64() }
                if let value = offset, value < 0 { throw WireFormatError(field: key, message: "must not be negative") }
            case "stored": stored = try reading(key) { try reader.readBool() }
            default: return false
            }
            return true
        }
        return UploadStatus(offset: try required(offset, "offset"), stored: stored)
    }
}

private func readStringList(_ reader: inout JSONReader, member: String) throws -> [String] {
    var list: [String]?
    try readObject(&reader, path: "") { key, reader in
        guard key == member else { return false }
        var values: [String] = []
        try reading(key) { try reader.beginArray() }
        while try reading(key, { try reader.nextElement() }) {
            values.append(try reading("\(key)[\(values.count)]") { try reader.readString() })
        }
        list = values
        return true
    }
    return try required(list, member)
}

/// `POST /v1/libraries/{library}/blobs/references` body:
/// `{"references":[{"object":"<UUID>","hashes":["<64 hex>", …]}, …]}`: the blobs the events of
/// each object refer to, as the writing device declares them before it pushes the events. The
/// server cannot read payloads (they may be sealed); these declarations are what its blob
/// garbage collection marks from (an object's blobs stay while the object is not purged).
public struct BlobReferencesRequest: WireMessage, Hashable {
    /// One object and the blobs its events refer to.
    public struct Reference: Sendable, Hashable {
        /// The object (an asset) the events are about: their envelope's `object`.
        public var object: UUID
        /// Lowercase hex SHA-256 names of the blobs.
        public var hashes: [String]

        /// Creates a reference.
        public init(object: UUID, hashes: [String]) {
            self.object = object
            self.hashes = hashes
        }
    }

    /// The references, at most ``maximumHashes`` hashes in all.
    public var references: [Reference]

    /// The most hashes one request may declare.
    public static let maximumHashes = 20_000

    /// Creates the request.
    public init(references: [Reference]) { self.references = references }

    public func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("references")
        writer.beginArray()
        for reference in references {
            writer.beginObject()
            writer.key("object"); writer.uuid(reference.object)
            writer.key("hashes")
            writer.beginArray()
            for hash in reference.hashes { writer.string(hash) }
            writer.endArray()
            writer.endObject()
        }
        writer.endArray()
        writer.endObject()
    }

    public static func read(from reader: inout JSONReader) throws -> BlobReferencesRequest {
        var references: [Reference]?
        try readObject(&reader, path: "") { key, reader in
            guard key == "references" else { return false }
            var list: [Reference] = []
            try reading(key) { try reader.beginArray() }
            while try reading(key, { try reader.nextElement() }) {
                let path = "references[\(list.count)]"
                var object: UUID?
                var hashes: [String]?
                try readObject(&reader, path: path) { member, reader in
                    let field = "\(path).\(member)"
                    switch member {
                    case "object":
                        object = try reading(field) { try reader.withStringBytes(parseUUID) }
                        if object == nil { throw WireFormatError(field: field, message: "not a valid UUID") }
                    case "hashes":
                        var values: [String] = []
                        try reading(field) { try reader.beginArray() }
                        while try reading(field, { try reader.nextElement() }) {
                            values.append(try reading("\(field)[\(values.count)]") { try reader.readString() })
                        }
                        hashes = values
                    default: return false
                    }
                    return true
                }
                list.append(Reference(object: try required(object, "\(path).object"), hashes: try required(hashes, "\(path).hashes")))
            }
            references = list
            return true
        }
        return BlobReferencesRequest(references: try required(references, "references"))
    }
}

/// The answer to ``BlobReferencesRequest``: `{"recorded":N}`, the number of references recorded.
public struct BlobReferencesResponse: WireMessage, Hashable {
    /// How many (object, blob) references the server recorded.
    public var recorded: Int

    /// Creates the response.
    public init(recorded: Int) { self.recorded = recorded }

    public func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("recorded"); writer.integer(Int64(recorded))
        writer.endObject()
    }

    public static func read(from reader: inout JSONReader) throws -> BlobReferencesResponse {
        var recorded: Int64?
        try readObject(&reader, path: "") { key, reader in
            guard key == "recorded" else { return false }
            recorded = try reading(key) { try reader.readInt64() }
            return true
        }
        return BlobReferencesResponse(recorded: Int(clamping: try required(recorded, "recorded")))
    }
}

// MARK: Chain, health, errors

/// `GET /v1/libraries/{library}/chain`: `{"count":N,"headHash":"<hex>","lastServerSeq":N}`.
public struct ChainSummary: WireMessage, Hashable {
    /// The number of events in the server's log of the library.
    public var count: Int64
    /// The chain value after the last event (64 zero digits for an empty log).
    public var headHash: [UInt8]
    /// The last server sequence (0 for an empty log).
    public var lastServerSequence: Int64

    /// Creates a summary.
    public init(count: Int64, headHash: [UInt8], lastServerSequence: Int64) {
        self.count = count
        self.headHash = headHash
        self.lastServerSequence = lastServerSequence
    }

    public func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("count"); writer.integer(count)
        writer.key("headHash"); writer.hex(headHash)
        writer.key("lastServerSeq"); writer.integer(lastServerSequence)
        writer.endObject()
    }

    public static func read(from reader: inout JSONReader) throws -> ChainSummary {
        var count: Int64?, head: [UInt8]?, last: Int64?
        try readObject(&reader, path: "") { key, reader in
            switch key {
            case "count": count = try reading(key) { try reader.readInt64() }
            case "headHash":
                head = try reading(key) { try reader.withStringBytes { parseHex($0, count: 32) } }
                if head == nil { throw WireFormatError(field: key, message: "must be 64 hexadecimal digits") }
            case "lastServerSeq": last = try reading(key) { try reader.readInt64() }
            default: return false
            }
            return true
        }
        return ChainSummary(
            count: try required(count, "count"), headHash: try required(head, "headHash"),
            lastServerSequence: try required(last, "lastServerSeq"))
    }
}

/// `GET /v1/libraries/{library}/verify`: the server recomputes its hash chain.
///
/// `{"intact":true,"count":N}` or `{"intact":false,"brokenAt":{"serverSeq":N,"eventId":"…"}}`.
public enum ChainVerification: WireMessage, Hashable {
    /// Every stored chain value matches the recomputed one.
    case intact(count: Int64)
    /// The first event whose stored chain value (or sequence) does not match.
    case broken(serverSequence: Int64, eventID: UUID)

    public func write(to writer: inout JSONWriter) {
        writer.beginObject()
        switch self {
        case .intact(let count):
            writer.key("intact"); writer.bool(true)
            writer.key("count"); writer.integer(count)
        case .broken(let sequence, let eventID):
            writer.key("intact"); writer.bool(false)
            writer.key("brokenAt")
            writer.beginObject()
            writer.key("serverSeq"); writer.integer(sequence)
            writer.key("eventId"); writer.uuid(eventID)
            writer.endObject()
        }
        writer.endObject()
    }

    public static func read(from reader: inout JSONReader) throws -> ChainVerification {
        let value = try reader.readValue()
        guard let intact = value["intact"]?.boolValue else { throw WireFormatError(field: "intact", message: "is missing") }
        if intact {
            return .intact(count: try required(value["count"]?.int64Value, "count"))
        }
        let sequence = try required(value["brokenAt"]?["serverSeq"]?.int64Value, "brokenAt.serverSeq")
        let idText = try required(value["brokenAt"]?["eventId"]?.stringValue, "brokenAt.eventId")
        return .broken(serverSequence: sequence, eventID: try required(UUID(uuidString: idText), "brokenAt.eventId"))
    }
}

/// `GET /v1/libraries/{library}/watermark`: how far every device of the library has pulled, so
/// a device can tell which of its events it may move to its archive.
///
/// ```json
/// {"watermark":120,"lastServerSeq":135,"devices":3}
/// ```
///
/// The devices counted are those with at least one token that is not revoked and may pull
/// (`readWrite` or `readOnly`). A device whose every token is revoked can no longer pull, and an
/// `addOnly` device never pulls, so neither holds the watermark back. The watermark is the
/// lowest last pulled position among the counted devices (0 for a device that never pulled),
/// never above `lastServerSeq`; with no device counted it is `lastServerSeq`.
public struct CompactionWatermark: WireMessage, Hashable {
    /// The highest server sequence that every counted device has pulled: each of them holds every
    /// event at or below it.
    public var watermark: Int64
    /// The library's last server sequence (0 for an empty log).
    public var lastServerSequence: Int64
    /// How many devices the watermark was computed over.
    public var deviceCount: Int

    /// Creates a watermark.
    public init(watermark: Int64, lastServerSequence: Int64, deviceCount: Int) {
        self.watermark = watermark
        self.lastServerSequence = lastServerSequence
        self.deviceCount = deviceCount
    }

    public func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("watermark"); writer.integer(watermark)
        writer.key("lastServerSeq"); writer.integer(lastServerSequence)
        writer.key("devices"); writer.integer(Int64(deviceCount))
        writer.endObject()
    }

    /// Reads the message; a watermark outside `0...lastServerSeq` or a negative device count is
    /// malformed.
    public static func read(from reader: inout JSONReader) throws -> CompactionWatermark {
        var watermark: Int64?, last: Int64?, devices: Int64?
        try readObject(&reader, path: "") { key, reader in
            switch key {
            case "watermark": watermark = try reading(key) { try reader.readInt64() }
            case "lastServerSeq": last = try reading(key) { try reader.readInt64() }
            case "devices": devices = try reading(key) { try reader.readInt64() }
            default: return false
            }
            return true
        }
        let message = CompactionWatermark(
            watermark: try required(watermark, "watermark"), lastServerSequence: try required(last, "lastServerSeq"),
            deviceCount: Int(clamping: try required(devices, "devices")))
        guard message.lastServerSequence >= 0 else { throw WireFormatError(field: "lastServerSeq", message: "must not be negative") }
        guard (0...message.lastServerSequence).contains(message.watermark) else {
            throw WireFormatError(field: "watermark", message: "must be from 0 to lastServerSeq (\(message.lastServerSequence))")
        }
        guard message.deviceCount >= 0 else { throw WireFormatError(field: "devices", message: "must not be negative") }
        return message
    }
}

/// `GET /v1/health`: `{"status":"ok","version":"…"}`.
public struct HealthResponse: WireMessage, Hashable {
    /// `ok` when the server is serving.
    public var status: String
    /// The server's version.
    public var version: String

    /// Creates the response.
    public init(status: String = "ok", version: String) {
        self.status = status
        self.version = version
    }

    public func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("status"); writer.string(status)
        writer.key("version"); writer.string(version)
        writer.endObject()
    }

    public static func read(from reader: inout JSONReader) throws -> HealthResponse {
        let value = try reader.readValue()
        return HealthResponse(
            status: try required(value["status"]?.stringValue, "status"), version: try required(value["version"]?.stringValue, "version"))
    }
}

/// The machine-readable codes of error responses.
public enum ErrorCode: String, Sendable, Hashable, CaseIterable {
    /// 400: malformed JSON, wrong types, invalid identifiers or names; the message names the field.
    case badRequest
    /// 400: an uploaded blob's bytes do not hash to its name.
    case hashMismatch
    /// 401: no token, an unknown token or a revoked token.
    case unauthorized
    /// 403: the token is for another library, or its scope does not allow the request.
    case forbidden
    /// 404: no such route, or no such blob.
    case notFound
    /// 405: the route exists but not with this method (see the `Allow` header).
    case methodNotAllowed
    /// 409: the request contradicts the server's state (a snapshot at a position or chain value
    /// the server's log does not have).
    case conflict
    /// 413: the body is larger than the server accepts.
    case payloadTooLarge
    /// 415: the body's `Content-Type` or `Content-Encoding` is not supported.
    case unsupportedMediaType
    /// 422: an event's clock stamp is too far ahead of the server clock; nothing was stored.
    case clockSkew
    /// 500: the server failed; retry later.
    case internalError
}

/// Every error response body: `{"error":{"code":"…","message":"…"}}`, plus `serverTime`
/// (Unix milliseconds) for ``ErrorCode/clockSkew``.
public struct ErrorResponse: WireMessage, Hashable, Error, CustomStringConvertible {
    /// The code, as sent (an ``ErrorCode`` raw value for this server version).
    public var code: String
    /// What happened and what to do.
    public var message: String
    /// The server's clock, for clock-skew errors.
    public var serverTime: UInt64?

    /// Creates an error body.
    public init(code: ErrorCode, message: String, serverTime: UInt64? = nil) {
        self.init(code: code.rawValue, message: message, serverTime: serverTime)
    }

    /// Creates an error body with a code string.
    public init(code: String, message: String, serverTime: UInt64? = nil) {
        self.code = code
        self.message = message
        self.serverTime = serverTime
    }

    /// The code, when this version knows it.
    public var errorCode: ErrorCode? { ErrorCode(rawValue: code) }

    public var description: String { "\(code): \(message)" }

    public func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("error")
        writer.beginObject()
        writer.key("code"); writer.string(code)
        writer.key("message"); writer.string(message)
        if let serverTime {
            writer.key("serverTime"); writer.integer(Int64(clamping: serverTime))
        }
        writer.endObject()
        writer.endObject()
    }

    public static func read(from reader: inout JSONReader) throws -> ErrorResponse {
        let value = try reader.readValue()
        let error = try required(value["error"], "error")
        return ErrorResponse(
            code: try required(error["code"]?.stringValue, "error.code"),
            message: try required(error["message"]?.stringValue, "error.message"),
            serverTime: error["serverTime"]?.int64Value.map { UInt64(clamping: $0) })
    }
}
