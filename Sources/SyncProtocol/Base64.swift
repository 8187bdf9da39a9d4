/// Standard base64 (RFC 4648 §4, with `=` padding), encoding straight into a byte buffer and
/// decoding strictly: any character outside the alphabet, wrong padding or a wrong length is refused.
public enum Base64 {
    private static let alphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    private static let values: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (index, byte) in alphabet.enumerated() { table[Int(byte)] = UInt8(index) }
        return table
    }()

    /// Appends the base64 text of `bytes` to `output`.
    public static func encode(_ bytes: [UInt8], into output: inout [UInt8]) {
        output.reserveCapacity(output.count + (bytes.count + 2) / 3 * 4)
        bytes.withUnsafeBufferPointer { input in
            alphabet.withUnsafeBufferPointer { table in
                var index = 0
                while index + 3 <= input.count {
                    let chunk = UInt32(input[index]) << 16 | UInt32(input[index + 1]) << 8 | UInt32(input[index + 2])
                    output.append(table[Int(chunk >> 18)])
                    output.append(table[Int(chunk >> 12 & 0x3F)])
                    output.append(table[Int(chunk >> 6 & 0x3F)])
                    output.append(table[Int(chunk & 0x3F)])
                    index += 3
                }
                let rest = input.count - index
                if rest == 1 {
                    let chunk = UInt32(input[index]) << 16
                    output.append(table[Int(chunk >> 18)])
                    output.append(table[Int(chunk >> 12 & 0x3F)])
                    output.append(contentsOf: [UInt8(ascii: "="), UInt8(ascii: "=")])
                } else if rest == 2 {
                    let chunk = UInt32(input[index]) << 16 | UInt32(input[index + 1]) << 8
                    output.append(table[Int(chunk >> 18)])
                    output.append(table[Int(chunk >> 12 & 0x3F)])
                    output.append(table[Int(chunk >> 6 & 0x3F)])
                    output.append(UInt8(ascii: "="))
                }
            }
        }
    }

    /// The base64 text of `bytes`.
    public static func encode(_ bytes: [UInt8]) -> String {
        var output: [UInt8] = []
        encode(bytes, into: &output)
        return String(decoding: output, as: UTF8.self)
    }

    /// The bytes encoded by `text`, or nil when it is not valid padded base64.
    public static func decode(_ text: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        guard text.count % 4 == 0 else { return nil }
        if text.isEmpty { return [] }
        var padding = 0
        if text[text.count - 1] == UInt8(ascii: "=") { padding += 1 }
        if text[text.count - 2] == UInt8(ascii: "=") { padding += 1 }
        if padding == 1, text[text.count - 2] == UInt8(ascii: "=") { return nil }
        var output = [UInt8]()
        output.reserveCapacity(text.count / 4 * 3)
        return values.withUnsafeBufferPointer { table -> [UInt8]? in
            var index = 0
            let fullEnd = text.count - (padding > 0 ? 4 : 0)
            while index < fullEnd {
                let a = table[Int(text[index])], b = table[Int(text[index + 1])]
                let c = table[Int(text[index + 2])], d = table[Int(text[index + 3])]
                guard a | b | c | d != 0xFF, a < 64, b < 64, c < 64, d < 64 else { return nil }
                let chunk = UInt32(a) << 18 | UInt32(b) << 12 | UInt32(c) << 6 | UInt32(d)
                output.append(UInt8(truncatingIfNeeded: chunk >> 16))
                output.append(UInt8(truncatingIfNeeded: chunk >> 8))
                output.append(UInt8(truncatingIfNeeded: chunk))
                index += 4
            }
            if padding > 0 {
                let a = table[Int(text[index])], b = table[Int(text[index + 1])]
                guard a < 64, b < 64 else { return nil }
                if padding == 2 {
                    guard b & 0x0F == 0 else { return nil }
                    output.append(a << 2 | b >> 4)
                } else {
                    let c = table[Int(text[index + 2])]
                    guard c < 64, c & 0x03 == 0 else { return nil }
                    output.append(a << 2 | b >> 4)
                    output.append((b & 0x0F) << 4 | c >> 2)
                }
            }
            return output
        }
    }

    /// The bytes encoded by `text`, or nil when it is not valid padded base64.
    public static func decode(_ text: String) -> [UInt8]? {
        var text = text
        return text.withUTF8 { decode($0) }
    }
}
