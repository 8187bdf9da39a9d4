import Foundation
import FuzzSupport
import LedgerCore
import SyncProtocol

/// gzip and zstd inflation with a limit, as the server inflates gzip request bodies (chunk by
/// chunk, `GzipInflater`) and clients inflate response bodies (`Gzip.decompress`,
/// `Zstd.decompress`). No output may exceed the limit, and inflating gzip in chunks must give
/// what inflating it at once gives.
@main
enum CompressionTarget: FuzzTarget {
    /// The largest output accepted: small, so that bombs are found quickly.
    static let limit = 1 << 16

    static func seeds() -> [Seed] {
        let page = EventPage.encode(
            PullResponse(
                events: SampleEvents.all.map { WireEvent($0, serverSequence: 1, chainHash: $0.contentHash) }, nextCursor: 1, hasMore: false)
        )
        let json = PushRequest(device: "anna-phone", events: SampleEvents.all).encoded()
        let zeros = [UInt8](repeating: 0, count: limit)
        var seeds: [Seed] = []
        for (name, body) in [("empty", []), ("page", page), ("json", json), ("limit-zeros", zeros)] {
            seeds.append(Seed(name: "\(name).gz", bytes: try! Gzip.compress(body, level: 1)))
            seeds.append(Seed(name: "\(name)-9.gz", bytes: try! Gzip.compress(body, level: 9)))
            seeds.append(Seed(name: "\(name).zst", bytes: try! Zstd.compress(body, level: 1)))
        }
        seeds.append(Seed(name: "two-frames.zst", bytes: try! Zstd.compress(json, level: 3) + Zstd.compress(page, level: 19)))
        seeds.append(Seed(name: "over-limit.gz", bytes: try! Gzip.compress(zeros + [1], level: 9), refused: true))
        seeds.append(Seed(name: "over-limit.zst", bytes: try! Zstd.compress(zeros + [1], level: 19), refused: true))
        return seeds
    }

    static func accepts(_ input: [UInt8]) -> Bool {
        (try? Gzip.decompress(input, limit: limit)) != nil || (try? Zstd.decompress(input, limit: limit)) != nil
    }

    static func run(_ input: [UInt8]) {
        let whole = try? Gzip.decompress(input, limit: limit)
        require(whole.map { $0.count <= limit } ?? true, "gzip output over the limit")
        // From the whole body at once down to eighths of it, by the input's length.
        let chunked = inflateInChunks(input, size: max(1, input.count / (1 + input.count % 8)))
        require(whole == chunked, "gzip inflated in chunks differs from gzip inflated at once")
        let zstd = try? Zstd.decompress(input, limit: limit)
        require(zstd.map { $0.count <= limit } ?? true, "zstd output over the limit")
    }

    /// The body inflated as the server inflates a request body, `size` bytes at a time.
    private static func inflateInChunks(_ input: [UInt8], size: Int) -> [UInt8]? {
        guard let inflater = try? GzipInflater(limit: limit) else { return nil }
        var start = 0
        repeat {
            let end = min(input.count, start + size)
            let appended: Bool = input[start..<end].withUnsafeBytes { chunk in (try? inflater.append(chunk)) != nil }
            guard appended else { return nil }
            start = end
        } while start < input.count
        return try? inflater.finish()
    }
}
