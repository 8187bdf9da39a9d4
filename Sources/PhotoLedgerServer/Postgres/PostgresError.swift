import Foundation

/// A failure of the PostgreSQL store: what happened, where (the database without its password,
/// the SQL) and what to do.
public struct PostgresError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of failure it is.
    public enum Code: Sendable, Equatable {
        /// The server could not be reached, refused the login, or the connection broke.
        case unreachable
        /// The server is older than ``PostgresServerStore/minimumServerVersion``.
        case unsupportedVersion
        /// Every connection of the pool stayed busy for the whole wait.
        case poolExhausted
        /// A statement ran longer than the statement timeout.
        case statementTimeout
        /// A statement failed (the SQLSTATE says why).
        case statementFailed
        /// A row did not have the shape the store expects.
        case unexpectedResult
        /// The URL given is not a PostgreSQL connection URL.
        case invalidURL
    }

    /// What kind of failure it is.
    public let code: Code
    /// The SQLSTATE PostgreSQL reported, when it reported one (`57014` for a cancelled statement, …).
    public let sqlState: String?
    /// What happened and what to do.
    public let message: String
    /// The database, as `postgresql://user@host:port/name` (never with a password).
    public let database: String
    /// The SQL that failed, when a statement failed.
    public let sql: String?

    /// Creates an error.
    public init(_ code: Code, _ message: String, database: String, sqlState: String? = nil, sql: String? = nil) {
        self.code = code
        self.message = message
        self.database = database
        self.sqlState = sqlState
        self.sql = sql
    }

    public var description: String {
        var text = "PostgreSQL \(database): \(message)"
        if let sqlState { text += " (SQLSTATE \(sqlState))" }
        if let sql {
            text += " in: \(sql.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: " "))"
        }
        return text
    }
}
