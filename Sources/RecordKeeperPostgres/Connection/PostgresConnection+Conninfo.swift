internal import CLibPQ
import Foundation

/// A connection string as libpq read it, with the library's defaults added.
struct PostgresConnectionSettings: Sendable {
    var keywords: [String]
    var values: [String]
    /// How long connecting may take (nil: as long as it takes).
    var connectTimeout: Duration?
    /// How many hosts the string names (libpq tries them in turn).
    var hostCount: Int
}

extension PostgresConnection {
    /// Checks that `conninfo` is a connection string libpq can read (keywords or a URI), without
    /// connecting: a malformed string is a configuration error, not an unreachable server.
    ///
    /// ```swift
    /// try PostgresConnection.validate(conninfo: "host=db.internal dbname=records")  // fine
    /// try PostgresConnection.validate(conninfo: "hots=db")  // throws: invalid connection option "hots"
    /// ```
    ///
    /// - Throws: ``PostgresError`` of kind ``PostgresError/Kind/configuration`` with libpq's message.
    public static func validate(conninfo: String) throws(PostgresError) {
        _ = try connectionSettings(conninfo)
    }

    /// How long connecting waits for a server when the connection string does not say
    /// (`connect_timeout`), nor the environment (`PGCONNECT_TIMEOUT`).
    public static let defaultConnectTimeoutSeconds = 10

    /// The settings added to a connection string that does not set them: a connect timeout
    /// (unless `PGCONNECT_TIMEOUT` sets one), and TCP keepalives that notice a dead peer
    /// between requests within about 30 seconds (15 s idle, then 3 probes 5 s apart), plus
    /// `tcp_user_timeout` (30 s), after which data the peer never acknowledged closes the
    /// connection. Unix-domain sockets ignore the TCP settings. And `client_encoding=UTF8`,
    /// which a connection string may only set to UTF-8 (over `PGCLIENTENCODING` and a role's
    /// or database's setting).
    public static let defaultConnectionSettings: [(keyword: String, value: String)] = [
        ("keepalives", "1"), ("keepalives_idle", "15"), ("keepalives_interval", "5"), ("keepalives_count", "3"),
        ("tcp_user_timeout", "30000"),
        // Every text this library sends is UTF-8 and every text it reads is taken as UTF-8:
        // a role, database or PGCLIENTENCODING with another client encoding would change
        // space, collection and key names on their way.
        ("client_encoding", "UTF8"),
    ]

    /// libpq's message about a conninfo it cannot read, up to the first piece of the conninfo
    /// it quotes (`missing "=" after "…"`, `invalid percent-encoded token: "…"`): the piece may
    /// be part of a password, and the message goes to logs. Quoted single characters (`"="`)
    /// stay; from the first longer quotation on, nothing is shown, so that a quote inside the
    /// piece cannot bring the rest of it out.
    static func withoutQuotedFragments(_ message: String) -> String {
        let characters = Array(message)
        var result = ""
        var index = 0
        while index < characters.count {
            let character = characters[index]
            guard character == "\"" else {
                result.append(character)
                index += 1
                continue
            }
            if index + 2 < characters.count, characters[index + 2] == "\"" {
                result += "\"\(characters[index + 1])\""
                index += 3
                continue
            }
            return result + "\"…\""
        }
        return result
    }

    /// `conninfo` as libpq reads it, with the defaults added for what it does not set.
    ///
    /// - Throws: ``PostgresError/Kind/configuration`` when libpq cannot read it.
    static func connectionSettings(_ conninfo: String) throws(PostgresError) -> PostgresConnectionSettings {
        if conninfo.utf8.contains(0) {
            throw PostgresError(
                .configuration, operation: "read the conninfo", message: "the conninfo contains a NUL character")
        }
        var errorMessage: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(conninfo, &errorMessage) else {
            let message = errorMessage.map { withoutQuotedFragments(String(cString: $0)) }?
                .trimmingCharacters(in: .whitespacesAndNewlines) ?? "libpq could not read it (out of memory?)"
            if let errorMessage { PQfreemem(errorMessage) }
            throw PostgresError(.configuration, operation: "read the conninfo", message: message)
        }
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
        let environment = ProcessInfo.processInfo.environment
        var timeoutText = keywords.firstIndex(of: "connect_timeout").map { values[$0] }
        if timeoutText == nil {
            if let fromEnvironment = environment["PGCONNECT_TIMEOUT"] {
                timeoutText = fromEnvironment
            } else {
                keywords.append("connect_timeout")
                values.append(String(defaultConnectTimeoutSeconds))
                timeoutText = String(defaultConnectTimeoutSeconds)
            }
        }
        // Named as PostgreSQL matches encoding names: letters and digits, any case (UTF-8,
        // utf_8 and Unicode are UTF8).
        if let index = keywords.firstIndex(of: "client_encoding"),
            !["utf8", "unicode"].contains(String(values[index].lowercased().filter { $0.isLetter || $0.isNumber }))
        {
            throw PostgresError(
                .configuration, operation: "read the conninfo",
                message: "client_encoding is \(values[index]); RecordKeeper sends and reads UTF-8 only (leave it out, or set UTF8)")
        }
        for (keyword, value) in defaultConnectionSettings where !keywords.contains(keyword) {
            keywords.append(keyword)
            values.append(value)
        }
        // libpq: zero or negative waits for ever, 1 counts as 2 (and its own timeout does not
        // apply to the non-blocking connect this library makes: the deadline is ours).
        var timeout: Duration?
        if let seconds = timeoutText.flatMap({ Int($0.trimmingCharacters(in: .whitespaces)) }), seconds > 0 {
            timeout = .seconds(max(seconds, 2))
        }
        let hosts = [keywords.firstIndex(of: "host"), keywords.firstIndex(of: "hostaddr")]
            .compactMap { $0 }.map { values[$0].split(separator: ",", omittingEmptySubsequences: false).count }
        return PostgresConnectionSettings(
            keywords: keywords, values: values, connectTimeout: timeout, hostCount: max(hosts.max() ?? 1, 1))
    }

