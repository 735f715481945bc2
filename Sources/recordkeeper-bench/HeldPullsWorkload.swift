import Foundation
import HarnessSupport
import RecordKeeper
import RecordKeeperPostgres
import RecordKeeperRelay

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// S10: one `recordkeeper-relay serve` process (the sibling of this executable) holding 1,000
/// live pulls at once (1,000 TCP connections, 100 spaces × 10 devices, `wait=120`): its
/// resident memory and thread count from /proc (Linux) before and while they are held, then
/// one push per space (through another `PostgresSyncServer`, so the relay's wake session
/// carries them) and the check that every held pull is answered with its change.
extension BenchRunner {
    static let heldPulls = 1_000
    static let heldSpaces = 100

    func runHeldPulls(conninfo: String) async throws {
        let raw = try RawPostgres(conninfo: conninfo)
        try freshSchema(raw)
        let schemaConninfo = Self.benchSchemaConninfo(conninfo)
        let relayPath = URL(fileURLWithPath: Self.executablePath).deletingLastPathComponent()
            .appendingPathComponent("recordkeeper-relay").path
        guard FileManager.default.isExecutableFile(atPath: relayPath) else {
            throw BenchFailure("S10 needs recordkeeper-relay beside the bench (\(relayPath)): swift build it first")
        }
        let secret = directory.appendingPathComponent("held-pulls-secret")
        let secretBytes = Array("the bench relay's secret, at least 32 bytes".utf8)
        try Data(secretBytes).write(to: secret)
        log("S10 \(Self.heldPulls) live pulls held on one relay process over \(Self.heldSpaces) spaces")

        let process = SpawnedProcess()
        process.executableURL = URL(fileURLWithPath: relayPath)
        process.arguments = [
            "serve", "--database", schemaConninfo, "--listen", "127.0.0.1:0", "--jwt-secret-file", secret.path,
            "--pool", "4", "--max-connections", "2000", "--max-pull-wait", "120",
        ]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle(forWritingAtPath: "/dev/null")
        try process.run()
        defer {
            if process.isRunning {
                process.terminate()
                process.waitUntilExit()
            }
        }
        guard let line = String(data: output.fileHandleForReading.availableData, encoding: .utf8),
            let portText = line.split(separator: ":").last?.trimmingCharacters(in: .whitespacesAndNewlines),
            let port = UInt16(portText)
        else { throw BenchFailure("S10: the relay did not say where it listens") }
        let pid = process.processIdentifier
        let before = Self.processFigures(pid)

        let signer = try JWTSigner(key: .hs256(secret: secretBytes))
        var tokens: [String] = []
        for space in 0..<Self.heldSpaces {
            tokens.append(try signer.sign(RelayAccess(space: "held-\(space)").claims(expiresAt: Date().timeIntervalSince1970 + 3600)))
        }
        var sockets: [Int32] = []
        defer { for socket in sockets { close(socket) } }
        for index in 0..<Self.heldPulls {
            let socket = try Self.connect(port: port)
            sockets.append(socket)
            let request = "GET /v1/pull?after=0&wait=120 HTTP/1.1\r\nHost: bench\r\n"
                + "Authorization: Bearer \(tokens[index % Self.heldSpaces])\r\n\r\n"
            try Self.send(request, on: socket)
        }
        // Held: the relay's gauge says so (a handshake, not a guess).
        let metricsSocket = try Self.connect(port: port)
        defer { close(metricsSocket) }
        var held = 0
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(120)
        while held < Self.heldPulls {
            guard clock.now < deadline else { throw BenchFailure("S10: only \(held) pulls held after 120 s") }
            try await Task.sleep(for: .milliseconds(100))
            held = try Self.gauge("recordkeeper_relay_live_pulls_held", port: port)
        }
        let during = Self.processFigures(pid)

        let pusher = try await PostgresSyncServer.connect(schemaConninfo)
        let woken = try await measureAsync {
            for space in 0..<Self.heldSpaces {
                _ = try await pusher.push(space: "held-\(space)", operations: [Self.wakeOperation(0, device: "pusher")])
            }
            for socket in sockets {
                let response = try Self.readResponse(socket)
                guard response.hasPrefix("HTTP/1.1 200"), response.contains("\"k0\"") else {
                    throw BenchFailure("S10: a held pull was answered \(response.prefix(200))")
                }
            }
        }
        log(String(format: "S10 relay pid %d: before RSS %.1f MiB, %d threads; %d pulls held: RSS %.1f MiB, %d threads; all answered %.3f s after the first push",
                   pid, Double(before.rss) / 1_048_576, before.threads, held, Double(during.rss) / 1_048_576, during.threads, woken))
        let note = "relay process (/proc), \(Self.heldPulls) connections each holding wait=120"
        record("S10", variant: "idle relay", n: 0, .recordKeeper, metric: "rss_mib", samples: [Double(before.rss) / 1_048_576], note: note)
        record("S10", variant: "idle relay", n: 0, .recordKeeper, metric: "threads", samples: [Double(before.threads)])
        record("S10", variant: "1,000 held pulls", n: held, .recordKeeper, metric: "rss_mib", samples: [Double(during.rss) / 1_048_576])
        record("S10", variant: "1,000 held pulls", n: held, .recordKeeper, metric: "threads", samples: [Double(during.threads)])
        record("S10", variant: "1,000 held pulls", n: held, .recordKeeper, metric: "all_answered_s", samples: [woken],
               note: "\(Self.heldSpaces) pushes through another server, then every response read")
        if !options.keepFiles {
            try raw.exec("DROP SCHEMA IF EXISTS recordkeeper_bench CASCADE", "drop the bench schema")
        }
    }

