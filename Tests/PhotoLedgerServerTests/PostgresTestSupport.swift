import Foundation
import Testing

@testable import PhotoLedgerServer

/// A database of its own for one test, in the PostgreSQL that `Tools/test.sh` starts (named by
/// `PHOTOLEDGER_TEST_POSTGRES_URL`), dropped when released.
final class PostgresTestDatabase: Sendable {
    /// The environment variable naming the PostgreSQL the tests use.
    static let environment = "PHOTOLEDGER_TEST_POSTGRES_URL"

    /// The URL of the administrative database, or nil when the tests run without PostgreSQL.
    static var adminURL: String? {
        guard let url = ProcessInfo.processInfo.environment[environment], !url.isEmpty else { return nil }
        return url
    }

    /// Why the PostgreSQL tests are skipped.
    static let skipReason: Comment = "PostgreSQL tests skipped: set \(environment) (Tools/test.sh starts a throwaway cluster and sets it)"

    /// The test database's URL.
    let url: String
    /// The database's name.
    let name: String
    private let adminURL: String

    init() throws {
        guard let adminURL = Self.adminURL else { throw ServerStoreError(String(describing: Self.skipReason)) }
        self.adminURL = adminURL
        name = "pl_test_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        guard var components = URLComponents(string: adminURL) else { throw ServerStoreError("\(Self.environment) is not a URL") }
        components.path = "/" + name
        url = components.string!
        try Self.admin { try $0.execute("CREATE DATABASE \(name)") }
    }

    deinit {
        let name = name
        try? Self.admin(adminURL) { try $0.execute("DROP DATABASE IF EXISTS \(name) WITH (FORCE)") }
    }

    /// The first column of the first row of `sql`, run on a new connection to `url`, as a number.
    static func adminCount(_ sql: String, _ url: String) throws -> Int64 {
        var value: Int64 = 0
        try admin(url) { value = try $0.query(sql, []).int64(0, 0) }
        return value
    }

    /// Runs `body` on a new connection to the administrative database.
    static func admin(_ url: String? = adminURL, _ body: (PostgresConnection) throws -> Void) throws {
        guard let url else { throw ServerStoreError(String(describing: skipReason)) }
        try body(try PostgresConnection(conninfo: url, database: "test cluster", connectTimeoutSeconds: 5, settings: []))
    }
}
