import Foundation
import RecordKeeper
import TestHelpers
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `sync --watch` against a real PostgreSQL (scripts/with-postgres.sh): two stores each running
/// it see each other's changes with no command run, one JSON object per round, and a signal
/// ends it with "stopped" and exit 0.
@Suite(.enabled(if: TestPostgres.enabled, TestPostgres.disabledReason), .timeLimit(.minutes(5)))
struct SyncWatchCommandTests {
    private static func ok(_ result: ToolResult, sourceLocation: SourceLocation = #_sourceLocation) -> ToolResult {
        #expect(result.status == 0, "\(result.stderr)", sourceLocation: sourceLocation)
        return result
    }

    /// A runner and the directory its watching process writes its output to.
    private static func device(_ directory: URL, _ name: String) throws -> (ToolRunner, URL) {
        let home = directory.appendingPathComponent(name, isDirectory: true)
        let outputs = directory.appendingPathComponent("\(name)-outputs", isDirectory: true)
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: outputs, withIntermediateDirectories: true)
        return (ToolRunner(directory: home), outputs)
    }

    private static func object(_ line: String) -> [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
    }

    private static func pulled(_ line: String) -> Int {
        ((object(line)?["pulled"] as? [String: Any])?["changes"] as? Int) ?? 0
    }

    @Test func `a change made on one watching store shows on the other with no command run`() async throws {
        try await TestPostgres.withPrivateSchema(prefix: "rk_watch") { conninfo, _ in
            try await withTemporaryDirectory { directory in
                let (a, aOutputs) = try Self.device(directory, "a")
                let (b, bOutputs) = try Self.device(directory, "b")
                _ = Self.ok(try await a.runOnStore(["sync", "--server", conninfo, "--space", "home", "--collections", "notes"]))
                _ = Self.ok(try await b.runOnStore(["sync", "--server", conninfo, "--space", "home", "--collections", "notes"]))

                let watchA = try ToolProcess(
                    ["sync", "--watch", "--json", "--server", conninfo, "--store", a.storePath], in: a.directory,
                    outputDirectory: aOutputs)
                let watchB = try ToolProcess(
                    ["sync", "--watch", "--json", "--server", conninfo, "--store", b.storePath], in: b.directory,
                    outputDirectory: bOutputs)
                try watchA.start()
                try watchB.start()
                defer {
                    watchA.send(SIGKILL)
                    watchB.send(SIGKILL)
                }
                // Each printed its first round: it holds a live pull now.
                for watch in [watchA, watchB] {
                    try await watch.waitForLine(timeout: .seconds(30)) { Self.object($0)?["state"] as? String == "upToDate" }
                }

                let started = ContinuousClock.now
                _ = Self.ok(try await a.runOnStore(["put", "notes", "hello", #""world""#]))
                let committed = ContinuousClock.now
                // A generous bound against hangs, not a timing: the measured figures are printed.
                let line = try await watchB.waitForLine(timeout: .seconds(30)) { Self.pulled($0) == 1 }
                let shown = ContinuousClock.now
                print("sync --watch: a put on one store showed on the other after \(started.duration(to: shown)) "
                      + "(the put process included), \(committed.duration(to: shown)) after the put exited")
                #expect(Self.object(line)?["state"] as? String == "upToDate")
                let pushed = try await watchA.waitForLine(timeout: .seconds(30)) {
                    ((Self.object($0)?["pushed"] as? [String: Any])?["operations"] as? Int) == 1
                }
                #expect(Self.object(pushed)?["pending"] as? Int == 0)
                let value = Self.ok(try await b.runOnStore(["get", "notes", "hello"]))
                #expect(value.output == "\"world\"\n")

                // And back: b's delete reaches a.
                _ = Self.ok(try await b.runOnStore(["delete", "notes", "hello"]))
                try await watchA.waitForLine(timeout: .seconds(30)) { Self.pulled($0) == 1 }
                #expect(try await a.runOnStore(["get", "notes", "hello"]).status == 66)

                watchA.send(SIGINT)
                watchB.send(SIGTERM)
                try await watchA.waitForExit()
                try await watchB.waitForExit()
                for watch in [watchA, watchB] {
                    let stderr = try watch.errorOutput()
                    #expect(watch.process.terminationStatus == 0, "\(stderr)")
                    let lines = try watch.output().split(separator: "\n").map(String.init)
                    #expect(lines.last == #"{"state":"stopped"}"#)
                    #expect(lines.allSatisfy { Self.object($0) != nil }, "one JSON object per line")
                }
            }
        }
    }

    @Test func `a watch started with --recover names the recovery in its first JSON round`() async throws {
        try await TestPostgres.withPrivateSchema(prefix: "rk_watch") { conninfo, _ in
            try await withTemporaryDirectory { directory in
                let (a, aOutputs) = try Self.device(directory, "a")
                _ = Self.ok(try await a.runOnStore(["sync", "--server", conninfo, "--space", "home", "--collections", "notes"]))
                let watch = try ToolProcess(
                    ["sync", "--watch", "--json", "--recover", "--server", conninfo, "--store", a.storePath], in: a.directory,
                    outputDirectory: aOutputs)
                try watch.start()
                defer { watch.send(SIGKILL) }
                let first = try await watch.waitForLine(timeout: .seconds(30)) { Self.object($0)?["state"] != nil }
                let recovery = Self.object(first)?["recovery"] as? [String: Any]
                #expect(recovery?["reason"] as? String == "requested", "\(first)")
                watch.send(SIGTERM)
                try await watch.waitForExit()
                let stderr = try watch.errorOutput()
                #expect(watch.process.terminationStatus == 0, "\(stderr)")
                #expect(try watch.output().split(separator: "\n").last == #"{"state":"stopped"}"#)
            }
        }
    }
}