    /// Connects (libpq's non-blocking connect, each wait bounded by the connect timeout and
    /// ended by cancellation), telling a server that cannot be reached from settings or
    /// credentials it refuses (see ``classify(_:settings:reachedServer:phase:)``).
    static func connect(_ settings: PostgresConnectionSettings, wake: WakePipe) throws(PostgresError) -> OpaquePointer {
        let started = withCStrings(settings.keywords) { keywords in
            withCStrings(settings.values) { values in PQconnectStartParams(keywords, values, 0) }
        }
        guard let connection = started else {
            throw PostgresError(.connection, operation: "connect", message: "libpq is out of memory")
        }
        // The server's refusal then carries its SQLSTATE ("FATAL:  28P01: …").
        PQsetErrorVerbosity(connection, PQERRORS_VERBOSE)
        do {
            try poll(connection, timeout: settings.connectTimeout, wake: wake, settings: settings, reset: false)
        } catch {
            PQfinish(connection)
            throw error
        }
        PQsetErrorVerbosity(connection, PQERRORS_DEFAULT)
        _ = PQsetnonblocking(connection, 1)
        return connection
    }

    /// Connects `connection` again with its settings (a broken or given-up session).
    static func reset(
        _ connection: OpaquePointer, timeout: Duration?, wake: WakePipe, operation: String
    ) throws(PostgresError) {
        PQsetErrorVerbosity(connection, PQERRORS_VERBOSE)
        defer { PQsetErrorVerbosity(connection, PQERRORS_DEFAULT) }
        guard PQresetStart(connection) == 1 else {
            throw classify(connection, settings: nil, reachedServer: false, phase: PQstatus(connection))
        }
        try poll(connection, timeout: timeout, wake: wake, settings: nil, reset: true)
        _ = PQsetnonblocking(connection, 1)
    }

    private static func poll(
        _ connection: OpaquePointer, timeout: Duration?, wake: WakePipe, settings: PostgresConnectionSettings?,
        reset: Bool
    ) throws(PostgresError) {
        let deadline = timeout.map { ContinuousClock.now + $0 }
        if PQstatus(connection) == CONNECTION_BAD {
            throw classify(connection, settings: settings, reachedServer: false, phase: CONNECTION_BAD)
        }
        var reached = false
        var state = PGRES_POLLING_WRITING
        while true {
            let events = state == PGRES_POLLING_READING ? Int16(POLLIN) : Int16(POLLOUT)
            switch wait(socket: PQsocket(connection), for: events, deadline: deadline, wake: wake) {
            case .ready:
                break
            case .timedOut:
                throw PostgresError(
                    .connection, operation: "connect",
                    message: "the server did not answer within \(timeout.map(describe) ?? "the connect timeout") "
                        + "(connect_timeout)")
            case .cancelled:
                throw PostgresError(.cancelled, operation: "connect", message: "the task was cancelled while connecting")
            }
            // Where the attempt was before this step: past STARTED, a server answered.
            let phase = PQstatus(connection)
            if phase != CONNECTION_STARTED, phase != CONNECTION_NEEDED { reached = true }
            state = reset ? PQresetPoll(connection) : PQconnectPoll(connection)
            if state == PGRES_POLLING_OK { return }
            if state == PGRES_POLLING_FAILED {
                throw classify(connection, settings: settings, reachedServer: reached, phase: phase)
            }
        }
    }

