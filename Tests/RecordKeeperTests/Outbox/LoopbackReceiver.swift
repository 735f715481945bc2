// Subprocesses (Process, python3 or the built executables) exist on macOS and Linux only: these
// tests are not built for iOS, tvOS, watchOS or visionOS.
#if os(macOS) || os(Linux)

import TestHelpers
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A small HTTP receiver on 127.0.0.1 (Python's standard library), started by a test.
///
/// It applies each operation once per `Idempotency-Key` (a repeated key is answered 200 and
/// counted as a duplicate, not applied again), appends every applied operation to a log file,
/// and misbehaves by operation kind: `fail500` (500 twice), `throttle` (429 with
/// `Retry-After: 30` once), `reject` (422 always), `auth` (401 unless `Authorization: Bearer
/// fresh`), `status-NNN` (that status always, with `Retry-After: 7` for 408), `redirect-NNN` (that
/// status with `Location: /elsewhere`, where any request is noted and answered 200 like a captive portal's login page), `slow` (applies it, then the first time never answers: it holds the request until
/// the client gives up), `hold` (applies nothing and holds the request until the client goes
/// away), `crash` (applies it, then the serving process dies without answering, once per log).
///
/// A parent process owns the listening socket and starts a new serving process when one dies,
/// so a crashed receiver comes back on the same socket at once: nothing else can take its port
/// meanwhile. It prints what it does, one event a line (`applied KEY`, `held KEY`, `released
/// KEY`, `crashed`), for tests to wait on (``waitFor(_:)``) instead of sleeping.
final class LoopbackReceiver {
    static let script = #"""
        import json, os, socket, sys, threading
        from http.server import ThreadingHTTPServer, BaseHTTPRequestHandler

        log = sys.argv[1]
        os.setpgid(0, 0)  # one process group: the test kills the parent and its servers at once

        def say(event):
            sys.stdout.write(event + "\n")
            sys.stdout.flush()

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def hold(self, key):
                # Until the client closes the connection (or two minutes, a hang guard).
                say("held " + key)
                self.connection.settimeout(120)
                try:
                    while self.rfile.read(1):
                        pass
                except OSError:
                    pass
                say("released " + key)
                self.close_connection = True

            def followed(self, method):
                # A request that followed a redirect: noted in a file, then answered like a
                # captive portal's login page.
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with lock:
                    with open(log + ".followed", "a") as f:
                        f.write("%s %s %s\n" % (method, self.headers.get("Idempotency-Key"),
                            self.headers.get("Authorization")))
                text = b"<html>portal login</html>"
                self.send_response(200)
                self.send_header("Content-Length", str(len(text)))
                self.end_headers()
                self.wfile.write(text)

            def do_GET(self):
                return self.followed("GET")

            def do_POST(self):
                if self.path == "/elsewhere":
                    return self.followed("POST")
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                key = self.headers.get("Idempotency-Key")
                kind = self.headers.get("RecordKeeper-Operation-Kind")
                with lock:
                    attempts[key] = attempts.get(key, 0) + 1
                    attempt = attempts[key]
                if kind == "hold":
                    return self.hold(key)
                status, extra, text = 200, {}, b"ok"
                if kind == "fail500" and attempt <= 2:
                    status, text = 500, b"internal error"
                elif kind == "throttle" and attempt == 1:
                    status, extra = 429, {"Retry-After": "30"}
                elif kind == "reject":
                    status, text = 422, b'{"error":"unknown sku"}'
                elif kind == "auth" and self.headers.get("Authorization") != "Bearer fresh":
                    status = 401
                elif kind.startswith("redirect-"):
                    status, extra, text = int(kind[9:]), {"Location": "/elsewhere"}, b"moved"
                elif kind.startswith("status-"):
                    status, text = int(kind[7:]), b"answered " + kind[7:].encode()
                    if status == 408:
                        extra = {"Retry-After": "7"}
                if status == 200:
                    with lock:
                        if key in applied:
                            with open(log + ".duplicates", "a") as f:
                                f.write(key + "\n")
                        else:
                            applied.add(key)
                            with open(log, "a") as f:
                                f.write(json.dumps({"key": key, "kind": kind, "body": body.decode(),
                                    "type": self.headers.get("Content-Type"),
                                    "client": self.headers.get("X-Client")}) + "\n")
                                f.flush()
                                os.fsync(f.fileno())
                            say("applied " + key)
                        if kind == "crash" and not os.path.exists(log + ".crashed"):
                            open(log + ".crashed", "w").close()
                            say("crashed")
                            os._exit(3)
                if kind == "slow" and attempt == 1:
                    return self.hold(key)  # applied, but no answer before the client gives up
                self.send_response(status)
                for name, value in extra.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(text)))
                self.end_headers()
                self.wfile.write(text)

        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        say("port %d" % listener.getsockname()[1])
        while True:
            child = os.fork()
            if child == 0:
                lock = threading.Lock()
                applied, attempts = set(), {}
                if os.path.exists(log):
                    with open(log) as f:
                        applied = {json.loads(line)["key"] for line in f if line.strip()}
                server = ThreadingHTTPServer(listener.getsockname(), Handler, bind_and_activate=False)
                server.socket.close()
                server.socket = listener
                server.serve_forever()
            _, status = os.waitpid(child, 0)
            if os.WEXITSTATUS(status) != 3:
                sys.exit(1)
        """#

    struct Applied: Decodable {
        let key: String
        let kind: String
        let body: String
        let type: String?
        let client: String?
    }

    let directory: URL
    let log: URL
    private(set) var port: Int = 0
    private var child: ChildProcess?

    init(directory: URL) throws {
        self.directory = directory
        log = directory.appendingPathComponent("applied.jsonl")
        try Data(Self.script.utf8).write(to: directory.appendingPathComponent("receiver.py"))
    }

    var endpoint: URL { URL(string: "http://127.0.0.1:\(port)/operations")! }

    /// Runs `body` with a receiver started in a fresh temporary directory (also passed to
    /// `body`), stopped afterwards.
    static func withRunning(_ body: (LoopbackReceiver, URL) async throws -> Void) async throws {
        try await withTemporaryDirectory { directory in
            let receiver = try LoopbackReceiver(directory: directory)
            try await receiver.start()
            defer { receiver.stop() }
            try await body(receiver, directory)
        }
    }

    /// Starts the receiver and waits until it listens.
    func start() async throws {
        let child = try ChildProcess(
            executable: URL(fileURLWithPath: "/usr/bin/env"),
            arguments: ["python3", directory.appendingPathComponent("receiver.py").path, log.path], in: directory)
        try child.start()
        self.child = child
        let line = try await child.waitForLine { $0.hasPrefix("port ") }
        guard let port = Int(line.dropFirst(5)) else {
            throw CocoaError(.fileReadCorruptFile, userInfo: [NSLocalizedDescriptionKey: "the receiver did not start: \(line)"])
        }
        self.port = port
    }

    /// Returns once the receiver has printed `event` (say `"held <id>"`).
    func waitFor(_ event: String) async throws {
        guard let child else { throw CocoaError(.executableNotLoadable) }
        try await child.waitForLine { $0 == event }
    }

    func stop() {
        guard let child, child.process.isRunning else { return }
        // The whole process group: the parent and the serving process it forked (and the
        // parent itself, should it not have made its group yet).
        kill(-child.process.processIdentifier, SIGKILL)
        kill(child.process.processIdentifier, SIGKILL)
        child.process.waitUntilExit()
    }

    /// Operations applied, in the order the receiver applied them.
    func applied() throws -> [Applied] {
        guard FileManager.default.fileExists(atPath: log.path) else { return [] }
        return try String(decoding: Data(contentsOf: log), as: UTF8.self)
            .split(separator: "\n").map { try JSONDecoder().decode(Applied.self, from: Data($0.utf8)) }
    }

    /// Requests that followed a redirect (`redirect-NNN` answers NNN with `Location: /elsewhere`):
    /// "METHOD KEY AUTHORIZATION" each.
    func followedRedirects() throws -> [String] {
        let url = URL(fileURLWithPath: log.path + ".followed")
        guard FileManager.default.fileExists(atPath: url.path) else { return [] }
        return String(decoding: try Data(contentsOf: url), as: UTF8.self).split(separator: "\n").map(String.init)
    }

    /// Keys sent again after they had been applied (deduped by the receiver).
    func duplicates() throws -> [String] {
        let url = URL(fileURLWithPath: log.path + ".duplicates")
        guard FileManager.default.fileExists(atPath: url.path) else { return [] }
        return String(decoding: try Data(contentsOf: url), as: UTF8.self).split(separator: "\n").map(String.init)
    }

    deinit { stop() }
}

#endif
