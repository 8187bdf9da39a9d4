/// An IPv4 address and port, `127.0.0.1:8080`: the `--listen` value of the tools' servers.
public struct ListenAddress: ExpressibleByArgument, CustomStringConvertible, Sendable {
    /// The address to bind.
    public let host: String
    /// The port (0 picks a free one).
    public let port: UInt16

    /// Parses `<host>:<port>`; nil for anything else.
    public init?(argument: String) {
        guard let colon = argument.lastIndex(of: ":"), let port = UInt16(argument[argument.index(after: colon)...]) else { return nil }
        host = String(argument[..<colon])
        self.port = port
    }

    public static var valueExpectation: String { "<host>:<port>, for example 127.0.0.1:8080" }

    public var description: String { "\(host):\(port)" }
}
