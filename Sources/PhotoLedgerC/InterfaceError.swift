import CPhotoLedger
import PhotoLedger
import PhotoLedgerSync

/// A failure as the C interface reports it: a status code of photoledger.h and a message that
/// says what happened and what to do.
struct InterfaceError: Error {
    let status: photoledger_status
    let message: String

    init(_ status: Int, _ message: String) {
        self.status = photoledger_status(status)
        self.message = message
    }

    /// A NULL where a value is required, text that is not UTF-8, an unknown flag or value.
    static func invalidArgument(_ message: String) -> InterfaceError {
        InterfaceError(PHOTOLEDGER_ERROR_INVALID_ARGUMENT, message)
    }

    /// The status and message of an error a call threw: a library error keeps its code (PhotoKit's
    /// value), a sync error gets the code of its kind, anything else is an internal error.
    init(_ error: any Error) {
        switch error {
        case let error as InterfaceError:
            self = error
        case let error as PhotoLibraryError where error.code == .accessUserDenied:
            // The library's hint names the Swift call; say what a C caller does instead.
            self.init(
                error.code.rawValue,
                error.message + " (through photoledger.h: open with photoledger_open_options.preauthorized set, "
                    + "or record the user's answer with photoledger_set_authorization_status)")
        case let error as PhotoLibraryError:
            let code = error.code.rawValue
            self.init(Int32(exactly: code) == nil ? PHOTOLEDGER_ERROR_INTERNAL : code, error.message)
        case let error as SyncError:
            self.init(Self.status(of: error), error.description)
        default:
            self.init(PHOTOLEDGER_ERROR_INTERNAL, "\(error)")
        }
    }

    /// The code photoledger.h gives each kind of sync failure.
    static func status(of error: SyncError) -> Int {
        switch error {
        case .invalidRemote: PHOTOLEDGER_ERROR_SYNC_INVALID_REMOTE
        case .serverUnreachable: PHOTOLEDGER_ERROR_SYNC_SERVER_UNREACHABLE
        case .authenticationRefused: PHOTOLEDGER_ERROR_SYNC_AUTHENTICATION_REFUSED
        case .accessForbidden: PHOTOLEDGER_ERROR_SYNC_ACCESS_FORBIDDEN
        case .clockSkew: PHOTOLEDGER_ERROR_SYNC_CLOCK_SKEW
        case .serverError: PHOTOLEDGER_ERROR_SYNC_SERVER_ERROR
        case .invalidResponse: PHOTOLEDGER_ERROR_SYNC_INVALID_RESPONSE
        case .noRemote: PHOTOLEDGER_ERROR_SYNC_NO_REMOTE
        case .resourceUnavailable: PHOTOLEDGER_ERROR_SYNC_RESOURCE_UNAVAILABLE
        }
    }
}
