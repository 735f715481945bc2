import Foundation
import RecordKeeper
import TestHelpers
import Testing

/// `sync`, `conflicts` and `resolve` without a server: bad input exits 64 or 65 and changes
/// nothing, an unreachable server exits 69 and leaves the store as it was (not even created),
/// and the conflict commands need no server.
@Suite struct SyncCommandTests {
    /// Every file in the directory with its bytes (the runner removes its own output files).
    static func fingerprint(_ tool: ToolRunner) throws -> [String: Data] {
        var files: [String: Data] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: tool.directory.path) {
            files[name] = try Data(contentsOf: tool.directory.appendingPathComponent(name))
        }
        return files
    }

    /// A runner whose environment names no default sync server.
    static func runner(_ directory: URL) -> ToolRunner {
        ToolRunner(directory: directory, environment: ["RECORDKEEPER_SYNC_SERVER": ""])
    }

    @Test func `sync without a server, and with none in the environment, is a usage error`() async throws {
        try await withTemporaryDirectory { directory in
            let tool = Self.runner(directory)
            let result = try await tool.runOnStore(["sync", "--space", "s", "--collections", "notes"])
            #expect(result.status == 64)
            #expect(result.stderr.contains("--server CONNINFO"))
            #expect(result.stderr.contains("RECORDKEEPER_SYNC_SERVER"))
            #expect(try Self.fingerprint(tool).isEmpty, "no store is created")
        }
    }

    @Test(arguments: [
        (["--space", "s"], "--collections"),
        (["--collections", "notes"], "--space"),
        ([], "--space SPACE and --collections"),
        (["--space", "", "--collections", "notes"], "--space must not be empty"),
        (["--space", "s", "--collections", "notes,,todos"], "none of them empty"),
        (["--space", "s", "--collections", "notes,notes"], "twice"),
    ])
    func `a first sync with bad or missing settings exits 65 and changes nothing`(
        arguments: [String], message: String
    ) async throws {
        try await withTemporaryDirectory { directory in
            let tool = Self.runner(directory)
            #expect(try await tool.runOnStore(["put", "notes", "a", "1"]).status == 0)
            let before = try Self.fingerprint(tool)
            // The server is checked last: these fail before anything tries to reach it.
            let result = try await tool.runOnStore(["sync", "--server", try TestPostgres.unreachable()] + arguments)
            #expect(result.status == 65, "\(result.stderr)")
            #expect(result.stderr.contains(message), "\(result.stderr)")
            #expect(result.stderr.contains("nothing was changed"))
            #expect(result.stdout.isEmpty)
            #expect(try Self.fingerprint(tool) == before)
        }
    }

    @Test(arguments: ["hots=db.internal", "postgresql://[::1", "host='unterminated"])
    func `a connection string libpq cannot read is a configuration error, not an unreachable server`(
        conninfo: String
    ) async throws {
        try await withTemporaryDirectory { directory in
            let tool = Self.runner(directory)
            let result = try await tool.runOnStore(["sync", "--server", conninfo, "--space", "s", "--collections", "notes"])
            #expect(result.status == 78, "\(result.stderr)")
            #expect(result.stderr.contains("--server is not a connection string libpq can read"), "\(result.stderr)")
            #expect(try Self.fingerprint(tool).isEmpty)
            let fromEnvironment = try await ToolRunner(directory: directory, environment: ["RECORDKEEPER_SYNC_SERVER": conninfo])
                .runOnStore(["sync"])
            #expect(fromEnvironment.status == 78)
            #expect(fromEnvironment.stderr.contains("RECORDKEEPER_SYNC_SERVER is not a connection string"))
        }
    }

    @Test func `recover on a store that never synced, or a bad timeout, is refused before any server`() async throws {
        try await withTemporaryDirectory { directory in
            let tool = Self.runner(directory)
            #expect(try await tool.runOnStore(["put", "notes", "a", "1"]).status == 0)
            let before = try Self.fingerprint(tool)
            let recover = try await tool.runOnStore([
                "sync", "--server", try TestPostgres.unreachable(), "--space", "s", "--collections", "notes", "--recover",
            ])
            #expect(recover.status == 65, "\(recover.stderr)")
            #expect(recover.stderr.contains("does not sync yet: --recover has nothing to recover"), "\(recover.stderr)")
            for bad in ["0", "-3", "soon"] {
                let timeout = try await tool.runOnStore(["sync", "--server", try TestPostgres.unreachable(), "--timeout", bad])
                #expect(timeout.status == 64, "\(timeout.stderr)")
                #expect(timeout.stderr.contains("--timeout needs a number of seconds"))
            }
            #expect(try Self.fingerprint(tool) == before)
        }
    }

    @Test func `a first sync without collections does not create a store`() async throws {
        try await withTemporaryDirectory { directory in
            let tool = Self.runner(directory)
            let result = try await tool.runOnStore(["sync", "--server", try TestPostgres.unreachable(), "--space", "s"])
            #expect(result.status == 65)
            #expect(try Self.fingerprint(tool).isEmpty)
        }
    }

    @Test func `an unreachable server exits 69 and leaves the store untouched`() async throws {
        try await withTemporaryDirectory { directory in
            let tool = Self.runner(directory)
            #expect(try await tool.runOnStore(["put", "notes", "a", "1"]).status == 0)
            let before = try Self.fingerprint(tool)
            let result = try await tool.runOnStore([
                "sync", "--server", try TestPostgres.unreachable(), "--space", "s", "--collections", "notes",
            ])
            #expect(result.status == 69)
            #expect(result.stderr.contains("could not be reached"))
            #expect(result.stderr.contains("local data untouched"))
            #expect(result.stderr.split(separator: "\n").count == 1)
            #expect(try Self.fingerprint(tool) == before)
            let store = RecordStore(url: URL(fileURLWithPath: tool.storePath))
            #expect(try await store.syncStatus() == nil, "sync did not start")
            #expect(try await store.read("notes") == ["a": Data("1".utf8)])
            await store.close()

            // The environment's server is used when --server is not given; a missing store
            // stays missing.
            let fresh = ToolRunner(directory: directory, environment: ["RECORDKEEPER_SYNC_SERVER": try TestPostgres.unreachable()])
            let other = directory.appendingPathComponent("other.sqlite").path
            let viaEnvironment = try await fresh.run(["sync", "--space", "s", "--collections", "notes", "--store", other])
            #expect(viaEnvironment.status == 69)
            #expect(!FileManager.default.fileExists(atPath: other))
        }
    }

    @Test func `a store syncing one space refuses another, before reaching any server`() async throws {
        try await withTemporaryDirectory { directory in
            let tool = Self.runner(directory)
            let store = RecordStore(url: URL(fileURLWithPath: tool.storePath))
            try await store.put("notes", key: "a", data: Data("1".utf8))
            try await RecordSync(store: store, server: InMemorySyncServer())
                .start(space: "alice", collections: ["notes"])
            await store.close()
            let before = try Self.fingerprint(tool)

            let other = try await tool.runOnStore(["sync", "--server", try TestPostgres.unreachable(), "--space", "bob"])
            #expect(other.status == 65)
            #expect(other.stderr.contains(#"syncs space "alice", not "bob""#), "\(other.stderr)")
            #expect(try Self.fingerprint(tool) == before)

            // A later sync needs neither --space nor --collections: it goes on to the server.
            let later = try await tool.runOnStore(["sync", "--server", try TestPostgres.unreachable()])
            #expect(later.status == 69, "\(later.stderr)")
            #expect(later.stderr.contains("local operation(s) stay pending"), "\(later.stderr)")
            // --last-writer-wins needs the collections it applies to.
            let policy = try await tool.runOnStore(["sync", "--server", try TestPostgres.unreachable(), "--last-writer-wins"])
            #expect(policy.status == 65)
            #expect(policy.stderr.contains("--last-writer-wins applies to the collections named"), "\(policy.stderr)")
            #expect(try Self.fingerprint(tool) == before)
        }
    }

    @Test func `conflicts of a store that never synced is empty, and resolve names what is missing`() async throws {
        try await withTemporaryDirectory { directory in
            let tool = Self.runner(directory)
            #expect(try await tool.runOnStore(["conflicts"]).status == 66, "no store: nothing is created")
            #expect(try Self.fingerprint(tool).isEmpty)
            #expect(try await tool.runOnStore(["put", "notes", "a", "1"]).status == 0)
            let before = try Self.fingerprint(tool)

            let text = try await tool.runOnStore(["conflicts"])
            #expect(text.status == 0, "\(text.stderr)")
            #expect(text.output.isEmpty)
            let json = try await tool.runOnStore(["conflicts", "--json"])
            #expect(json.status == 0)
            #expect(json.output == "{\"conflicts\":[]}\n")

            let noKeep = try await tool.runOnStore(["resolve", "notes", "a"])
            #expect(noKeep.status == 64)
            #expect(noKeep.stderr.contains("resolve needs --keep local, --keep server or --merged VALUE"))
            let badKeep = try await tool.runOnStore(["resolve", "notes", "a", "--keep", "mine"])
            #expect(badKeep.status == 64)
            let missing = try await tool.runOnStore(["resolve", "notes", "a", "--keep", "server"])
            #expect(missing.status == 66)
            #expect(missing.stderr.contains(#"no sync conflict for key "a" in collection "notes""#), "\(missing.stderr)")
            #expect(try Self.fingerprint(tool) == before)
        }
    }

    @Test func `help describes the sync commands`() async throws {
        try await withTemporaryDirectory { directory in
            let tool = Self.runner(directory)
            let help = try await tool.run(["--help"]).output
            for command in ["sync", "conflicts", "resolve"] { #expect(help.contains("  \(command) ")) }
            let sync = try await tool.run(["sync", "--help"])
            #expect(sync.status == 0)
            #expect(sync.output.contains("--server CONNINFO"))
            #expect(sync.output.contains("RECORDKEEPER_SYNC_SERVER"))
            #expect(try await tool.run(["help", "resolve"]).output.contains("--keep local|server"))
        }
    }
}
