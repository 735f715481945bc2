internal import CLibPQ
import Foundation

extension PostgresConnection {
    /// Checks that `conninfo` is a connection string libpq can read (keywords or a URI), without
    /// connecting: a malformed string is bad input, not an unreachable server.
    ///
    /// ```swift
    /// try PostgresConnection.validate(conninfo: "host=db.internal dbname=records")  // fine
    /// try PostgresConnection.validate(conninfo: "hots=db")  // throws: invalid connection option "hots"
    /// ```
    ///
    /// - Throws: ``PostgresError`` of kind ``PostgresError/Kind/invalidArgument`` with libpq's message.
    public static func validate(conninfo: String) throws(PostgresError) {
        if conninfo.utf8.contains(0) {
            throw PostgresError(
                .invalidArgument, operation: "read the conninfo", message: "the conninfo contains a NUL character")
        }
        var errorMessage: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(conninfo, &errorMessage) else {
            let message = errorMessage.map { String(cString: $0) }?
                .trimmingCharacters(in: .whitespacesAndNewlines) ?? "libpq could not read it (out of memory?)"
            if let errorMessage { PQfreemem(errorMessage) }
            throw PostgresError(.invalidArgument, operation: "read the conninfo", message: message)
        }
        PQconninfoFree(options)
    }
}
