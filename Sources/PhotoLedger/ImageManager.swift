import Foundation
import LedgerCore
import PhotoMedia
import Synchronization

/// How an image fits the target size of a request (PhotoKit's `PHImageContentMode`, same raw
/// values). Neither mode crops: whoever shows the image does.
public enum ImageContentMode: Int, Sendable, Hashable, CaseIterable {
    /// Scaled to fit inside the target size, the whole picture visible.
    case aspectFit = 0
    /// Scaled to cover the target size; the parts outside it are for the view to crop.
    case aspectFill = 1
}

/// How many results a request delivers, and how fast (PhotoKit's
/// `PHImageRequestOptionsDeliveryMode`, same raw values).
public enum ImageDeliveryMode: Int, Sendable, Hashable, CaseIterable {
    /// A smaller cached rendition first, marked degraded, when there is one and the requested
    /// one is not cached; then the requested one. One result when it is cached.
    case opportunistic = 0
    /// One result: the requested rendition, made when it is not cached.
    case highQualityFormat = 1
    /// One result, as soon as possible: the requested rendition when it is cached, else the
    /// nearest cached one of the asset (degraded when smaller), else the smallest rendition,
    /// made now.
    case fastFormat = 2
}

/// Options of an image request (PhotoKit's `PHImageRequestOptions`).
public struct ImageRequestOptions: Sendable, Hashable {
    /// Which rendition of the asset: `.current` (the edit when there is one), `.unadjusted` or
    /// `.original`.
    public var version: ImageVersion
    /// How many results, how fast.
    public var deliveryMode: ImageDeliveryMode
    /// Whether bytes that are not on this device yet may be downloaded through the library's
    /// sync (PhotoKit's default: no, and the request fails with `.networkAccessRequired`).
    public var isNetworkAccessAllowed: Bool

    /// Options; by default the current version, opportunistic delivery, no download.
    public init(version: ImageVersion = .current, deliveryMode: ImageDeliveryMode = .opportunistic, isNetworkAccessAllowed: Bool = false) {
        self.version = version
        self.deliveryMode = deliveryMode
        self.isNetworkAccessAllowed = isNetworkAccessAllowed
    }
}

/// Identifies an image request, to cancel it (PhotoKit's `PHImageRequestID`).
public struct ImageRequestID: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }
    public var description: String { "image request \(rawValue)" }
}

/// The image a request delivers: an encoded rendition of the asset, and the cached file that
/// holds it (a web view can serve the file as it is).
public struct ImageResult: Sendable, Hashable {
    /// The encoded image: a JPEG, or a PNG when the picture has transparent pixels.
    public var data: Data
    /// The file in the library's rendition cache holding `data`. It stays until the cache
    /// evicts it (least recently used first) or its asset is gone and garbage is collected;
    /// request the image again rather than keeping the URL for long.
    public var fileURL: URL
    /// Width in pixels, upright.
    public var pixelWidth: Int
    /// Height in pixels, upright.
    public var pixelHeight: Int
    /// `public.jpeg` or `public.png`.
    public var uniformTypeIdentifier: String
    /// Whether this is a smaller stand-in delivered before the requested image (PhotoKit's
    /// `PHImageResultIsDegradedKey`).
    public var isDegraded: Bool
    /// The request that delivered it.
    public var requestID: ImageRequestID
}

/// How far the caching started by ``ImageManager/startCachingImages(for:targetSize:contentMode:options:)``
/// has got, counted in renditions (one asset at one size and mode).
public struct ImageCachingProgress: Sendable, Hashable {
    /// Renditions asked for and not stopped.
    public var total = 0
    /// Renditions in the cache (made, or found there).
    public var completed = 0
    /// Renditions that could not be made (the asset is gone, its bytes are missing…).
    public var failed = 0

    /// Whether every rendition asked for is done.
    public var isFinished: Bool { completed + failed >= total }
}

/// An asset whose renditions caching could not make (``ImageManager/cachingFailures``): for an
/// asset just imported, a file whose import check accepted it and whose decode failed, which
/// its importer should hear of.
public struct ImageCachingFailure: Sendable, Equatable {
    /// The asset's local identifier.
    public var localIdentifier: String
    /// The scales of its caching job that could not be made (`256-fit`, `1024-fit`…), sorted.
    public var scales: [String]
    /// Why: `.invalidResource` when the decoder refused the bytes, `.missingResource`,
    /// `.networkAccessRequired`, `.identifierNotFound`…
    public var error: PhotoLibraryError
}