    /// What kind of failure a connection attempt's is.
    ///
    /// - The server's refusal carries its SQLSTATE: class 28 (an unknown role, a wrong
    ///   password) and 42501 (no permission to connect) are ``PostgresError/Kind/authentication``;
    ///   08 (connection exception), 53 (too many connections, out of resources) and 57P0x (the
    ///   server shutting down or starting up) mean try later (``PostgresError/Kind/connection``);
    ///   any other (3D000 a database that does not exist, 42704 an unknown setting in
    ///   `options`) is ``PostgresError/Kind/configuration``.
    /// - libpq needed a password it was not given: authentication.
    /// - The server was reached and the attempt failed while TLS or GSS was negotiated (say
    ///   `sslmode=require` against a server without TLS): configuration; unless the message
    ///   says the connection was lost (a server restarting): the server could not be reached.
    /// - It failed before reaching any server: the settings are tried against a socket that
    ///   cannot exist, with nothing else changed; when libpq refuses them there too (an invalid
    ///   `sslmode` or port), configuration. Otherwise (a host that does not resolve or answer)
    ///   the server could not be reached.
    static func classify(
        _ connection: OpaquePointer, settings: PostgresConnectionSettings?, reachedServer: Bool, phase: ConnStatusType
    ) -> PostgresError {
        let (sqlState, message) = parseFailure(message(of: connection))
        if let sqlState {
            let kind: PostgresError.Kind =
                if sqlState.hasPrefix("28") || sqlState == "42501" {
                    .authentication
                } else if sqlState.hasPrefix("08") || sqlState.hasPrefix("53") || sqlState.hasPrefix("57P") {
                    .connection
                } else {
                    .configuration
                }
            return PostgresError(kind, operation: "connect", sqlState: sqlState, message: message)
        }
        if PQconnectionNeedsPassword(connection) == 1 {
            return PostgresError(.authentication, operation: "connect", message: message)
        }
        if reachedServer, phase == CONNECTION_SSL_STARTUP || phase == CONNECTION_GSS_STARTUP,
            !lostConnection(message)
        {
            return PostgresError(.configuration, operation: "connect", message: message)
        }
        if !reachedServer, let settings, let problem = optionProblem(settings) {
            return PostgresError(.configuration, operation: "connect", message: problem)
        }
        return PostgresError(.connection, operation: "connect", message: message)
    }

    /// Whether libpq's message says the connection itself went away (a server restarting or
    /// shutting down while TLS was negotiated): try later, not a setting to fix.
    static func lostConnection(_ message: String) -> Bool {
        let lost = [
            "server closed the connection unexpectedly", "Connection reset by peer", "EOF detected",
            "could not receive data from server", "could not send data to server",
        ]
        return lost.contains { message.localizedCaseInsensitiveContains($0) }
    }

    /// The SQLSTATE a verbose connection failure carries ("FATAL:  3D000: database … does not
    /// exist"), and the message without it and without its LOCATION line.
    static func parseFailure(_ text: String) -> (sqlState: String?, message: String) {
        var sqlState: String?
        var lines: [String] = []
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("LOCATION:") { continue }
            var line = String(line)
            if sqlState == nil, let range = line.range(of: #":  [0-9A-Z]{5}: "#, options: .regularExpression) {
                sqlState = String(line[range].dropFirst(3).prefix(5))
                line.replaceSubrange(range, with: ":  ")
            }
            lines.append(line)
        }
        let message = lines.joined(separator: "\n").trimmingCharacters(in: .whitespacesAndNewlines)
        return (sqlState, message.isEmpty ? "unknown libpq failure" : message)
    }

    /// libpq's complaint about `settings` other than the host: they are tried with every host
    /// replaced by a socket directory that cannot exist (no network, no name lookup), so the
    /// attempt fails at once, and fails for that reason alone when the other settings are valid.
    private static func optionProblem(_ settings: PostgresConnectionSettings) -> String? {
        let directory = "/nonexistent-recordkeeper-\(UUID().uuidString)"
        var keywords: [String] = []
        var values: [String] = []
        for (keyword, value) in zip(settings.keywords, settings.values) where !["host", "hostaddr"].contains(keyword) {
            keywords.append(keyword)
            values.append(value)
        }
        keywords.append("host")
        values.append(Array(repeating: directory, count: settings.hostCount).joined(separator: ","))
        let probe = withCStrings(keywords) { keywords in
            withCStrings(values) { values in PQconnectStartParams(keywords, values, 0) }
        }
        guard let probe else { return nil }
        defer { PQfinish(probe) }
        // A Unix-domain socket that does not exist fails within the first polls.
        var state = PGRES_POLLING_WRITING
        var polls = 0
        while PQstatus(probe) != CONNECTION_BAD, state != PGRES_POLLING_FAILED, state != PGRES_POLLING_OK, polls < 8 {
            state = PQconnectPoll(probe)
            polls += 1
        }
        let text = message(of: probe)
        if text.components(separatedBy: directory).count - 1 >= settings.hostCount { return nil }
        return text
    }

    /// Calls `body` with a NULL-terminated array of C strings for `strings`, valid during the call.
    private static func withCStrings<T>(_ strings: [String], _ body: ([UnsafePointer<CChar>?]) -> T) -> T {
        let copies = strings.map { strdup($0) }
        defer { copies.forEach { free($0) } }
        return body(copies.map { UnsafePointer($0) } + [nil])
    }
}
