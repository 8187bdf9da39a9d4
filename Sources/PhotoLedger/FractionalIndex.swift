import Foundation
import LedgerCore

/// Fractional-index position keys for album order.
///
/// A key is a string of base-62 digits (`0-9A-Za-z`, ascending in ASCII) read as a fraction:
/// keys compare as plain strings, and a key can always be made between any two keys. Keys never
/// end in the lowest digit, so there is always room below them. Events carry keys, never list
/// indexes, so replaying them gives the same order on every device.
enum FractionalIndex {
    static let digits = Array("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz".utf8)
    static let base = 62

    static func value(_ digit: UInt8) -> Int {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return Int(digit - UInt8(ascii: "0"))
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): return Int(digit - UInt8(ascii: "A")) + 10
        default: return Int(digit - UInt8(ascii: "a")) + 36
        }
    }

    /// Whether `key` is a valid position key.
    static func isValid(_ key: String) -> Bool {
        !key.isEmpty && key.utf8.last != UInt8(ascii: "0") && key.utf8.allSatisfy(isDigit)
    }

    /// Whether `byte` is one of the base-62 digits.
    static func isDigit(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"): true
        default: false
        }
    }

    /// A key strictly between `lower` and `upper` (nil means the start or the end of the album).
    ///
    /// The bounds are the keys of neighbouring members, which other devices wrote: they may leave
    /// no room (two members at the same key, or a member whose events gave it none). An upper
    /// bound that is not above the lower one is then ignored, and the key lands just above
    /// `lower`.
    static func key(between lower: String?, and upper: String?) -> String {
        let low = lower.map { Array($0.utf8) } ?? []
        var high = upper.map { Array($0.utf8) }
        if let bound = high, !low.lexicographicallyPrecedes(bound) { high = nil }
        var result: [UInt8] = []
        var index = 0
        while true {
            let lowDigit = index < low.count ? value(low[index]) : 0
            let highDigit = high.map { index < $0.count ? value($0[index]) : 0 } ?? base
            if lowDigit == highDigit {
                result.append(digits[lowDigit])
            } else {
                let middle = (lowDigit + highDigit) / 2
                if middle > lowDigit {
                    result.append(digits[middle])
                    return String(decoding: result, as: UTF8.self)
                }
                // Adjacent digits: keep the lower one; the rest of the key is free above `lower`.
                result.append(digits[lowDigit])
                high = nil
            }
            index += 1
        }
    }

    /// `count` increasing keys strictly between `lower` and `upper`, taken from a sub-interval
    /// chosen with `random`, so that a batch inserted concurrently by another device at the same
    /// place lands as a contiguous block before or after this one instead of interleaving.
    static func keys(count: Int, between lower: String?, and upper: String?, using random: inout some RandomNumberGenerator) -> [String] {
        guard count > 0 else { return [] }
        let middle = key(between: lower, and: upper)
        // middle‖r … middle‖(r+1) lies strictly between lower and upper: middle > lower, and
        // middle is never a prefix of upper (its last digit is below upper's digit there).
        let block = Int.random(in: 0..<(base * base * base * base - 1), using: &random)
        let prefix = middle + encode(block, width: 4)
        let width = max(1, Int((log(Double(count + 1)) / log(Double(base))).rounded(.up)))
        let span = pow(Double(base), Double(width))
        let step = max(1, Int(span / Double(count + 1)))
        return (1...count).map { position in
            let suffix = encode(position * step, width: width)
            // A key may not end in the lowest digit; adding a middle digit keeps the order.
            return prefix + (suffix.utf8.last == UInt8(ascii: "0") ? suffix + "V" : suffix)
        }
    }

    static func encode(_ number: Int, width: Int) -> String {
        var number = number
        var result = [UInt8](repeating: digits[0], count: width)
        for index in stride(from: width - 1, through: 0, by: -1) {
            result[index] = digits[number % base]
            number /= base
        }
        return String(decoding: result, as: UTF8.self)
    }
}