/// Images of a library's assets, as PhotoKit's `PHImageManager` and `PHCachingImageManager`
/// give them: renditions scaled to a target size, turned upright, and cached.
///
/// ```swift
/// let image = try await library.imageManager.requestImage(
///     for: asset, targetSize: CGSize(width: 300, height: 300), contentMode: .aspectFill)
/// webView.serve(image.fileURL)     // or image.data, image.pixelWidth, image.pixelHeight
/// ```
///
/// **Renditions.** A request is answered with the rendition of the smallest box size (256,
/// 512, 1024 or 2048 pixels, else the full size) that holds its target size, so the image can
/// be larger than the target, never smaller (unless the photo is): PhotoKit's `.fast` resize
/// mode. Aspect fit scales the picture so that its longer side is the box's side, aspect fill
/// so that its shorter side is. Photos are decoded with libvips' thumbnailer (shrink-on-load),
/// their EXIF orientation applied; a video's image is its poster frame, its first decodable
/// frame. The result is a JPEG, or a PNG when the picture has transparent pixels.
///
/// **Cache.** Renditions are kept in a folder beside the library
/// (`<library>.renditions/<xx>/<source SHA-256>-<box>-<mode>.<jpg|png>`), named from the SHA-256
/// of the bytes they were made from: an edit or a revert changes the current version's bytes,
/// so a rendition is never stale. The folder holds at most
/// ``PhotoLibrary/Options/renditionCacheLimit`` bytes (least recently used renditions are
/// evicted), and ``PhotoLibrary/collectGarbage(gracePeriod:)`` removes the renditions of
/// sources no asset shows any more (purged assets, replaced edits).
///
/// **Synced renditions.** The renditions of the common sizes (256 pixels fit and fill, 1024
/// pixels fit) sync as derived resources: the device that made one records it when it syncs
/// (its bytes under their own SHA-256, with the source's hash, box and mode, in an
/// `asset.renditionRecorded` event; sealed with the asset's key in an encrypted library), and
/// the other devices download them before any original. When this device has no rendition of
/// its own and the original is not here, a recorded one answers the request (downloaded first
/// when it is not here and network access is allowed), so a new device shows the library
/// before it holds the originals. Any other size needs the original.
///
/// **Bytes not on this device.** With ``ImageRequestOptions/isNetworkAccessAllowed`` a request
/// fetches them through the library's sync (as ``PhotoLibrary/requestImageData(for:version:)``
/// does); without it, it fails with `.networkAccessRequired`; with no sync to fetch from, with
/// `.missingResource`.
///
/// Results are delivered on a serial queue of each request, never on the caller's thread before
/// the call returns. Requests run on as many threads as the machine has cores; caching
/// (``startCachingImages(for:targetSize:contentMode:options:)``) runs on threads of low
/// priority, so that it takes only the processor time nothing else wants.
public struct ImageManager: Sendable {
    let library: PhotoLibrary

    /// A target size that asks for the full-size image (PhotoKit's `PHImageManagerMaximumSize`).
    public static let maximumSize = CGSize(width: -1, height: -1)

    /// The box sizes of renditions, in pixels; larger requests get the full size.
    public static let boxSizes = [256, 512, 1024, 2048]

    /// The renditions an import's validation makes with ``AssetImportOptions/makesThumbnails``.
    static let importScales = [RenditionScale(size: 256, mode: .fit), RenditionScale(size: 256, mode: .fill)]

    /// The rendition scale that answers a request: the smallest box that holds the target size.
    static func scale(for targetSize: CGSize, contentMode: ImageContentMode) -> RenditionScale {
        let side = max(Double(targetSize.width), Double(targetSize.height))
        let mode: RenditionScale.Mode = contentMode == .aspectFill ? .fill : .fit
        guard side > 0, side.isFinite, let box = boxSizes.first(where: { Double($0) >= side.rounded(.up) }) else {
            return RenditionScale(size: nil, mode: .fit)
        }
        return RenditionScale(size: box, mode: mode)
    }

    // MARK: Requests

    /// Requests an image of `asset` for `targetSize` (in pixels); `resultHandler` is called once, or twice
    /// for an opportunistic request that finds a smaller rendition cached first (its result is
    /// marked ``ImageResult/isDegraded``). A failure is a ``PhotoLibraryError``:
    /// `.identifierNotFound`, `.requestNotSupportedForAsset` (no photo or video), `.missingResource`,
    /// `.networkAccessRequired`, `.invalidResource` (bytes the decoders refuse), `.userCancelled`
    /// after ``cancelImageRequest(_:)``.
    @discardableResult
    public func requestImage(
        for asset: any ObjectReference, targetSize: CGSize, contentMode: ImageContentMode,
        options: ImageRequestOptions = ImageRequestOptions(),
        resultHandler: @escaping @Sendable (Result<ImageResult, PhotoLibraryError>) -> Void
    ) -> ImageRequestID {
        let renditions = library.renditions
        let id = renditions.open(resultHandler)
        let identifier = asset.localIdentifier
        renditions.requestPool.submit { [self] in
            perform(id, asset: identifier, scale: Self.scale(for: targetSize, contentMode: contentMode), options: options)
        }
        return id
    }

