import Foundation
import LedgerCore
import Synchronization

/// The library's random source for position keys: seeded in tests, from the system otherwise.
final class RandomSource: Sendable {
    private let generator: Mutex<SeededRandomNumberGenerator>

    init(seed: UInt64?) { generator = Mutex(SeededRandomNumberGenerator(seed: seed ?? UInt64.random(in: .min ... .max))) }

    func use<T: Sendable>(_ body: (inout SeededRandomNumberGenerator) -> T) -> T { generator.withLock { body(&$0) } }
}
