import Foundation
import LedgerCore

/// The names of a library's key store entries: 1–160 characters of lowercase letters, digits,
/// `-`, `.`, `_` and `/` (for example `asset/1234` or `ring/anna-phone`).
public enum KeyEntryName {
    /// The longest name, in bytes.
    public static let maximumLength = 160
    /// The largest value of one entry, in bytes.
    public static let maximumValueBytes = 1 << 20

    /// Why `name` cannot name an entry, or nil.
    public static func problem(with name: String) -> String? {
        let utf8 = name.utf8
        guard !utf8.isEmpty, utf8.count <= maximumLength,
            utf8.allSatisfy({
                ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2D || $0 == 0x2E || $0 == 0x5F || $0 == 0x2F
            })
        else { return "must be 1 to \(maximumLength) characters of a-z, 0-9, '-', '.', '_' and '/'" }
        return nil
    }
}

/// One entry of a library's key store: opaque bytes the server keeps for the devices (public
/// keys, key rings and asset keys sealed for devices or under library keys). The server cannot
/// open any of them.
public struct KeyEntry: Sendable, Hashable {
    /// The entry's name.
    public var name: String
    /// Its bytes.
    public var value: [UInt8]

    /// Creates an entry.
    public init(name: String, value: [UInt8]) {
        self.name = name
        self.value = value
    }
}

/// `GET /v1/libraries/{library}/keys?after=N`: the entries of the library's key store written
/// after position N (0: all of them), and the position to ask from next time.
///
/// ```json
/// {"entries":[{"name":"library/public","value":"<base64>"}, …],"last":42}
/// ```
public struct KeyEntriesResponse: WireMessage, Hashable {
    /// The entries, by name.
    public var entries: [KeyEntry]
    /// The store's position after them.
    public var last: Int64

    /// Creates the response.
    public init(entries: [KeyEntry], last: Int64) {
        self.entries = entries
        self.last = last
    }

    public func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("entries")
        writer.array(entries) { writer, entry in KeyChange(name: entry.name, value: entry.value).write(to: &writer) }
        writer.key("last"); writer.integer(last)
        writer.endObject()
    }

    public static func read(from reader: inout JSONReader) throws -> KeyEntriesResponse {
        var entries: [KeyEntry]?, last: Int64?
        try readObject(&reader, path: "") { key, reader in
            if key == "last" {
                last = try reading(key) { try reader.readInt64() }
                return true
            }
            guard key == "entries" else { return false }
            entries = try readArray(&reader, key) { reader, index in
                // An entry is written as a change that writes it.
                let change = try KeyChange.read(from: &reader, path: "entries[\(index)]")
                guard let value = change.value else { throw WireFormatError(field: "entries[\(index)].value", message: "is missing") }
                return KeyEntry(name: change.name, value: value)
            }
            return true
        }
        return KeyEntriesResponse(entries: try required(entries, "entries"), last: try required(last, "last"))
    }
}

/// One change of a key store entry: write `value` (only when the entry does not exist yet, with
/// `createOnly`), or delete the entry (no value).
public struct KeyChange: Sendable, Hashable {
    /// The entry's name.
    public var name: String
    /// The new bytes, or nil to delete the entry.
    public var value: [UInt8]?
    /// Write only if no entry of this name exists.
    public var createOnly: Bool

    /// Creates a change.
    public init(name: String, value: [UInt8]?, createOnly: Bool = false) {
        self.name = name
        self.value = value
        self.createOnly = createOnly
    }

    func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("name"); writer.string(name)
        if let value { writer.key("value"); writer.base64(value) }
        if createOnly { writer.key("createOnly"); writer.bool(true) }
        writer.endObject()
    }

    static func read(from reader: inout JSONReader, path: String) throws -> KeyChange {
        var name: String?, value: [UInt8]?, createOnly = false
        try readObject(&reader, path: path) { key, reader in
            switch key {
            case "name":
                let text = try reading("\(path).name") { try reader.readString() }
                if let problem = KeyEntryName.problem(with: text) { throw WireFormatError(field: "\(path).name", message: problem) }
                name = text
            case "value":
                value = try reading("\(path).value") { try reader.withStringBytes { Base64.decode($0) } }
                guard let bytes = value else { throw WireFormatError(field: "\(path).value", message: "not valid base64") }
                if bytes.count > KeyEntryName.maximumValueBytes {
                    throw WireFormatError(field: "\(path).value", message: "must be at most \(KeyEntryName.maximumValueBytes) bytes")
                }
            case "createOnly": createOnly = try reading("\(path).createOnly") { try reader.readBool() }
            default: return false
            }
            return true
        }
        return KeyChange(name: try required(name, "\(path).name"), value: value, createOnly: createOnly)
    }
}