    /// The requested image of `asset` for `targetSize` (the final one: an opportunistic request
    /// returns the requested rendition, not the stand-in). Cancelling the task cancels the
    /// request and throws `CancellationError`; other failures are as
    /// ``requestImage(for:targetSize:contentMode:options:resultHandler:)`` describes.
    public func requestImage(
        for asset: any ObjectReference, targetSize: CGSize, contentMode: ImageContentMode,
        options: ImageRequestOptions = ImageRequestOptions()
    ) async throws -> ImageResult {
        var options = options
        if options.deliveryMode == .opportunistic { options.deliveryMode = .highQualityFormat }
        let request = CancellableRequest()
        return try await withTaskCancellationHandler {
            let result = await withCheckedContinuation { continuation in
                let id = requestImage(for: asset, targetSize: targetSize, contentMode: contentMode, options: options) { result in
                    continuation.resume(returning: result)
                }
                request.started(id, in: self)
            }
            if case .failure(let error) = result, error.code == .userCancelled, Task.isCancelled { throw CancellationError() }
            return try result.get()
        } onCancel: {
            request.cancel(in: self)
        }
    }

    /// Cancels a request: its handler is called once more, with `.userCancelled`, unless it
    /// has had its final result already. A rendition being made is still made and cached.
    public func cancelImageRequest(_ id: ImageRequestID) {
        library.renditions.deliver(
            .failure(PhotoLibraryError(.userCancelled, "\(id) was cancelled; request the image again to get it")), to: id, final: true)
    }

    private func perform(_ id: ImageRequestID, asset: String, scale requested: RenditionScale, options: ImageRequestOptions) {
        let renditions = library.renditions
        defer { renditions.afterRequest.value?(id) }
        guard renditions.isOpen(id) else { return }
        do {
            let source = try library.renditionSource(for: asset, version: options.version)
            if let hit = renditions.cache.lookup(RenditionKey(source: source.hash, scale: requested)) {
                return renditions.deliver(.success(result(hit, id, requested: requested)), to: id, final: true)
            }
            var scale = requested
            switch options.deliveryMode {
            case .highQualityFormat: break
            case .opportunistic:
                if let smaller = cachedStandIn(for: source, below: requested) {
                    renditions.deliver(.success(result(smaller, id, requested: requested)), to: id, final: false)
                }
            case .fastFormat:
                if let nearest = cachedNearest(for: source, to: requested) {
                    return renditions.deliver(.success(result(nearest, id, requested: requested)), to: id, final: true)
                }
                scale = RenditionScale(size: Self.boxSizes[0], mode: requested.mode)
            }
            guard renditions.isOpen(id) else { return }
            let made = try make(source, scales: [scale], allowsNetwork: options.isNetworkAccessAllowed)[scale]!.get()
            renditions.deliver(.success(result(made, id, requested: requested)), to: id, final: true)
        } catch {
            renditions.deliver(.failure(Self.libraryError(error)), to: id, final: true)
        }
    }

    /// A request's result from a cached rendition: degraded when smaller than the one requested.
    private func result(_ cached: CachedRendition, _ id: ImageRequestID, requested: RenditionScale) -> ImageResult {
        let rendition = cached.rendition
        return ImageResult(
            data: Data(rendition.bytes), fileURL: cached.url, pixelWidth: rendition.pixelWidth, pixelHeight: rendition.pixelHeight,
            uniformTypeIdentifier: rendition.format.uniformTypeIdentifier, isDegraded: requested.precedes(cached.key.scale), requestID: id)
    }

    /// Every scale a request can be answered with.
    private static let allScales: [RenditionScale] = {
        var scales = [RenditionScale(size: nil, mode: .fit)]
        for size in boxSizes {
            for mode in RenditionScale.Mode.allCases { scales.append(RenditionScale(size: size, mode: mode)) }
        }
        return scales
    }()

    /// The largest cached rendition of `source` smaller than `scale` (of the same mode first),
    /// for an opportunistic request's stand-in.
    private func cachedStandIn(for source: RenditionSource, below scale: RenditionScale) -> CachedRendition? {
        let cache = library.renditions.cache
        let smaller = cache.scales(of: source.hash, among: Self.allScales).filter { scale.precedes($0) }.sorted { $0.precedes($1) }
        for candidate in smaller.filter({ $0.mode == scale.mode }) + smaller.filter({ $0.mode != scale.mode }) {
            if let cached = cache.lookup(RenditionKey(source: source.hash, scale: candidate)) { return cached }
        }
        return nil
    }

