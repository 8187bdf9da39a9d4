import Foundation
import Testing

@testable import SyncTransport

#if canImport(Glibc)
    import Glibc
#endif

/// TLS verification against `openssl s_server` on loopback with throwaway self-signed certificates.
/// Verification is never turned off: trust comes only from ``CurlTransport/Configuration/caBundlePath``.
@Suite("CurlTransport TLS", .enabled(if: FileManager.default.isExecutableFile(atPath: TLSServer.openssl)))
struct TLSTests {
    @Test func selfSignedCertificateIsRefusedByDefault() async throws {
        let server = try await TLSServer(subjectAlternativeName: "IP:127.0.0.1")
        defer { server.stop() }
        let error = try await #require(throws: TransportError.self) {
            try await CurlTransport().send(HTTPRequest(url: server.url))
        }
        guard case .tlsFailure(_, let detail) = error else {
            Issue.record("expected tlsFailure, got \(error)")
            return
        }
        #expect(detail.contains("certificate"))
    }

    @Test func certificateTrustedThroughTheCABundleIsAccepted() async throws {
        let server = try await TLSServer(subjectAlternativeName: "IP:127.0.0.1")
        defer { server.stop() }
        let transport = CurlTransport(configuration: .init(caBundlePath: server.certificate.path))
        let response = try await transport.send(HTTPRequest(url: server.url))
        #expect(response.status == 200)
    }

    @Test func trustedCertificateForAnotherHostIsRefused() async throws {
        let server = try await TLSServer(subjectAlternativeName: "DNS:sync.example.org")
        defer { server.stop() }
        let transport = CurlTransport(configuration: .init(caBundlePath: server.certificate.path))
        let error = try await #require(throws: TransportError.self) { try await transport.send(HTTPRequest(url: server.url)) }
        guard case .tlsFailure = error else {
            Issue.record("expected tlsFailure, got \(error)")
            return
        }
    }
}

/// `openssl s_server -www` with a fresh self-signed certificate, on a free loopback port.
struct TLSServer {
    static let openssl = "/usr/bin/openssl"

    let directory: TemporaryDirectory
    let certificate: URL
    let url: URL
    private let process: Process

    init(subjectAlternativeName: String) async throws {
        directory = try TemporaryDirectory()
        certificate = directory.url.appending(path: "cert.pem")
        let key = directory.url.appending(path: "key.pem")
        let arguments = [
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1",
            "-subj", "/CN=PhotoLedger test", "-addext", "subjectAltName=\(subjectAlternativeName)",
            "-keyout", key.path, "-out", certificate.path,
        ]
        try await offCooperativePool { try Self.run(arguments) }
        let port = try closedLoopbackPort()
        url = URL(string: "https://127.0.0.1:\(port)/")!
        process = Process()
        process.executableURL = URL(fileURLWithPath: Self.openssl)
        process.arguments = ["s_server", "-accept", "127.0.0.1:\(port)", "-cert", certificate.path, "-key", key.path, "-www", "-quiet"]
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        try await offCooperativePool { try Self.waitUntilListening(port: port) }
    }

    func stop() {
        // SIGKILL: s_server started from the test process does not always stop on SIGTERM.
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        directory.remove()
    }

    private static func run(_ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: openssl)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw ServerError("openssl \(arguments[0]) failed") }
    }

    private static func waitUntilListening(port: UInt16) throws {
        for _ in 0..<200 {
            let probe = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(probe, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
            }
            close(probe)
            if connected { return }
            Thread.sleep(forTimeInterval: 0.025)
        }
        throw ServerError("openssl s_server did not start listening on port \(port)")
    }
}
