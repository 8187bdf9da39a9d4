import Foundation

/// A JSON value written by hand (no Foundation encoder), whose object keys keep the order they
/// were given in, so that every listing is the same bytes whichever tool, binding or page prints
/// it.
package indirect enum JSON: Sendable {
    case string(String)
    case int(Int64)
    case double(Double)
    case bool(Bool)
    case null
    case array([JSON])
    case object([(String, JSON)])

    /// An optional string, null when nil.
    package static func string(_ value: String?) -> JSON { value.map { .string($0) } ?? .null }

    /// An integer.
    package static func int(_ value: Int) -> JSON { .int(Int64(value)) }

    /// Compact JSON text. With `escapingHTML`, the characters that could close a script element
    /// or start markup (`<`, `>`, `&`) and the line separators JavaScript once refused are written
    /// as `\u` escapes, so the text can also sit inside an HTML page.
    package func serialized(escapingHTML: Bool = false) -> String {
        var text = ""
        write(to: &text, escapingHTML: escapingHTML)
        return text
    }

    private func write(to text: inout String, escapingHTML: Bool) {
        switch self {
        case .string(let value): Self.quote(value, into: &text, escapingHTML: escapingHTML)
        case .int(let value): text += String(value)
        case .double(let value): text += value.isFinite ? String(value) : "null"
        case .bool(let value): text += value ? "true" : "false"
        case .null: text += "null"
        case .array(let values):
            text += "["
            for (index, value) in values.enumerated() {
                if index > 0 { text += "," }
                value.write(to: &text, escapingHTML: escapingHTML)
            }
            text += "]"
        case .object(let members):
            text += "{"
            for (index, (key, value)) in members.enumerated() {
                if index > 0 { text += "," }
                Self.quote(key, into: &text, escapingHTML: escapingHTML)
                text += ":"
                value.write(to: &text, escapingHTML: escapingHTML)
            }
            text += "}"
        }
    }

    /// The characters ``serialized(escapingHTML:)`` escapes for HTML.
    private static let htmlSensitive: Set<Unicode.Scalar> = ["<", ">", "&", "\u{2028}", "\u{2029}"]

    private static func quote(_ value: String, into text: inout String, escapingHTML: Bool) {
        text += "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": text += "\\\""
            case "\\": text += "\\\\"
            case "\n": text += "\\n"
            case "\r": text += "\\r"
            case "\t": text += "\\t"
            case _ where scalar.value < 0x20: text += String(format: "\\u%04x", scalar.value)
            case _ where escapingHTML && Self.htmlSensitive.contains(scalar): text += String(format: "\\u%04x", scalar.value)
            default: text.unicodeScalars.append(scalar)
            }
        }
        text += "\""
    }
}
