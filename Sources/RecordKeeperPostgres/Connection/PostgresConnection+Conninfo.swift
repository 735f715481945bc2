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

    /// How long connecting waits for a server when the connection string does not say
    /// (`connect_timeout`), nor the environment (`PGCONNECT_TIMEOUT`).
    public static let defaultConnectTimeoutSeconds = 10

    /// Connects with libpq (blocking): with `connect_timeout` set to the default when neither
    /// `conninfo` nor the environment sets one. A string libpq cannot read goes to
    /// `PQconnectdb` as it is, so the failure carries libpq's own message.
    static func connect(_ conninfo: String) -> OpaquePointer? {
        guard ProcessInfo.processInfo.environment["PGCONNECT_TIMEOUT"] == nil,
            let options = PQconninfoParse(conninfo, nil)
        else { return PQconnectdb(conninfo) }
        defer { PQconninfoFree(options) }
        var keywords: [String] = []
        var values: [String] = []
        var option = options
        while let keyword = option.pointee.keyword {
            if let value = option.pointee.val {
                keywords.append(String(cString: keyword))
                values.append(String(cString: value))
            }
            option += 1
        }
        if keywords.contains("connect_timeout") { return PQconnectdb(conninfo) }
        keywords.append("connect_timeout")
        values.append(String(defaultConnectTimeoutSeconds))
        return withCStrings(keywords) { keywordPointers in
            withCStrings(values) { valuePointers in
                PQconnectdbParams(keywordPointers, valuePointers, 0)
            }
        }
    }

    /// Calls `body` with a NULL-terminated array of C strings for `strings`, valid during the call.
    private static func withCStrings<T>(_ strings: [String], _ body: ([UnsafePointer<CChar>?]) -> T) -> T {
        let copies = strings.map { strdup($0) }
        defer { copies.forEach { free($0) } }
        return body(copies.map { UnsafePointer($0) } + [nil])
    }
}
