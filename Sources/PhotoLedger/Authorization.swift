import Foundation
import LedgerCore
import LedgerStore

/// Whether the app may use the photo library (PhotoKit's raw values).
public enum AuthorizationStatus: Int, Sendable, Hashable, CustomStringConvertible {
    /// The user has not been asked yet.
    case notDetermined = 0
    /// The system does not allow access, and the user cannot change it.
    case restricted = 1
    /// The user refused access.
    case denied = 2
    /// Full access.
    case authorized = 3
    /// Access to the assets the user selected (read-write level only).
    case limited = 4

    public var description: String {
        switch self {
        case .notDetermined: return "notDetermined"
        case .restricted: return "restricted"
        case .denied: return "denied"
        case .authorized: return "authorized"
        case .limited: return "limited"
        }
    }
}

/// How much of the library the app asks for (PhotoKit's raw values).
public enum AccessLevel: Int, Sendable, Hashable, CustomStringConvertible {
    /// Create assets only: no fetching or reading.
    case addOnly = 1
    /// Read and change the library.
    case readWrite = 2

    public var description: String { self == .addOnly ? "addOnly" : "readWrite" }
}

/// The access a caller has at the moment of a call.
enum Access: Equatable {
    /// Everything.
    case full
    /// Only the assets in the limited selection.
    case limited
    /// Asset creation only.
    case addOnly
}

extension PhotoLibrary {
    /// The status for `level`: the one granted, capped by what this device's token for the
    /// shared library allows. A read-write grant also allows adding, as in PhotoKit; with an
    /// addOnly token the read-write level is restricted.
    public func authorizationStatus(for level: AccessLevel) -> AuthorizationStatus {
        let stored = (try? storage.read { db in (try Self.storedStatus(.readWrite, in: db), try Self.storedStatus(.addOnly, in: db)) })
        let (readWrite, addOnly) = stored ?? (.notDetermined, .notDetermined)
        switch level {
        case .readWrite:
            return binding.withLock { $0.scope } == .addOnly && readWrite != .notDetermined ? .restricted : readWrite
        case .addOnly:
            return readWrite == .authorized || readWrite == .limited ? .authorized : addOnly
        }
    }

    /// Asks for access. When the status is not determined yet, the host's prompt handler
    /// (``Options/promptHandler``) answers and the answer is stored; otherwise the stored status
    /// is returned without asking. With no prompt handler the status stays not determined.
    public func requestAuthorization(for level: AccessLevel) async -> AuthorizationStatus {
        let current = authorizationStatus(for: level)
        guard current == .notDetermined, let prompt = options.promptHandler else { return current }
        var answer = await prompt(level)
        if answer == .limited && level == .addOnly { answer = .authorized }
        if answer == .notDetermined { return .notDetermined }
        try? setAuthorizationStatus(answer, for: level)
        return answer
    }

    /// Sets the status as the system settings would (for example `.restricted` by a device
    /// policy, or `.authorized` for a command-line tool that owns its library).
    public func setAuthorizationStatus(_ status: AuthorizationStatus, for level: AccessLevel) throws {
        guard !(status == .limited && level == .addOnly) else {
            throw PhotoLibraryError(.changeNotSupported, "limited access exists only for the readWrite level")
        }
        try storage.write { db in
            try db.execute(
                "INSERT INTO device_settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                ["authorization.\(level)", [UInt8(status.rawValue)]])
        }
    }

    /// Adds assets to the limited selection, as the system picker does when the user selects them.
    public func addToLimitedSelection(_ assets: [any ObjectReference]) throws {
        let ids = try assets.map { try Self.parse($0, kind: .asset) }
        try storage.write { db in
            for id in ids { try db.execute("INSERT INTO limited_selection (asset_id) VALUES (?) ON CONFLICT DO NOTHING", [id.bytes]) }
        }
    }

    static func storedStatus(_ level: AccessLevel, in db: Database) throws -> AuthorizationStatus {
        let raw = try db.firstRow("SELECT value FROM device_settings WHERE key = ?", ["authorization.\(level)"]) { $0.blob(0).first ?? 0 }
        return raw.flatMap { AuthorizationStatus(rawValue: Int($0)) } ?? .notDetermined
    }

    /// The access for reading, or the error explaining why there is none.
    func readAccess(in db: Database) throws -> Access {
        if binding.withLock({ $0.scope }) == .addOnly {
            throw PhotoLibraryError(
                .accessRestricted,
                "this device's token for the shared library allows adding assets only (addOnly): it cannot fetch or read the library")
        }
        return try Self.readAccess(in: db)
    }

    /// The access the app was granted for reading, or the error explaining why there is none.
    static func readAccess(in db: Database) throws -> Access {
        let readWrite = try storedStatus(.readWrite, in: db)
        switch readWrite {
        case .authorized: return .full
        case .limited: return .limited
        default:
            if try storedStatus(.addOnly, in: db) == .authorized {
                throw PhotoLibraryError(
                    .accessUserDenied, "add-only access can create assets but not fetch or read them; request readWrite access")
            }
            throw denial(readWrite)
        }
    }

    /// The access for a change block, or the error explaining why there is none: the app's
    /// grant, capped by the token's scope (readOnly: no change; addOnly: asset creation only).
    func writeAccess(in db: Database) throws -> Access {
        switch binding.withLock({ $0.scope }) {
        case .readOnly?:
            throw PhotoLibraryError(
                .accessRestricted,
                "this device's token for the shared library is readOnly: changes cannot be made here; ask for a readWrite token")
        case .addOnly?:
            _ = try Self.writeAccess(in: db)
            return .addOnly
        default:
            return try Self.writeAccess(in: db)
        }
    }

    /// The access the app was granted for a change block, or the error explaining why there is none.
    static func writeAccess(in db: Database) throws -> Access {
        let readWrite = try storedStatus(.readWrite, in: db)
        switch readWrite {
        case .authorized: return .full
        case .limited: return .limited
        default:
            let addOnly = try storedStatus(.addOnly, in: db)
            if addOnly == .authorized { return .addOnly }
            throw denial(readWrite == .notDetermined ? addOnly : readWrite)
        }
    }

    static func denial(_ status: AuthorizationStatus) -> PhotoLibraryError {
        switch status {
        case .restricted:
            return PhotoLibraryError(
                .accessRestricted, "access to the photo library is restricted on this device and cannot be granted by the user")
        case .denied:
            return PhotoLibraryError(.accessUserDenied, "the user denied access to the photo library; they can allow it in the settings")
        default:
            return PhotoLibraryError(
                .accessUserDenied, "access to the photo library has not been granted; call requestAuthorization(for:) first")
        }
    }
}
