import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A private PostgreSQL server the load test owns, so it may stop and start it during the run:
/// `initdb` into a fresh directory, loopback only, trust authentication, fsync off (test data,
/// one run), as scripts/with-postgres.sh makes its servers. As root the server runs as the
/// unprivileged user `recordkeeper-ci` (which that script creates), since PostgreSQL refuses
/// root.
final class PostgresInstance: Sendable {
    let name: String
    let directory: URL
    let port: Int
    private let bin: String
    private let owner: String?

    var data: String { directory.appendingPathComponent("data").path }
    /// The libpq conninfo of its `postgres` database.
    var conninfo: String { "host=127.0.0.1 port=\(port) user=recordkeeper dbname=postgres connect_timeout=5" }

    private init(name: String, directory: URL, port: Int, bin: String, owner: String?) {
        self.name = name
        self.directory = directory
        self.port = port
        self.bin = bin
        self.owner = owner
    }

    /// Makes and starts a server named `name` under `parent`.
    static func start(name: String, under parent: URL, bin: String?) async throws -> PostgresInstance {
        let bin = try bin ?? findBin()
        let owner: String? = getuid() == 0 ? "recordkeeper-ci" : nil
        if let owner, getpwnam(owner) == nil {
            throw LoadTestFailure(
                "running as root, the PostgreSQL servers run as the user \(owner), which does not exist "
                    + "(scripts/with-postgres.sh creates it; or run as another user)")
        }
        let directory = parent.appendingPathComponent("pg-\(name)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        if let owner {
            try FileManager.default.setAttributes([.ownerAccountName: owner, .posixPermissions: 0o700], ofItemAtPath: directory.path)
        }
        let instance = PostgresInstance(name: name, directory: directory, port: try freePort(), bin: bin, owner: owner)
        try await instance.asOwner("\(bin)/initdb", ["-D", instance.data, "-U", "recordkeeper", "-A", "trust", "-E", "UTF8",
                                                  "--locale=C", "--no-sync"], "initdb of database \(name)")
        try await instance.start()
        return instance
    }

    /// Starts the server (after ``stop()``), waiting until it accepts connections.
    func start() async throws {
        let options = "-c listen_addresses=127.0.0.1 -c port=\(port) -c unix_socket_directories=\(directory.path) "
            + "-c fsync=off -c max_connections=300"
        try await asOwner("\(bin)/pg_ctl", ["-D", data, "-l", directory.appendingPathComponent("server.log").path,
                                            "-w", "-t", "60", "-o", options, "start"], "start of database \(name)")
    }

    /// Stops the server, fast mode: open sessions are ended at once.
    func stop() async throws {
        try await asOwner("\(bin)/pg_ctl", ["-D", data, "-m", "fast", "-w", "stop"], "stop of database \(name)")
    }

    private func asOwner(_ program: String, _ arguments: [String], _ what: String) async throws {
        if let owner {
            try await Commands.check("/usr/sbin/runuser", ["-u", owner, "--", program] + arguments, what)
        } else {
            try await Commands.check(program, arguments, what)
        }
    }

    /// PostgreSQL's server programs: on PATH, or in Debian's versioned directory (newest first).
    private static func findBin() throws -> String {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        for directory in path.split(separator: ":").map(String.init)
        where FileManager.default.isExecutableFile(atPath: directory + "/pg_ctl") && FileManager.default.isExecutableFile(atPath: directory + "/initdb") {
            return directory
        }
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []
        for version in versions.sorted(by: { $0.compare($1, options: .numeric) == .orderedDescending }) {
            let directory = "/usr/lib/postgresql/\(version)/bin"
            if FileManager.default.isExecutableFile(atPath: directory + "/pg_ctl") { return directory }
        }
        throw LoadTestFailure("initdb and pg_ctl not found (install the Debian package postgresql, or pass --postgres-bin)")
    }
}

/// A port on loopback free now: the kernel's pick for port 0.
func freePort() throws -> Int {
    let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard descriptor >= 0 else { throw LoadTestFailure("socket() failed: errno \(errno)") }
    defer { close(descriptor) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = 0
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard bound == 0 else { throw LoadTestFailure("bind() failed: errno \(errno)") }
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let named = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
    }
    guard named == 0 else { throw LoadTestFailure("getsockname() failed: errno \(errno)") }
    return Int(UInt16(bigEndian: address.sin_port))
}
