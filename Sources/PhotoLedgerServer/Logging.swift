import Foundation

/// How important a log record is.
public enum LogLevel: String, Sendable, Comparable {
    /// Detail for debugging.
    case debug
    /// Normal operation: one record per request, start and stop.
    case info
    /// Something unusual that the server handled.
    case warning
    /// A failure that an operator should look at.
    case error

    private var rank: Int {
        switch self {
        case .debug: 0
        case .info: 1
        case .warning: 2
        case .error: 3
        }
    }

    public static func < (lhs: LogLevel, rhs: LogLevel) -> Bool { lhs.rank < rhs.rank }
}

/// One structured log record: a message and ordered key–value fields. Secrets (tokens) are
/// never put in a record.
public struct LogRecord: Sendable, Hashable {
    /// The level.
    public var level: LogLevel
    /// A short, constant description such as `request` or `listening`.
    public var message: String
    /// The fields, in order.
    public var fields: [Field]

    /// A key–value field.
    public struct Field: Sendable, Hashable {
        /// The key.
        public var key: String
        /// The value.
        public var value: String

        /// Creates a field.
        public init(_ key: String, _ value: String) {
            self.key = key
            self.value = value
        }
    }

    /// Creates a record.
    public init(level: LogLevel, message: String, fields: [Field] = []) {
        self.level = level
        self.message = message
        self.fields = fields
    }

    /// The value of the first field named `key`.
    public subscript(key: String) -> String? { fields.first { $0.key == key }?.value }

    /// The record as one logfmt line: `level=info msg=request id=r1 method=GET …`.
    public var line: String {
        var parts = ["level=\(level.rawValue)", "msg=\(Self.quoted(message))"]
        for field in fields { parts.append("\(field.key)=\(Self.quoted(field.value))") }
        return parts.joined(separator: " ")
    }

    private static func quoted(_ value: String) -> String {
        let plain =
            !value.isEmpty && value.utf8.allSatisfy { $0 > 0x20 && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "=") && $0 < 0x7F }
        if plain { return value }
        var escaped = "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": escaped += "\\\""
            case "\\": escaped += "\\\\"
            case "\n": escaped += "\\n"
            default: escaped.unicodeScalars.append(scalar.value < 0x20 ? "?" : scalar)
            }
        }
        return escaped + "\""
    }
}

/// Where the server sends its log records. The server never makes its own logger: pass one in
/// its configuration (tests pass one that keeps the records).
public protocol ServerLogger: Sendable {
    /// Handles one record; called from the server's threads.
    func log(_ record: LogRecord)
}

/// Writes each record as one logfmt line on standard error, with a UTC timestamp.
public struct StandardErrorLogger: ServerLogger {
    /// The lowest level written.
    public var minimumLevel: LogLevel

    /// A logger that writes records at `minimumLevel` or above.
    public init(minimumLevel: LogLevel = .info) { self.minimumLevel = minimumLevel }

    public func log(_ record: LogRecord) {
        guard record.level >= minimumLevel else { return }
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        var parts = tm()
        var seconds = spec.tv_sec
        gmtime_r(&seconds, &parts)
        let stamp = String(
            format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1, Int(parts.tm_mday),
            Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec), Int(spec.tv_nsec / 1_000_000))
        let line = Array("ts=\(stamp) \(record.line)\n".utf8)
        line.withUnsafeBytes { _ = write(STDERR_FILENO, $0.baseAddress, $0.count) }
    }
}

/// A logger that drops every record.
public struct DiscardingLogger: ServerLogger {
    /// Creates the logger.
    public init() {}
    public func log(_ record: LogRecord) {}
}
