import CommandLineParsing
import Foundation
@preconcurrency import Glibc
import LedgerCore
import PhotoLedger
import PhotoLedgerJSON

/// The library a command works on, and how it prints.
struct Context {
    let libraryURL: URL
    let json: Bool
    let quiet: Bool
    let explicitDevice: String?

    init(_ options: GlobalOptions) throws {
        json = options.json
        quiet = options.quiet
        explicitDevice = options.device
        libraryURL = try options.libraryURL()
    }

    // MARK: Opening the library

    /// Opens the existing library (the tool owns it: read and write access granted).
    func openLibrary() throws -> PhotoLibrary {
        guard FileManager.default.fileExists(atPath: libraryURL.path) else {
            throw CommandFailure("no library at \(libraryURL.path)", hint: "create it with 'photoledger init --library \(libraryURL.path)'")
        }
        return try open(device: try resolvedDevice())
    }

    /// Opens (creating when needed) the library as `device`.
    func open(device: String) throws -> PhotoLibrary {
        var options = PhotoLibrary.Options()
        options.preauthorized = true
        return try PhotoLibrary(url: libraryURL, device: DeviceID(device), options: options)
    }

    /// The device name: --device, else the one recorded in the library, else from the host name.
    func resolvedDevice() throws -> String {
        if let explicitDevice { return explicitDevice }
        if let stored = try Self.storedDevice(at: libraryURL) { return stored }
        return Self.hostDevice()
    }

    /// The device name `init` recorded in the library at `url`, if any.
    static func storedDevice(at url: URL) throws -> String? {
        PhotoLibrary.recordedDevice(at: url)?.rawValue
    }

    /// A device name made from the host name (letters, digits, '.', '_' and '-').
    static func hostDevice() -> String {
        let host = ProcessInfo.processInfo.hostName
        let allowed = host.unicodeScalars.map { scalar -> Character in
            CharacterSet.alphanumerics.contains(scalar) && scalar.isASCII || "._-".unicodeScalars.contains(scalar) ? Character(scalar) : "-"
        }
        let name = String(allowed.prefix(64))
        return name.isEmpty ? "device" : name
    }

    // MARK: Output

    /// Prints a line unless --quiet or --json, at once even when standard output is a pipe.
    func say(_ text: String) {
        guard !quiet, !json else { return }
        print(text)
        fflush(nil)
    }

    /// Prints a JSON value on standard output.
    func emit(_ value: JSON) {
        print(value.serialized())
        fflush(nil)
    }

    /// Prints a warning on standard error.
    func warn(_ text: String) {
        FileHandle.standardError.write(Data((text + "\n").utf8))
    }

    // MARK: Identifiers

    /// Resolves asset arguments: full identifiers, UUIDs, or unique UUID prefixes.
    func resolveAssets(_ texts: [String], in library: PhotoLibrary) throws -> [String] {
        var candidates: [String]?
        return try texts.map { text in
            if let identifier = LocalIdentifier(text), identifier.kind == .asset { return text }
            if let uuid = UUID(uuidString: text) { return LocalIdentifier(uuid: uuid, kind: .asset).description }
            let known = try candidates ?? Listing.allAssets(in: library).map(\.localIdentifier)
            candidates = known
            return try Self.unique(text, among: known, kind: "asset")
        }
    }

    /// Resolves an album argument: full identifier, UUID, unique prefix or exact title.
    func resolveAlbum(_ text: String, in library: PhotoLibrary) throws -> AssetCollection {
        if let album = try albumByIdentifier(text, in: library) { return album }
        let albums = try library.fetchAssetCollections(with: .album).allObjects
        let hint = "name one by its identifier, or merge them with 'photoledger album merge'"
        if let album = try Self.onlyAlbum(titled: text, among: albums, hint: hint) { return album }
        let identifier = try Self.unique(text, among: albums.map(\.localIdentifier), kind: "album")
        guard let album = albums.first(where: { $0.localIdentifier == identifier }) else {
            throw CommandFailure("no album matches '\(text)'", hint: "list them with 'photoledger albums'")
        }
        return album
    }

    /// The album a full identifier or UUID names, or nil when the text is neither or names none.
    func albumByIdentifier(_ text: String, in library: PhotoLibrary) throws -> AssetCollection? {
        if let identifier = LocalIdentifier(text), identifier.kind == .album, let album = try fetchAlbum(text, in: library) { return album }
        if let uuid = UUID(uuidString: text), let album = try fetchAlbum(LocalIdentifier(uuid: uuid, kind: .album).description, in: library)
        {
            return album
        }
        return nil
    }

    /// The one album of `albums` titled `title`, nil when none is; several are an error that
    /// lists them, with `hint` saying what to do.
    static func onlyAlbum(titled title: String, among albums: [AssetCollection], hint: String) throws -> AssetCollection? {
        let titled = albums.filter { $0.title == title }
        guard titled.count > 1 else { return titled.first }
        let identifiers = titled.map(\.localIdentifier).joined(separator: ", ")
        throw CommandFailure("\(titled.count) albums are titled '\(title)': \(identifiers)", hint: hint)
    }

    private func fetchAlbum(_ identifier: String, in library: PhotoLibrary) throws -> AssetCollection? {
        try library.fetchAssetCollections(withLocalIdentifiers: [identifier]).allObjects.first { $0.collectionType == .album }
    }

    private static func unique(_ prefix: String, among identifiers: [String], kind: String) throws -> String {
        let matches = prefix.count >= 4 ? identifiers.filter { $0.lowercased().hasPrefix(prefix.lowercased()) } : []
        switch matches.count {
        case 1: return matches[0]
        case 0:
            throw CommandFailure(
                "no \(kind) matches '\(prefix)'",
                hint: "list them with 'photoledger \(kind)s' and use an identifier (at least 4 characters)")
        default:
            throw CommandFailure("'\(prefix)' matches \(matches.count) \(kind)s", hint: "give more characters of the identifier")
        }
    }
}