/// `POST /v1/libraries/{library}/keys`: changes of the key store, applied one by one.
///
/// ```json
/// {"changes":[{"name":"device/ben-tablet","value":"<base64>"},{"name":"asset/1234"}]}
/// ```
public struct KeyChangesRequest: WireMessage, Hashable {
    /// The changes, in order.
    public var changes: [KeyChange]

    /// The most changes in one request.
    public static let maximumChanges = 1000

    /// Creates the request.
    public init(changes: [KeyChange]) { self.changes = changes }

    public func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("changes")
        writer.array(changes) { writer, change in change.write(to: &writer) }
        writer.endObject()
    }

    public static func read(from reader: inout JSONReader) throws -> KeyChangesRequest {
        var changes: [KeyChange]?
        try readObject(&reader, path: "") { key, reader in
            guard key == "changes" else { return false }
            changes = try readArray(&reader, key) { reader, index in
                guard index < maximumChanges else {
                    throw WireFormatError(field: "changes", message: "must hold at most \(maximumChanges) changes")
                }
                return try KeyChange.read(from: &reader, path: "changes[\(index)]")
            }
            return true
        }
        return KeyChangesRequest(changes: try required(changes, "changes"))
    }
}

/// What became of one ``KeyChange``.
public enum KeyChangeStatus: String, Sendable, Hashable {
    /// Written.
    case stored
    /// Deleted (or there was nothing to delete).
    case deleted
    /// Not written: `createOnly`, and an entry with other bytes exists.
    case conflict
    /// Not allowed for this token (the reason is in the result).
    case forbidden

    /// Reads a status from JSON text at `path`; any other text is an error naming the four.
    static func read(from reader: inout JSONReader, path: String) throws -> KeyChangeStatus {
        let text = try reading(path) { try reader.readString() }
        guard let value = KeyChangeStatus(rawValue: text) else {
            throw WireFormatError(field: path, message: "must be stored, deleted, conflict or forbidden")
        }
        return value
    }
}

/// The answer to ``KeyChangesRequest``: `{"results":[{"name":…,"status":"stored"}, …]}` in
/// request order, with a `reason` for a forbidden change, and (from servers that say) the key
/// store's positions before and after the request's writes, `"from":41,"through":43`: the
/// writes took the positions between, so a device whose read position was `from` may move it
/// to `through` without reading its own writes back.
public struct KeyChangesResponse: WireMessage, Hashable {
    /// One result.
    public struct Result: Sendable, Hashable {
        /// The entry's name.
        public var name: String
        /// What became of the change.
        public var status: KeyChangeStatus
        /// Why it was forbidden.
        public var reason: String?

        /// Creates a result.
        public init(name: String, status: KeyChangeStatus, reason: String? = nil) {
            self.name = name
            self.status = status
            self.reason = reason
        }

        func write(to writer: inout JSONWriter) {
            writer.beginObject()
            writer.key("name"); writer.string(name)
            writer.key("status"); writer.string(status.rawValue)
            if let reason { writer.key("reason"); writer.string(reason) }
            writer.endObject()
        }

        static func read(from reader: inout JSONReader, path: String) throws -> Result {
            var name: String?, status: KeyChangeStatus?, reason: String?
            try readObject(&reader, path: path) { key, reader in
                switch key {
                case "name": name = try reading("\(path).name") { try reader.readString() }
                case "status": status = try KeyChangeStatus.read(from: &reader, path: "\(path).status")
                case "reason": reason = try reading("\(path).reason") { try reader.readString() }
                default: return false
                }
                return true
            }
            return Result(name: try required(name, "\(path).name"), status: try required(status, "\(path).status"), reason: reason)
        }
    }

    /// The results, in request order.
    public var results: [Result]
    /// The key store's position before the request's writes (nil from a server that does not say).
    public var from: Int64?
    /// The key store's position after them.
    public var through: Int64?

    /// Creates the response.
    public init(results: [Result], from: Int64? = nil, through: Int64? = nil) {
        self.results = results
        self.from = from
        self.through = through
    }

    public func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("results")
        writer.array(results) { writer, result in result.write(to: &writer) }
        // Each as it was read: a response that names only one reads back the same.
        if let from { writer.key("from"); writer.integer(from) }
        if let through { writer.key("through"); writer.integer(through) }
        writer.endObject()
    }

    public static func read(from reader: inout JSONReader) throws -> KeyChangesResponse {
        var results: [Result]?, from: Int64?, through: Int64?
        try readObject(&reader, path: "") { key, reader in
            if key == "from" || key == "through" {
                let value = try reading(key) { try reader.readInt64() }
                if key == "from" { from = value } else { through = value }
                return true
            }
            guard key == "results" else { return false }
            results = try readArray(&reader, key) { reader, index in try Result.read(from: &reader, path: "results[\(index)]") }
            return true
        }
        return KeyChangesResponse(results: try required(results, "results"), from: from, through: through)
    }
}

