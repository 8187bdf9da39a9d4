@preconcurrency import Glibc
import CommandLineParsing
import Foundation
import LedgerCore
import PhotoLedger

/// A failure the tool reports as `Error: <message>` and a hint, with its exit code.
struct ToolError: Error {
    /// What happened.
    let message: String
    /// What to do about it.
    var hint: String?
    /// The process exit code.
    var exitCode: Int32 = 1
}

/// Exit codes of the tool.
enum ExitCode {
    static let success: Int32 = 0
    static let failure: Int32 = 1
    static let damaged: Int32 = 3
    static let usage: Int32 = 64
}

/// The environment variable naming the default library.
let libraryEnvironment = "PHOTOLEDGER_LIBRARY"

/// The parsed command line and the library it works on.
struct Context {
    let command: ParsedCommandLine
    let libraryURL: URL
    let json: Bool
    let quiet: Bool
    let explicitDevice: String?

    init(_ command: ParsedCommandLine) throws {
        self.command = command
        json = command.flag("json")
        quiet = command.flag("quiet")
        explicitDevice = command.value("device")
        guard let path = command.value("library") ?? ProcessInfo.processInfo.environment[libraryEnvironment], !path.isEmpty else {
            throw parser.usageError("no library given: pass --library <path> or set \(libraryEnvironment)", path: command.path)
        }
        libraryURL = URL(fileURLWithPath: path)
    }

    // MARK: Opening the library

    /// Opens the existing library (the tool owns it: read and write access granted).
    func openLibrary() throws -> PhotoLibrary {
        guard FileManager.default.fileExists(atPath: libraryURL.path) else {
            throw ToolError(message: "no library at \(libraryURL.path)", hint: "create it with 'photoledger init --library \(libraryURL.path)'")
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
        fflush(stdout)
    }

    /// Prints a JSON value on standard output.
    func emit(_ value: JSON) {
        print(value.serialized())
        fflush(stdout)
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
            if candidates == nil { candidates = try Listing.allAssets(in: library).map(\.localIdentifier) }
            return try Self.unique(text, among: candidates!, kind: "asset")
        }
    }

    /// Resolves an album argument: full identifier, UUID, unique prefix or exact title.
    func resolveAlbum(_ text: String, in library: PhotoLibrary) throws -> AssetCollection {
        if let identifier = LocalIdentifier(text), identifier.kind == .album, let album = try fetchAlbum(text, in: library) { return album }
        if let uuid = UUID(uuidString: text), let album = try fetchAlbum(LocalIdentifier(uuid: uuid, kind: .album).description, in: library) {
            return album
        }
        let albums = try library.fetchAssetCollections(with: .album).allObjects
        let titled = albums.filter { $0.title == text }
        if titled.count == 1 { return titled[0] }
        if titled.count > 1 {
            throw ToolError(
                message: "\(titled.count) albums are titled '\(text)': \(titled.map(\.localIdentifier).joined(separator: ", "))",
                hint: "name one by its identifier, or merge them with 'photoledger album merge'")
        }
        let identifier = try Self.unique(text, among: albums.map(\.localIdentifier), kind: "album")
        return albums.first { $0.localIdentifier == identifier }!
    }

    private func fetchAlbum(_ identifier: String, in library: PhotoLibrary) throws -> AssetCollection? {
        try library.fetchAssetCollections(withLocalIdentifiers: [identifier]).allObjects.first { $0.collectionType == .album }
    }

    private static func unique(_ prefix: String, among identifiers: [String], kind: String) throws -> String {
        let matches = prefix.count >= 4 ? identifiers.filter { $0.lowercased().hasPrefix(prefix.lowercased()) } : []
        switch matches.count {
        case 1: return matches[0]
        case 0:
            throw ToolError(message: "no \(kind) matches '\(prefix)'", hint: "list them with 'photoledger \(kind)s' and use an identifier (at least 4 characters)")
        default:
            throw ToolError(message: "'\(prefix)' matches \(matches.count) \(kind)s", hint: "give more characters of the identifier")
        }
    }
}