    /// The cached rendition of `source` nearest to `scale`: the smallest at least as large (of
    /// the same mode first), else the largest smaller one.
    private func cachedNearest(for source: RenditionSource, to scale: RenditionScale) -> CachedRendition? {
        let cache = library.renditions.cache
        let present = cache.scales(of: source.hash, among: Self.allScales)
        let larger = present.filter { !scale.precedes($0) }.sorted { !$0.precedes($1) }
        let ordered =
            larger.filter { $0.mode == scale.mode } + larger.filter { $0.mode != scale.mode }
            + present.filter { scale.precedes($0) }.sorted { $0.precedes($1) }
        for candidate in ordered {
            if let cached = cache.lookup(RenditionKey(source: source.hash, scale: candidate)) { return cached }
        }
        return nil
    }

    // MARK: Caching

    /// Makes the renditions of `assets` for `targetSize` ahead of their requests, in the
    /// background, on threads of low priority (PhotoKit's `PHCachingImageManager`). Several
    /// sizes asked for one asset before its job starts are made from one decode. Progress:
    /// ``cachingProgress``; waiting: ``waitForCaching(progress:)``.
    public func startCachingImages(
        for assets: [any ObjectReference], targetSize: CGSize, contentMode: ImageContentMode,
        options: ImageRequestOptions = ImageRequestOptions()
    ) {
        let targets = assets.map { Renditions.CachingTarget(asset: $0.localIdentifier, version: options.version) }
        let scale = Self.scale(for: targetSize, contentMode: contentMode)
        library.renditions.startCaching(targets, scale: scale, allowsNetwork: options.isNetworkAccessAllowed) { [self] target in
            cache(target)
        }
    }

    /// Stops caching that has not started yet; the arguments must be those given to
    /// ``startCachingImages(for:targetSize:contentMode:options:)``.
    public func stopCachingImages(
        for assets: [any ObjectReference], targetSize: CGSize, contentMode: ImageContentMode,
        options: ImageRequestOptions = ImageRequestOptions()
    ) {
        let targets = assets.map { Renditions.CachingTarget(asset: $0.localIdentifier, version: options.version) }
        library.renditions.stopCaching(targets, scale: Self.scale(for: targetSize, contentMode: contentMode))
    }

    /// Stops all caching that has not started yet.
    public func stopCachingImagesForAllAssets() {
        library.renditions.stopCaching(nil, scale: nil)
    }

    /// How far caching has got, since the library was opened.
    public var cachingProgress: ImageCachingProgress { library.renditions.cachingProgress }

    /// Every caching job that could not make some of its renditions, since the library was
    /// opened, in the order they ended: one per asset and job, with the first error. Caching
    /// runs in the background, so this is where a failure is heard of (an accepted file whose
    /// decode fails, bytes gone missing); ``cachingProgress`` only counts them.
    public var cachingFailures: [ImageCachingFailure] { library.renditions.cachingFailures }

    /// Waits until every rendition asked for by ``startCachingImages(for:targetSize:contentMode:options:)``
    /// is done, calling `progress` every tenth of a second meanwhile (and once at the end).
    public func waitForCaching(progress: ((ImageCachingProgress) -> Void)? = nil) {
        while true {
            let current = cachingProgress
            progress?(current)
            if current.isFinished { return }
            Thread.sleep(forTimeInterval: 0.1)
        }
    }

    private func cache(_ target: Renditions.CachingTarget) {
        let renditions = library.renditions
        guard let job = renditions.takeCachingJob(target) else { return }
        do {
            let source = try library.renditionSource(for: target.asset, version: target.version)
            let results = make(source, scales: Array(job.scales), allowsNetwork: job.allowsNetwork)
            var failed: [(RenditionScale, PhotoLibraryError)] = []
            for (scale, result) in results { if case .failure(let error) = result { failed.append((scale, error)) } }
            failed.sort { $0.0.description < $1.0.description }
            let failure = failed.first.map {
                ImageCachingFailure(localIdentifier: target.asset, scales: failed.map(\.0.description), error: $0.1)
            }
            renditions.finishCaching(completed: results.count - failed.count, failed: failed.count, failure: failure)
        } catch {
            let failure = ImageCachingFailure(
                localIdentifier: target.asset, scales: job.scales.map(\.description).sorted(), error: Self.libraryError(error))
            renditions.finishCaching(completed: 0, failed: job.scales.count, failure: failure)
        }
    }