    /// VmRSS (bytes) and Threads of a process, from /proc (zeros elsewhere).
    static func processFigures(_ pid: Int32) -> (rss: Int, threads: Int) {
        #if os(Linux)
            guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return (0, 0) }
        #else
            let status: String? = nil
            guard let status else { return (0, 0) }
        #endif
        var rss = 0, threads = 0
        for line in status.split(separator: "\n") {
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            if line.hasPrefix("VmRSS:"), fields.count >= 2 { rss = (Int(fields[1]) ?? 0) * 1024 }
            if line.hasPrefix("Threads:"), fields.count >= 2 { threads = Int(fields[1]) ?? 0 }
        }
        return (rss, threads)
    }

    /// A gauge of the relay's `GET /metrics`, on a new connection.
    static func gauge(_ name: String, port: UInt16) throws -> Int {
        let socket = try connect(port: port)
        defer { close(socket) }
        try send("GET /metrics HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n", on: socket)
        let text = try readResponse(socket)
        for line in text.split(separator: "\n") where line.hasPrefix(name + " ") {
            return Int(line.split(separator: " ").last ?? "") ?? 0
        }
        return 0
    }

    static func connect(port: UInt16) throws -> Int32 {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw BenchFailure("S10: socket() failed: errno \(errno) (the open-file limit?)") }
        var timeout = timeval(tv_sec: 150, tv_usec: 0)
        _ = setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            close(socket)
            throw BenchFailure("S10: connect() failed: errno \(errno)")
        }
        return socket
    }

    static func send(_ text: String, on socket: Int32) throws {
        let bytes = Array(text.utf8)
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { Glibc.send(socket, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { throw BenchFailure("S10: send() failed: errno \(errno)") }
            sent += count
        }
    }

    /// One response: the headers, then as many body bytes as `Content-Length` says.
    static func readResponse(_ socket: Int32) throws -> String {
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16_384)
        while true {
            let text = String(decoding: data, as: UTF8.self)
            if let end = text.range(of: "\r\n\r\n") {
                let head = text[..<end.lowerBound].lowercased()
                if let field = head.split(separator: "\r\n").first(where: { $0.hasPrefix("content-length:") }),
                    let length = Int(field.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)),
                    data.count >= text.utf8.distance(from: text.utf8.startIndex, to: end.upperBound) + length
                {
                    return text
                }
            }
            let count = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
            guard count > 0 else {
                if data.isEmpty { throw BenchFailure("S10: the connection closed without an answer (errno \(errno))") }
                return String(decoding: data, as: UTF8.self)
            }
            data += buffer[0..<count]
        }
    }
}
