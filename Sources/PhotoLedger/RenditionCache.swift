import Foundation
import LedgerCore
import PhotoMedia
import Synchronization

/// A rendition's place in the cache: the SHA-256 of the resource it was made from and its scale.
struct RenditionKey: Hashable, Sendable, CustomStringConvertible {
    /// Lowercase hex SHA-256 of the source resource.
    var source: String
    /// The scale (a full-size rendition is always `fit`: both modes give the same picture).
    var scale: RenditionScale

    init(source: String, scale: RenditionScale) {
        self.source = source
        self.scale = scale.size == nil ? RenditionScale(size: nil, mode: .fit) : scale
    }

    var description: String { "\(scale) rendition of \(source)" }
}

/// A rendition held in the cache: its file and what it holds.
struct CachedRendition: Sendable {
    var key: RenditionKey
    var url: URL
    var rendition: Rendition
}

/// The renditions of a library's photos and videos, in a folder beside its resource store:
/// derived resources, made again whenever they are missing. The cache itself does not sync: the
/// renditions of the common sizes are recorded and synced through the resource store
/// (SyncedRenditions.swift), and a recorded one lands here when a request uses it.
///
/// Layout: `<library>.renditions/<first two hex digits>/<source SHA-256>-<scale>.<jpg|png>`, the
/// scale written `256-fit`, `1024-fill` or `full`, and `tmp/` for files being written. A name
/// is content-addressed: an edit or a revert changes the hash of an asset's current rendition,
/// so a cached file is never stale.
///
/// A file is written to `tmp/` and renamed into place, without `fsync`: a crash can leave a
/// file cut short under its name, which a read recognises (a JPEG without its end marker, a PNG
/// without its IEND chunk), removes and makes again. A read sets the file's access time, which
/// orders the eviction when the cache grows past its bound (least recently used first, down to
/// nine tenths of the bound); ``collectGarbage(keeping:gracePeriod:now:)`` removes the
/// renditions of sources no asset shows any more.
final class RenditionCache: Sendable {
    /// The cache's directory.
    let directory: URL
    /// The most bytes the cache holds before it evicts.
    let limit: Int64
    private let root: String
    private let temporaryRoot: String
    /// Bytes held, counted once from the disk and kept up to date by this process (other
    /// processes writing to the same cache make it drift until the next eviction counts again).
    private let usage = Mutex<Int64?>(nil)
    private let evicting = Atomic<Bool>(false)

    /// A cache in `directory` (created on the first write) holding at most `limit` bytes.
    init(directory: URL, limit: Int64) {
        self.directory = directory.standardizedFileURL
        self.limit = max(0, limit)
        root = self.directory.path
        temporaryRoot = root + "/tmp"
    }

    /// The cache beside the library file at `url`: `<name>.renditions`.
    static func directory(for url: URL) -> URL {
        let base = url.pathExtension.isEmpty ? url : url.deletingPathExtension()
        return base.appendingPathExtension("renditions")
    }

    private func path(for key: RenditionKey, format: MediaFormat) -> String {
        "\(root)/\(key.source.prefix(2))/\(key.source)-\(key.scale).\(format == .png ? "png" : "jpg")"
    }

    // MARK: Reading

    /// The cached rendition of `key`, its access time refreshed; nil when there is none (a
    /// damaged file is removed and counts as none).
    func lookup(_ key: RenditionKey) -> CachedRendition? {
        for format in [MediaFormat.jpeg, .png] {
            let path = path(for: key, format: format)
            guard let status = Self.status(path) else { continue }
            guard let bytes = FileManager.default.contents(atPath: path),
                let rendition = try? Rendition(encoded: Array(bytes), scale: key.scale)
            else {
                if unlink(path) == 0 { usage.withLock { $0 = $0.map { $0 - Int64(status.st_size) } } }
                continue
            }
            touch(path, status)
            return CachedRendition(key: key, url: URL(fileURLWithPath: path), rendition: rendition)
        }
        return nil
    }

    /// The scales among `scales` the cache holds for `source`, without reading the files.
    func scales(of source: String, among scales: [RenditionScale]) -> [RenditionScale] {
        scales.filter { scale in
            let key = RenditionKey(source: source, scale: scale)
            return Self.status(path(for: key, format: .jpeg)) != nil || Self.status(path(for: key, format: .png)) != nil
        }
    }

    /// Marks a file as used now, at most once a minute (an access time one minute off does not
    /// change which files are the least recently used).
    private func touch(_ path: String, _ status: stat) {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        guard now.tv_sec - status.st_atim.tv_sec > 60 else { return }
        var times = [now, status.st_mtim]  // the modification time stays: it is when the rendition was made
        _ = utimensat(AT_FDCWD, path, &times, 0)
    }

