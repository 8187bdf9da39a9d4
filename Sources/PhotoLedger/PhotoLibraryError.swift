/// The one error type of the photo library. Its codes mirror PhotoKit's `PHPhotosError` raw
/// values, so code ported from Apple platforms keeps matching them; every message says what
/// happened and what to do.
public struct PhotoLibraryError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A kind of failure, with PhotoKit's raw value.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }

        /// An unexpected internal failure (a storage error, for example).
        public static let internalError = Code(rawValue: -1)
        /// The user cancelled the request.
        public static let userCancelled = Code(rawValue: 3072)
        /// The change token is older than the history still kept.
        public static let persistentChangeTokenExpired = Code(rawValue: 3105)
        /// The resource is not on this device yet; allow network access to download it.
        public static let networkAccessRequired = Code(rawValue: 3164)
        /// A network failure while reaching the sync server or fetching a resource.
        public static let networkError = Code(rawValue: 3169)
        /// No object has the identifier.
        public static let identifierNotFound = Code(rawValue: 3201)
        /// The change details cannot reconstruct the state.
        public static let persistentChangeDetailsUnavailable = Code(rawValue: 3210)
        /// The change request is not supported as configured.
        public static let changeNotSupported = Code(rawValue: 3300)
        /// The operation was interrupted or its arguments do not fit the current state; retry after fixing them.
        public static let operationInterrupted = Code(rawValue: 3301)
        /// A resource failed validation.
        public static let invalidResource = Code(rawValue: 3302)
        /// A resource is missing.
        public static let missingResource = Code(rawValue: 3303)
        /// The disk is full.
        public static let notEnoughSpace = Code(rawValue: 3305)
        /// The request is not supported for this asset.
        public static let requestNotSupportedForAsset = Code(rawValue: 3306)
        /// Access is restricted by the system configuration.
        public static let accessRestricted = Code(rawValue: 3310)
        /// The user denied access, or has not granted it yet.
        public static let accessUserDenied = Code(rawValue: 3311)

        public var description: String {
            switch self {
            case .internalError: return "internalError"
            case .userCancelled: return "userCancelled"
            case .persistentChangeTokenExpired: return "persistentChangeTokenExpired"
            case .networkAccessRequired: return "networkAccessRequired"
            case .networkError: return "networkError"
            case .identifierNotFound: return "identifierNotFound"
            case .persistentChangeDetailsUnavailable: return "persistentChangeDetailsUnavailable"
            case .changeNotSupported: return "changeNotSupported"
            case .operationInterrupted: return "operationInterrupted"
            case .invalidResource: return "invalidResource"
            case .missingResource: return "missingResource"
            case .notEnoughSpace: return "notEnoughSpace"
            case .requestNotSupportedForAsset: return "requestNotSupportedForAsset"
            case .accessRestricted: return "accessRestricted"
            case .accessUserDenied: return "accessUserDenied"
            default: return "code \(rawValue)"
            }
        }
    }

    /// What kind of failure this is.
    public let code: Code
    /// What happened and what to do.
    public let message: String

    /// Creates an error.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code) (\(code.rawValue)): \(message)" }

    static func notFound(_ identifier: String, kind: String = "object") -> PhotoLibraryError {
        PhotoLibraryError(
            .identifierNotFound, "no \(kind) with identifier \(identifier) in this library; fetch it again, it may have been deleted")
    }

    static func outsideChangeBlock(_ what: String) -> PhotoLibraryError {
        PhotoLibraryError(
            .changeNotSupported,
            "\(what) can only be used inside the performChanges or performChangesAndWait block that created it; "
                + "make the change inside a new change block")
    }
}

extension PhotoLibraryError.Code {
    /// Matches an error against a code: `catch PhotoLibraryError.Code.accessUserDenied`.
    public static func ~= (code: PhotoLibraryError.Code, error: any Error) -> Bool {
        (error as? PhotoLibraryError)?.code == code
    }
}
