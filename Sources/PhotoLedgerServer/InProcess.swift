import Foundation

extension SyncServer {
    /// Handles one request in this process, without sockets: the same routing, authentication,
    /// limits and store as a request over HTTP. The server does not need to be started. Used to
    /// run clients against the real server logic in simulations and tests; the response's file
    /// bodies are open descriptors the caller reads and closes. A pull with `wait` is answered at
    /// once, as without it.
    public func respond(to head: RequestHead, body: [UInt8]) -> HTTPResponse {
        do {
            let prepared = try handler.prepare(head)
            let sink = try handler.bodySink(for: prepared)
            try body.withUnsafeBytes { bytes in try sink.append(bytes) }
            return handler.respond(to: prepared, body: sink)
        } catch let error as HTTPError {
            return error.response
        } catch {
            return HTTPError(500, .internalError, "the server failed to handle the request; retry later").response
        }
    }
}
