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
        let start = output.count
        let length = (bytes.count + 2) / 3 * 4
        output.append(contentsOf: repeatElement(0, count: length))
        output.withUnsafeMutableBufferPointer { buffer in
            let out = buffer.baseAddress! + start
            bytes.withUnsafeBufferPointer { input in
                alphabet.withUnsafeBufferPointer { table in
                    var index = 0
                    var position = 0
                    while index + 3 <= input.count {
                        let chunk = UInt32(input[index]) << 16 | UInt32(input[index + 1]) << 8 | UInt32(input[index + 2])
                        out[position] = table[Int(chunk >> 18)]
                        out[position + 1] = table[Int(chunk >> 12 & 0x3F)]
                        out[position + 2] = table[Int(chunk >> 6 & 0x3F)]
                        out[position + 3] = table[Int(chunk & 0x3F)]
                        index += 3
                        position += 4
                    }
                    let rest = input.count - index
                    guard rest > 0 else { return }
                    let chunk = UInt32(input[index]) << 16 | (rest == 2 ? UInt32(input[index + 1]) << 8 : 0)
                    out[position] = table[Int(chunk >> 18)]
                    out[position + 1] = table[Int(chunk >> 12 & 0x3F)]
                    out[position + 2] = rest == 2 ? table[Int(chunk >> 6 & 0x3F)] : UInt8(ascii: "=")
                    out[position + 3] = UInt8(ascii: "=")
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
        let length = text.count / 4 * 3 - padding
        var valid = true
        let output = [UInt8](unsafeUninitializedCapacity: length) { buffer, initialized in
            valid = values.withUnsafeBufferPointer { table -> Bool in
                var index = 0
                var position = 0
                let fullEnd = text.count - (padding > 0 ? 4 : 0)
                while index < fullEnd {
                    let a = table[Int(text[index])], b = table[Int(text[index + 1])]
                    let c = table[Int(text[index + 2])], d = table[Int(text[index + 3])]
                    guard (a | b | c | d) < 64 else { return false }
                    let chunk = UInt32(a) << 18 | UInt32(b) << 12 | UInt32(c) << 6 | UInt32(d)
                    buffer[position] = UInt8(truncatingIfNeeded: chunk >> 16)
                    buffer[position + 1] = UInt8(truncatingIfNeeded: chunk >> 8)
                    buffer[position + 2] = UInt8(truncatingIfNeeded: chunk)
                    index += 4
                    position += 3
                }
                if padding > 0 {
                    let a = table[Int(text[index])], b = table[Int(text[index + 1])]
                    guard a < 64, b < 64 else { return false }
                    buffer[position] = a << 2 | b >> 4
                    if padding == 2 {
                        guard b & 0x0F == 0 else { return false }
                    } else {
                        let c = table[Int(text[index + 2])]
                        guard c < 64, c & 0x03 == 0 else { return false }
                        buffer[position + 1] = (b & 0x0F) << 4 | c >> 2
                    }
                }
                return true
            }
            initialized = valid ? length : 0
        }
        return valid ? output : nil
    }

    /// The bytes encoded by `text`, or nil when it is not valid padded base64.
    public static func decode(_ text: String) -> [UInt8]? {
        var text = text
        return text.withUTF8 { decode($0) }
    }
}
