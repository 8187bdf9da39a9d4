import Foundation
import TestSupportKit
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
    private let process: ChildProcess
    private let output: ProcessOutput

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
        process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: Self.openssl)
        // Port 0: s_server binds a free port itself and says which ("ACCEPT 127.0.0.1:PORT") once
        // it listens, so no other test can take the port between a probe and the bind.
        process.arguments = ["s_server", "-accept", "127.0.0.1:0", "-cert", certificate.path, "-key", key.path, "-www"]
        process.standardInput = FileHandle.nullDevice
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let reader = ProcessOutput(output.fileHandleForReading)
        self.output = reader
        do {
            let port = try await reader.value("the port s_server listens on") { text -> UInt16? in
                guard let marker = text.range(of: "ACCEPT 127.0.0.1:") else { return nil }
                let rest = text[marker.upperBound...]
                let digits = rest.prefix { $0.isASCII && $0.isNumber }
                return digits.count < rest.count ? UInt16(digits) : nil
            }
            url = URL(string: "https://127.0.0.1:\(port)/")!
        } catch {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            throw error
        }
    }

    func stop() {
        // SIGKILL: s_server started from the test process does not always stop on SIGTERM.
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        directory.remove()
    }

    private static func run(_ arguments: [String]) throws {
        let process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: openssl)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw ServerError("openssl \(arguments[0]) failed") }
    }
}