    // MARK: Writing

    /// Stores `rendition` as the rendition of `source` at its scale (replacing one already there)
    /// and evicts the least recently used files when the cache is past its bound.
    func store(_ rendition: Rendition, source: String) throws(MediaError) -> CachedRendition {
        let key = RenditionKey(source: source, scale: rendition.scale)
        let final = path(for: key, format: rendition.format)
        let temporary = "\(temporaryRoot)/\(UUID.random().lowercaseString)"
        let replaced = Self.status(final).map { Int64($0.st_size) } ?? 0
        do {
            for folder in [(final as NSString).deletingLastPathComponent, temporaryRoot] {
                try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            }
            try Data(rendition.bytes).write(to: URL(fileURLWithPath: temporary))
        } catch {
            unlink(temporary)
            let reason = "could not write a rendition to \(temporary) (\(error.localizedDescription))"
            throw MediaError(.fileSystem, resource: key.description, reason: reason)
        }
        guard rename(temporary, final) == 0 else {
            let reason = "could not rename a rendition into \(final) (\(String(cString: strerror(errno))))"
            unlink(temporary)
            throw MediaError(.fileSystem, resource: key.description, reason: reason)
        }
        let total = usage.withLock { usage -> Int64? in
            usage = usage.map { $0 + Int64(rendition.bytes.count) - replaced }
            return usage
        }
        if total ?? .max > limit { evict() }
        return CachedRendition(key: key, url: URL(fileURLWithPath: final), rendition: rendition)
    }

    // MARK: Bounds and garbage

    /// One file of the cache.
    private struct Entry {
        let path: String
        let source: String
        let size: Int64
        let accessed: Double
        let modified: Double
    }

    /// Every rendition file, and every temporary file.
    private func entries() -> (renditions: [Entry], temporary: [Entry]) {
        func list(_ directory: String) -> [String] { (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] }
        func entry(_ path: String, source: String) -> Entry? {
            guard let status = Self.status(path), (status.st_mode & S_IFMT) == S_IFREG else { return nil }
            return Entry(
                path: path, source: source, size: Int64(status.st_size),
                accessed: Double(status.st_atim.tv_sec) + Double(status.st_atim.tv_nsec) / 1e9,
                modified: Double(status.st_mtim.tv_sec) + Double(status.st_mtim.tv_nsec) / 1e9)
        }
        var renditions: [Entry] = []
        for fanOut in list(root) where fanOut.utf8.count == 2 {
            for name in list("\(root)/\(fanOut)") where name.hasPrefix(fanOut) {
                if let found = entry("\(root)/\(fanOut)/\(name)", source: String(name.prefix(64))) { renditions.append(found) }
            }
        }
        let temporary = list(temporaryRoot).compactMap { entry("\(temporaryRoot)/\($0)", source: "") }
        return (renditions, temporary)
    }

    /// Counts the cache from the disk and, when it is past its bound, removes the least recently
    /// used files down to nine tenths of it. One thread evicts at a time.
    func evict() {
        guard evicting.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged else { return }
        defer { evicting.store(false, ordering: .releasing) }
        let found = entries().renditions.sorted { $0.accessed < $1.accessed }
        var total = found.reduce(0) { $0 + $1.size }
        if total > limit {
            let target = limit / 10 * 9
            for entry in found where total > target && unlink(entry.path) == 0 { total -= entry.size }
        }
        usage.withLock { $0 = total }
    }

    /// Removes the renditions whose source is not in `sources`, and abandoned temporary files,
    /// when last modified more than `gracePeriod` seconds before `now`; returns how many
    /// renditions it removed.
    @discardableResult
    func collectGarbage(keeping sources: Set<String>, gracePeriod: TimeInterval, now: Date) -> Int {
        let cutoff = now.timeIntervalSince1970 - gracePeriod
        let (renditions, temporary) = entries()
        var removed = 0
        var freed: Int64 = 0
        for entry in temporary where entry.modified <= cutoff { unlink(entry.path) }
        for entry in renditions where !sources.contains(entry.source) && entry.modified <= cutoff && unlink(entry.path) == 0 {
            removed += 1
            freed += entry.size
        }
        usage.withLock { $0 = $0.map { $0 - freed } }
        return removed
    }

    private static func status(_ path: String) -> stat? {
        var status = stat()
        return stat(path, &status) == 0 ? status : nil
    }
}
