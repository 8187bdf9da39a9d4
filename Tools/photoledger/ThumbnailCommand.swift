import CommandLineParsing
import Foundation
import PhotoLedger
import PhotoLedgerJSON
import PhotoLedgerSync

/// `photoledger thumbnail`: an asset's image from the library's image manager, written to a file.
struct Thumbnail: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "thumbnail", abstract: "Write an asset's image, scaled for a size, to a file.",
        discussion: """
            The image is the library's rendition for the smallest box of 256, 512, 1024 or 2048
            pixels that holds --size (larger sizes get the full size): with --mode fit its longer
            side is the box's, with --mode fill its shorter side is, so it is at least --size
            unless the photo is smaller. It is upright (the photo's orientation applied), a JPEG,
            or a PNG when the picture has transparent pixels; a video's image is its first frame.
            Renditions are cached beside the library, so asking again costs no decoding. Photo
            bytes not on this device yet are downloaded from the remote, when one is set.
            """)

    /// `--mode`.
    enum Mode: String, CaseIterable, ExpressibleByArgument {
        case fit, fill

        var contentMode: ImageContentMode { self == .fit ? .aspectFit : .aspectFill }
    }

    @OptionGroup(title: GlobalOptions.title) var global: GlobalOptions
    @Argument(help: IdentifierHelp.asset) var asset: String

    @Option(help: ArgumentHelp("The size in pixels the image must cover (1 or more).", valueName: "pixels"))
    var size: Int

    @Option(help: "fit: the whole picture inside the size; fill: the picture covering it.")
    var mode: Mode = .fit

    @Option(help: "original, or current: the edited rendition when there is one.")
    var version: Export.Version = .current

    @Option(help: ArgumentHelp("The file to write (must not exist).", valueName: "file"))
    var to: String

    func validate() throws {
        if size < 1 { throw ValidationError("--size takes a number of pixels (1 or more), not \(size)") }
    }

    func run() async throws {
        let context = try Context(global)
        let library = try context.openLibrary()
        let url = URL(fileURLWithPath: to)
        if FileManager.default.fileExists(atPath: url.path) {
            throw CommandFailure("\(url.path) already exists", hint: "choose another file name or remove it first")
        }
        let asset = try context.resolveAssets([asset], in: library)[0]
        // With a remote, bytes not on this device are downloaded on demand while the engine lives.
        let engine = try SyncRemote.saved(in: library).map { SyncEngine(library: library, remote: $0) }
        let options = ImageRequestOptions(version: version.imageVersion, deliveryMode: .highQualityFormat, isNetworkAccessAllowed: true)
        let image = try await library.imageManager.requestImage(
            for: asset, targetSize: CGSize(width: size, height: size), contentMode: mode.contentMode, options: options)
        withExtendedLifetime(engine) {}
        do {
            try image.data.write(to: url, options: Data.WritingOptions.withoutOverwriting)
        } catch {
            throw CommandFailure(
                "could not write \(url.path): \(error.localizedDescription)", hint: "check the folder exists and is writable")
        }
        if context.json {
            context.emit(ThumbnailJSON.json(asset: asset, file: url.path, image: image))
        } else {
            let kind = image.uniformTypeIdentifier == "public.png" ? "PNG" : "JPEG"
            context.say(
                "Wrote a \(image.pixelWidth)×\(image.pixelHeight) \(kind) of \(asset) (\(formatBytes(Int64(image.data.count)))) to \(url.path)"
            )
        }
    }
}