    // MARK: Making renditions

    /// The renditions of `scales` of `source`: cached, or made from one decode of its bytes
    /// (fetched first when they are not on this device and `allowsNetwork`).
    private func make(
        _ source: RenditionSource, scales: [RenditionScale], allowsNetwork: Bool
    ) -> [RenditionScale: Result<CachedRendition, PhotoLibraryError>] {
        library.renditions.renditions(of: source, scales: scales) { missing in
            // Without the original here, the renditions another device recorded stand in for
            // the ones it would make (SyncedRenditions.swift).
            var recorded: [RenditionScale: Rendition] = [:]
            if !library.resources.contains(source.hash) {
                for scale in missing {
                    recorded[scale] = library.recordedRendition(of: source.hash, scale: scale, allowsNetwork: allowsNetwork)
                }
            }
            let rest = missing.filter { recorded[$0] == nil }
            if !rest.isEmpty {
                try library.ensureLocalResource(source.hash, allowsNetwork: allowsNetwork)
                for (scale, made) in zip(rest, try library.makeRenditions(of: source, scales: rest)) { recorded[scale] = made }
            }
            return missing.map { recorded[$0]! }
        }
    }

    /// Any failure as the library's error.
    static func libraryError(_ error: any Error) -> PhotoLibraryError {
        switch error {
        case let error as PhotoLibraryError: return error
        case let error as MediaError:
            switch error.kind {
            case .invalidResource, .corruptedResource: return PhotoLibraryError(.invalidResource, "\(error)")
            case .missingResource, .fileSystem: return PhotoLibrary.translate(error)
            }
        default:
            let translated = PhotoLibrary.translate(error, doing: "make an image")
            return translated as? PhotoLibraryError ?? PhotoLibraryError(.internalError, "could not make an image: \(error)")
        }
    }
}

/// The request behind an `async` image request, cancelled when its task is (even when the
/// cancellation comes before the request has its identifier).
private final class CancellableRequest: Sendable {
    private let state = Mutex<(id: ImageRequestID?, cancelled: Bool)>((nil, false))

    func started(_ id: ImageRequestID, in manager: ImageManager) {
        let cancelled = state.withLock { state in
            state.id = id
            return state.cancelled
        }
        if cancelled { manager.cancelImageRequest(id) }
    }

    func cancel(in manager: ImageManager) {
        let id = state.withLock { state in
            state.cancelled = true
            return state.id
        }
        if let id { manager.cancelImageRequest(id) }
    }
}

/// The bytes a rendition is made from: a resource of the library and its format.
struct RenditionSource: Sendable {
    var hash: String
    var format: MediaFormat
}

extension PhotoLibrary {
    /// The library's image manager.
    public var imageManager: ImageManager { ImageManager(library: self) }

    /// The resource the renditions of `asset`'s `version` are made from.
    func renditionSource(for asset: String, version: ImageVersion) throws -> RenditionSource {
        let (hash, uniformType) = try resourceHash(for: asset, version: version)
        guard let format = MediaFormat.allCases.first(where: { $0.uniformTypeIdentifier == uniformType }) else {
            throw PhotoLibraryError(
                .requestNotSupportedForAsset, "asset \(asset) has no photo or video to make an image of (\(uniformType))")
        }
        return RenditionSource(hash: hash, format: format)
    }

    /// Makes sure a resource's bytes are on this device: fetched through the sync engine's hook
    /// when `allowsNetwork`.
    func ensureLocalResource(_ hash: String, allowsNetwork: Bool) throws {
        guard !resources.contains(hash) else { return }
        guard resourceFetcher.value != nil else {
            throw PhotoLibraryError(
                .missingResource, "resource \(hash) is not on this device and this library does not sync; import the photo again")
        }
        guard allowsNetwork else {
            throw PhotoLibraryError(
                .networkAccessRequired,
                "resource \(hash) is not on this device yet; allow network access (isNetworkAccessAllowed) to download it, or sync the library"
            )
        }
        try ensureResource(hash)
    }

    /// Decodes a resource (its bytes checked against their hash first) and makes its renditions.
    func makeRenditions(of source: RenditionSource, scales: [RenditionScale]) throws -> [Rendition] {
        if source.format.mediaType == .video {
            try resources.forEachChunk(of: source.hash) { _ in }
            return try Thumbnailer.renditions(ofFileAt: resources.url(for: source.hash)!, scales: scales)
        }
        return try Thumbnailer.renditions(ofStill: try resources.read(source.hash), name: source.hash, scales: scales)
    }
}
