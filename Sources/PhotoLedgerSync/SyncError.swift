import Foundation
import PhotoLedger
import SyncProtocol
import SyncTransport

/// Why a sync failed, with what to do about it. Tokens never appear in descriptions.
public enum SyncError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The remote URL or token is malformed.
    case invalidRemote(String)
    /// The server could not be reached (refused, DNS, timeout, TLS): the transport's message.
    case serverUnreachable(String)
    /// The server refused the token (unknown or revoked).
    case authenticationRefused(String)
    /// The token does not grant access to this library, or its scope does not allow the request.
    case accessForbidden(String)
    /// This device's clock is too far ahead of the server's; nothing was stored.
    case clockSkew(String)
    /// The server failed or answered something unexpected.
    case serverError(status: Int, message: String)
    /// A response did not follow the protocol (malformed, or an event whose content hash does not match).
    case invalidResponse(String)
    /// No remote is configured for this library.
    case noRemote
    /// An event refers to a resource (hex SHA-256) the server does not hold.
    case resourceUnavailable(String)

    public var description: String {
        switch self {
        case .invalidRemote(let message): return "invalid remote: \(message)"
        case .serverUnreachable(let message): return "server unreachable: \(message)"
        case .authenticationRefused(let message):
            return "the server refused this device's token (\(message)); ask the administrator for a new token and run `remote set` again"
        case .accessForbidden(let message):
            return "access refused: \(message); check the library name in the remote URL and the token's scope"
        case .clockSkew(let message): return "clock skew: \(message)"
        case .serverError(let status, let message): return "the server failed (HTTP \(status)): \(message); retry later"
        case .invalidResponse(let message): return "unexpected answer from the server: \(message)"
        case .noRemote: return "no remote is set for this library; set one with the server's library URL and a device token"
        case .resourceUnavailable(let hash):
            return "the server does not hold resource \(hash): the device that made the asset never uploaded it; it stays missing here"
        }
    }

    /// The error for a non-success response.
    static func from(status: Int, body: [UInt8]) -> SyncError {
        let message = (try? ErrorResponse.decode(body)).map(\.message) ?? String(decoding: body.prefix(200), as: UTF8.self)
        let code = (try? ErrorResponse.decode(body))?.errorCode
        switch (status, code) {
        case (401, _): return .authenticationRefused(message)
        case (403, _): return .accessForbidden(message)
        case (422, .clockSkew): return .clockSkew(message)
        case (404, _): return .accessForbidden("the server has no such library or route (\(message))")
        default: return .serverError(status: status, message: message)
        }
    }

    /// The error for a transport failure.
    static func from(_ error: any Error) -> any Error {
        if let error = error as? TransportError {
            switch error {
            case .unreachable, .timedOut, .connectionLost, .tlsFailure: return SyncError.serverUnreachable(error.description)
            default: return SyncError.serverError(status: 0, message: error.description)
            }
        }
        return error
    }
}
