// Subprocesses (Process, python3 or the built executables) exist on macOS and Linux only: these
// tests are not built for iOS, tvOS, watchOS or visionOS.
#if os(macOS) || os(Linux)

import RecordKeeperTestSupport
import Foundation

/// A small HTTP receiver on 127.0.0.1 (Python's standard library), started by a test.
///
/// It applies each operation once per `Idempotency-Key` (a repeated key is answered 200 and
/// counted as a duplicate, not applied again), appends every applied operation to a log file
/// that outlives the server process, and misbehaves by operation kind:
/// `fail500` (500 twice), `throttle` (429 with `Retry-After: 30` once), `reject` (422 always),
/// `auth` (401 unless `Authorization: Bearer fresh`), `slow` (applies it, then answers only
/// after 3 s the first time), `crash` (applies it, then the server process dies without
/// answering, once per log).
final class LoopbackReceiver {
    static let script = #"""
        import json, os, sys, threading, time
        from http.server import ThreadingHTTPServer, BaseHTTPRequestHandler

        port, log = int(sys.argv[1]), sys.argv[2]
        lock = threading.Lock()
        applied, attempts = set(), {}
        if os.path.exists(log):
            with open(log) as f:
                applied = {json.loads(line)["key"] for line in f if line.strip()}

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                key = self.headers.get("Idempotency-Key")
                kind = self.headers.get("RecordKeeper-Operation-Kind")
                with lock:
                    attempts[key] = attempts.get(key, 0) + 1
                    attempt = attempts[key]
                status, extra, text = 200, {}, b"ok"
                if kind == "fail500" and attempt <= 2:
                    status, text = 500, b"internal error"
                elif kind == "throttle" and attempt == 1:
                    status, extra = 429, {"Retry-After": "30"}
                elif kind == "reject":
                    status, text = 422, b'{"error":"unknown sku"}'
                elif kind == "auth" and self.headers.get("Authorization") != "Bearer fresh":
                    status = 401
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
                        if kind == "crash" and not os.path.exists(log + ".crashed"):
                            open(log + ".crashed", "w").close()
                            os._exit(1)
                if kind == "slow" and attempt == 1:
                    time.sleep(3)  # applied, but the answer comes after the client gave up
                self.send_response(status)
                for name, value in extra.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(text)))
                self.end_headers()
                self.wfile.write(text)

        server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        print(server.server_address[1], flush=True)
        server.serve_forever()
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
    private var process: Process?

    init(directory: URL) throws {
        self.directory = directory
        log = directory.appendingPathComponent("applied.jsonl")
        try Data(Self.script.utf8).write(to: directory.appendingPathComponent("receiver.py"))
    }

    var endpoint: URL { URL(string: "http://127.0.0.1:\(port)/operations")! }
    var isRunning: Bool { process?.isRunning ?? false }

    /// Starts the server (on the port it had before, if any) and waits until it listens.
    func start() async throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", directory.appendingPathComponent("receiver.py").path, "\(port)", log.path]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        self.process = process
        // The first line is the port; it is printed once the socket listens.
        let line = await withCheckedContinuation { (continuation: CheckedContinuation<String, Never>) in
            DispatchQueue.global().async {
                var bytes = Data()
                while let byte = try? output.fileHandleForReading.read(upToCount: 1), !byte.isEmpty, byte != Data("\n".utf8) {
                    bytes.append(byte)
                }
                continuation.resume(returning: String(decoding: bytes, as: UTF8.self))
            }
        }
        guard let port = Int(line.trimmingCharacters(in: .whitespaces)) else {
            throw CocoaError(.fileReadCorruptFile, userInfo: [NSLocalizedDescriptionKey: "the receiver did not start: \(line)"])
        }
        self.port = port
    }

    func stop() {
        guard let process, process.isRunning else { return }
        // SIGKILL: a SIGTERM may be ignored when the test runner ignores it (it is inherited).
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// Operations applied, in the order the receiver applied them.
    func applied() throws -> [Applied] {
        guard FileManager.default.fileExists(atPath: log.path) else { return [] }
        return try String(decoding: Data(contentsOf: log), as: UTF8.self)
            .split(separator: "\n").map { try JSONDecoder().decode(Applied.self, from: Data($0.utf8)) }
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