/// What became of the key store changes a push carried in the keyed form
/// (`EventBatch.keyedContentType`): ``PushResponse/keys``. Most changes do what they ask (a
/// write is stored, a deletion deleted), so only the others are listed, by their index in the
/// push's changes:
///
/// ```json
/// "keys":{"from":41,"through":2040,"refused":[{"index":3,"name":"ring/ben","status":"forbidden","reason":"…"}]}
/// ```
public struct PushedKeyChanges: Sendable, Hashable {
    /// A change that was not stored or deleted as asked.
    public struct Refusal: Sendable, Hashable {
        /// Its index in the push's changes.
        public var index: Int
        /// What became of it (`conflict` or `forbidden`, with the reason).
        public var result: KeyChangesResponse.Result

        /// Creates a refusal.
        public init(index: Int, result: KeyChangesResponse.Result) {
            self.index = index
            self.result = result
        }
    }

    /// The changes not made as asked, in the push's order.
    public var refused: [Refusal]
    /// The key store's position before the push's writes.
    public var from: Int64
    /// The key store's position after them (the writes took the positions between).
    public var through: Int64

    /// Creates the answer.
    public init(refused: [Refusal], from: Int64, through: Int64) {
        self.refused = refused
        self.from = from
        self.through = through
    }

    /// The answer of `response`, the result of every change in request order: the results that
    /// are neither `stored` nor `deleted`, with their positions.
    public init(answering response: KeyChangesResponse) {
        refused = response.results.enumerated().compactMap { index, result in
            result.status == .stored || result.status == .deleted ? nil : Refusal(index: index, result: result)
        }
        from = response.from ?? 0
        through = response.through ?? 0
    }

    /// The result of each of `changes` (the changes the push carried), as the key store would
    /// answer them: a change not refused did what it asked.
    ///
    /// - Throws: ``WireFormatError`` when a refusal names an index or a name that is not that of
    ///   one of `changes`, or an index twice.
    public func response(to changes: [KeyChange]) throws -> KeyChangesResponse {
        var results = changes.map { KeyChangesResponse.Result(name: $0.name, status: $0.value == nil ? .deleted : .stored) }
        var seen = Set<Int>()
        for refusal in refused {
            guard results.indices.contains(refusal.index), changes[refusal.index].name == refusal.result.name,
                seen.insert(refusal.index).inserted
            else {
                throw WireFormatError(
                    field: "keys.refused", message: "index \(refusal.index) ('\(refusal.result.name)') is not that of a change pushed")
            }
            results[refusal.index] = refusal.result
        }
        return KeyChangesResponse(results: results, from: from, through: through)
    }

    func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("from"); writer.integer(from)
        writer.key("through"); writer.integer(through)
        writer.key("refused")
        writer.array(refused) { writer, refusal in
            writer.beginObject()
            writer.key("index"); writer.integer(Int64(refusal.index))
            writer.key("name"); writer.string(refusal.result.name)
            writer.key("status"); writer.string(refusal.result.status.rawValue)
            if let reason = refusal.result.reason { writer.key("reason"); writer.string(reason) }
            writer.endObject()
        }
        writer.endObject()
    }

    static func read(from reader: inout JSONReader, path: String) throws -> PushedKeyChanges {
        var from: Int64?, through: Int64?, refused: [Refusal]?
        try readObject(&reader, path: path) { key, reader in
            switch key {
            case "from": from = try reading("\(path).from") { try reader.readInt64() }
            case "through": through = try reading("\(path).through") { try reader.readInt64() }
            case "refused":
                refused = try readArray(&reader, "\(path).refused") { reader, index in
                    try readRefusal(&reader, path: "\(path).refused[\(index)]")
                }
            default: return false
            }
            return true
        }
        return PushedKeyChanges(
            refused: try required(refused, "\(path).refused"), from: try required(from, "\(path).from"),
            through: try required(through, "\(path).through"))
    }

    private static func readRefusal(_ reader: inout JSONReader, path: String) throws -> Refusal {
        var index: Int64?, name: String?, status: KeyChangeStatus?, reason: String?
        try readObject(&reader, path: path) { key, reader in
            switch key {
            case "index":
                index = try reading("\(path).index") { try reader.readInt64() }
                guard let value = index, value >= 0, value < Int64(KeyStoreBody.maximumChanges) else {
                    throw WireFormatError(field: "\(path).index", message: "must be from 0 to \(KeyStoreBody.maximumChanges - 1)")
                }
            case "name": name = try reading("\(path).name") { try reader.readString() }
            case "status": status = try KeyChangeStatus.read(from: &reader, path: "\(path).status")
            case "reason": reason = try reading("\(path).reason") { try reader.readString() }
            default: return false
            }
            return true
        }
        return Refusal(
            index: Int(try required(index, "\(path).index")),
            result: KeyChangesResponse.Result(
                name: try required(name, "\(path).name"), status: try required(status, "\(path).status"), reason: reason))
    }
}
