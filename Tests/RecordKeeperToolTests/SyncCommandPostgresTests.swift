import Foundation
import RecordKeeper
import RecordKeeperPostgres
import TestHelpers
import Testing

/// The sync commands against a real PostgreSQL (scripts/with-postgres.sh), each test in a
/// private PostgreSQL schema named through the conninfo's `options=-csearch_path=…`: two stores
/// synced only through the tool converge, a concurrent edit is listed by `conflicts` and
/// cleared by `resolve`, and the resolution reaches the other store.
@Suite(.enabled(if: TestPostgres.enabled, TestPostgres.disabledReason), .timeLimit(.minutes(5)))
struct SyncCommandPostgresTests {
    /// Two runners on two stores in one directory.
    private static func devices(_ directory: URL) throws -> (ToolRunner, ToolRunner) {
        let a = directory.appendingPathComponent("a", isDirectory: true)
        let b = directory.appendingPathComponent("b", isDirectory: true)
        try FileManager.default.createDirectory(at: a, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: b, withIntermediateDirectories: true)
        return (ToolRunner(directory: a), ToolRunner(directory: b))
    }

    private static func values(_ tool: ToolRunner, _ collection: String) async throws -> [String] {
        let result = try await tool.runOnStore(["list", collection, "--values"])
        #expect(result.status == 0, "\(result.stderr)")
        // key, size, version, value: the version is local to each store.
        return result.outputLines.filter { !$0.isEmpty }.map { line in
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false)
            return fields.count == 4 ? "\(fields[0])=\(fields[3])" : "unexpected line: \(line)"
        }
    }

    private static func ok(_ result: ToolResult, sourceLocation: SourceLocation = #_sourceLocation) -> ToolResult {
        #expect(result.status == 0, "\(result.stderr)", sourceLocation: sourceLocation)
        return result
    }

    @Test func `two stores synced through the tool converge`() async throws {
        try await TestPostgres.withPrivateSchema(prefix: "rk_tool") { conninfo, _ in
            try await withTemporaryDirectory { directory in
                let (a, b) = try Self.devices(directory)
                _ = Self.ok(try await a.runOnStore(["put", "notes", "one", "1"]))
                _ = Self.ok(try await a.runOnStore(["put", "notes", "two", "2"]))
                _ = Self.ok(try await a.runOnStore(["put", "todos", "t", #""milk""#, "--json"]))
                let first = Self.ok(try await a.runOnStore(
                    ["sync", "--server", conninfo, "--space", "home", "--collections", "notes,todos"]))
                #expect(first.outputLines.first == #"started syncing "notes", "todos" with space "home""#)
                #expect(first.output.contains("pushed"))
                #expect(first.output.contains("0 new conflict(s)"))

                // A new store joins the space through RECORDKEEPER_SYNC_SERVER and gets everything.
                let viaEnvironment = ToolRunner(directory: b.directory, environment: ["RECORDKEEPER_SYNC_SERVER": conninfo])
                let joined = Self.ok(try await viaEnvironment.runOnStore(["sync", "--space", "home", "--collections", "notes,todos"]))
                #expect(joined.output.contains("pulled 3 change(s)"), "\(joined.output)")
                #expect(try await Self.values(b, "notes") == ["one=1", "two=2"])
                #expect(try await Self.values(b, "todos") == [#"t="milk""#])

                // Edits and a deletion on b reach a; later syncs need only the server.
                _ = Self.ok(try await b.runOnStore(["put", "notes", "three", "3"]))
                _ = Self.ok(try await b.runOnStore(["delete", "notes", "one"]))
                let pushed = Self.ok(try await b.runOnStore(["sync", "--server", conninfo]))
                #expect(pushed.output.contains("pushed 2 operation(s) (2 change(s))"), "\(pushed.output)")
                let pulled = Self.ok(try await a.runOnStore(["sync", "--server", conninfo, "--space", "home"]))
                #expect(pulled.output.contains("pulled 2 change(s)"), "\(pulled.output)")
                #expect(try await Self.values(a, "notes") == ["three=3", "two=2"])
                #expect(try await Self.values(a, "notes") == (try Self.values(b, "notes")))

                // Nothing pending: a sync again pushes and pulls nothing.
                let idle = Self.ok(try await a.runOnStore(["sync", "--server", conninfo]))
                #expect(idle.output.contains("pushed 0 operation(s) (0 change(s)), pulled 0 change(s)"), "\(idle.output)")
            }
        }
    }

    @Test func `conflicts lists a concurrent edit and resolve clears it everywhere`() async throws {
        try await TestPostgres.withPrivateSchema(prefix: "rk_tool") { conninfo, _ in
            try await withTemporaryDirectory { directory in
                let (a, b) = try Self.devices(directory)
                _ = Self.ok(try await a.runOnStore(["put", "notes", "today", #""draft""#]))
                _ = Self.ok(try await a.runOnStore(["sync", "--server", conninfo, "--space", "home", "--collections", "notes"]))
                _ = Self.ok(try await b.runOnStore(["sync", "--server", conninfo, "--space", "home", "--collections", "notes"]))

                // Both edit one record; a pushes first.
                _ = Self.ok(try await a.runOnStore(["put", "notes", "today", #""from a""#]))
                _ = Self.ok(try await b.runOnStore(["put", "notes", "today", #""from b""#]))
                _ = Self.ok(try await a.runOnStore(["sync", "--server", conninfo]))
                let clash = Self.ok(try await b.runOnStore(["sync", "--server", conninfo]))
                #expect(clash.output.contains("1 new conflict(s)"), "\(clash.output)")
                let conflictLines = clash.outputLines.filter { $0.hasPrefix("conflict\t") }
                #expect(conflictLines.count == 1)
                #expect(conflictLines.first?.hasPrefix("conflict\tnotes\ttoday\tserver version ") == true)

                // b took the server's value and keeps its own in the conflict.
                #expect(try await Self.values(b, "notes") == [#"today="from a""#])
                let listed = Self.ok(try await b.runOnStore(["conflicts"]))
                #expect(listed.outputLines.count == 1)
                let fields = listed.outputLines.first?.split(separator: "\t").map(String.init) ?? []
                #expect(fields.count == 5)
                #expect(fields.first == "notes" && fields.dropFirst().first == "today")
                #expect(Int64(fields.dropFirst(2).first ?? "") != nil, "a server version")
                #expect(fields.suffix(2) == [#""from b""#, #""from a""#])
                let json = Self.ok(try await b.runOnStore(["conflicts", "--json"]))
                let document = try #require(try JSONSerialization.jsonObject(with: json.stdout) as? [String: Any])
                let entries = try #require(document["conflicts"] as? [[String: Any]])
                #expect(entries.count == 1)
                #expect(entries.first?["collection"] as? String == "notes")
                #expect(entries.first?["key"] as? String == "today")
                #expect((entries.first?["local"] as? [String: Any])?["value"] as? String == "from b")
                #expect((entries.first?["server"] as? [String: Any])?["value"] as? String == "from a")
                #expect(entries.first?["serverVersion"] as? Int != nil)
                // Listing conflicts never writes.
                let before = try SyncCommandTests.fingerprint(b)
                _ = Self.ok(try await b.runOnStore(["conflicts"]))
                #expect(try SyncCommandTests.fingerprint(b) == before)

                // Keeping the local value writes it back; the next syncs carry it to a.
                let resolved = Self.ok(try await b.runOnStore(["resolve", "notes", "today", "--keep", "local"]))
                #expect(resolved.output.contains("kept the local value"))
                #expect(Self.ok(try await b.runOnStore(["conflicts"])).output.isEmpty)
                #expect(try await Self.values(b, "notes") == [#"today="from b""#])
                let after = Self.ok(try await b.runOnStore(["sync", "--server", conninfo]))
                #expect(after.output.contains("0 new conflict(s)"), "\(after.output)")
                _ = Self.ok(try await a.runOnStore(["sync", "--server", conninfo]))
                #expect(try await Self.values(a, "notes") == [#"today="from b""#])
                #expect(Self.ok(try await a.runOnStore(["conflicts"])).output.isEmpty)

                // Keeping the server's value: the record stays as the server has it.
                _ = Self.ok(try await a.runOnStore(["put", "notes", "today", #""a again""#]))
                _ = Self.ok(try await b.runOnStore(["put", "notes", "today", #""b again""#]))
                _ = Self.ok(try await b.runOnStore(["sync", "--server", conninfo]))
                let second = Self.ok(try await a.runOnStore(["sync", "--server", conninfo]))
                #expect(second.output.contains("1 new conflict(s)"), "\(second.output)")
                _ = Self.ok(try await a.runOnStore(["resolve", "notes", "today", "--keep", "server"]))
                #expect(Self.ok(try await a.runOnStore(["conflicts", "--json"])).output == "{\"conflicts\":[]}\n")
                _ = Self.ok(try await a.runOnStore(["sync", "--server", conninfo]))
                #expect(try await Self.values(a, "notes") == [#"today="b again""#])
                #expect(try await Self.values(b, "notes") == [#"today="b again""#])
            }
        }
    }

    @Test func `sync --json says what it pushed, pulled and found, and resolve --merged pushes the merged value`()
        async throws
    {
        try await TestPostgres.withPrivateSchema(prefix: "rk_tool") { conninfo, _ in
            try await withTemporaryDirectory { directory in
                let (a, b) = try Self.devices(directory)
                func document(_ result: ToolResult) throws -> [String: Any] {
                    #expect(result.stdout.last == 0x0A)
                    return try #require(try JSONSerialization.jsonObject(with: result.stdout) as? [String: Any])
                }
                _ = Self.ok(try await a.runOnStore(["put", "notes", "today", #"{"text":"draft"}"#, "--json"]))
                _ = Self.ok(try await a.runOnStore(["put", "notes", "later", "2"]))
                let first = try document(Self.ok(try await a.runOnStore(
                    ["sync", "--server", conninfo, "--space", "home", "--collections", "notes", "--json"])))
                #expect(first["space"] as? String == "home")
                #expect((first["device"] as? String)?.isEmpty == false)
                #expect(first["started"] as? [String] == ["notes"])
                #expect(first["policyChanged"] as? [String] == [])
                #expect(first["policy"] as? String == "report")
                #expect(first["recovery"] is NSNull)
                #expect(first["pushed"] as? [String: Int] == ["operations": 1, "changes": 2])
                let firstPulled = try #require(first["pulled"] as? [String: Any])
                #expect(firstPulled["changes"] as? Int == 0)
                #expect(firstPulled["resynced"] as? Bool == false)
                #expect(firstPulled["removedAsCompacted"] as? Int == 0)
                #expect((first["conflicts"] as? [String: Any])?["new"] as? [Any] != nil)
                #expect((first["conflicts"] as? [String: Any])?["unresolved"] as? Int == 0)
                #expect(first["pending"] as? Int == 0)
                #expect(first["cursor"] as? NSDictionary == ["counter": 1, "position": NSNull()])
                _ = Self.ok(try await b.runOnStore(
                    ["sync", "--server", conninfo, "--space", "home", "--collections", "notes", "--quiet"]))

                // A concurrent edit: b's sync reports the conflict with both sides.
                _ = Self.ok(try await a.runOnStore(["put", "notes", "today", #"{"text":"from a"}"#, "--json"]))
                _ = Self.ok(try await b.runOnStore(["put", "notes", "today", #"{"text":"from b"}"#, "--json"]))
                _ = Self.ok(try await a.runOnStore(["sync", "--server", conninfo]))
                let clash = try document(Self.ok(try await b.runOnStore(["sync", "--server", conninfo, "--json"])))
                #expect(clash["started"] as? [String] == [])
                #expect(clash["pushed"] as? [String: Int] == ["operations": 1, "changes": 1])
                let conflicts = try #require(clash["conflicts"] as? [String: Any])
                #expect(conflicts["unresolved"] as? Int == 1)
                let new = try #require(conflicts["new"] as? [[String: Any]])
                #expect(new.count == 1)
                #expect(new.first?["collection"] as? String == "notes" && new.first?["key"] as? String == "today")
                #expect(new.first?["serverVersion"] as? Int == 2)
                #expect((new.first?["local"] as? [String: Any])?["value"] as? [String: String] == ["text": "from b"])
                #expect((new.first?["server"] as? [String: Any])?["value"] as? [String: String] == ["text": "from a"])
                #expect((clash["cursor"] as? [String: Any])?["counter"] as? Int == 2)

                // Bad input to resolve changes nothing.
                let before = try SyncCommandTests.fingerprint(b)
                for (arguments, status) in [
                    (["--merged", "x", "--keep", "local"], 64), (["--json"], 64), (["--keep", "local", "--base64"], 64),
                    (["--merged", "{not json", "--json"], 65), (["--merged", "%%%", "--base64"], 65),
                    (["--merged", "x", "--json", "--base64"], 64),
                ] {
                    let refused = try await b.runOnStore(["resolve", "notes", "today"] + arguments)
                    #expect(refused.status == Int32(status), "\(arguments): \(refused.stderr)")
                }
                #expect(try SyncCommandTests.fingerprint(b) == before)

                // A merged value is written and pushed, and reaches a.
                let merged = Self.ok(try await b.runOnStore(
                    ["resolve", "notes", "today", "--merged", #"{ "text": "from a and b" }"#, "--json"]))
                #expect(merged.output.contains("wrote the merged value"), "\(merged.output)")
                #expect(Self.ok(try await b.runOnStore(["conflicts"])).output.isEmpty)
                #expect(try await Self.values(b, "notes") == [#"later=2"#, #"today={"text":"from a and b"}"#])
                let pushed = try document(Self.ok(try await b.runOnStore(["sync", "--server", conninfo, "--json"])))
                #expect(pushed["pushed"] as? [String: Int] == ["operations": 1, "changes": 1])
                #expect((pushed["conflicts"] as? [String: Any])?["unresolved"] as? Int == 0)
                let pulled = try document(Self.ok(try await a.runOnStore(["sync", "--server", conninfo, "--json"])))
                #expect((pulled["pulled"] as? [String: Any])?["changes"] as? Int == 1)
                #expect(try await Self.values(a, "notes") == (try Self.values(b, "notes")))
            }
        }
    }

    @Test func `a deletion meeting an edit is listed as deleted, and keeping it deletes the record everywhere`() async throws {
        try await TestPostgres.withPrivateSchema(prefix: "rk_tool") { conninfo, _ in
            try await withTemporaryDirectory { directory in
                let (a, b) = try Self.devices(directory)
                _ = Self.ok(try await a.runOnStore(["put", "notes", "today", "1"]))
                _ = Self.ok(try await a.runOnStore(["sync", "--server", conninfo, "--space", "s", "--collections", "notes"]))
                _ = Self.ok(try await b.runOnStore(["sync", "--server", conninfo, "--space", "s", "--collections", "notes"]))
                _ = Self.ok(try await a.runOnStore(["put", "notes", "today", "2"]))
                _ = Self.ok(try await b.runOnStore(["delete", "notes", "today"]))
                _ = Self.ok(try await a.runOnStore(["sync", "--server", conninfo]))
                #expect(Self.ok(try await b.runOnStore(["sync", "--server", conninfo])).output.contains("1 new conflict(s)"))

                let line = Self.ok(try await b.runOnStore(["conflicts"])).outputLines
                #expect(line.count == 1)
                #expect(line.first?.hasPrefix("notes\ttoday\t") == true)
                #expect(line.first?.hasSuffix("\t(deleted)\t2") == true, "\(line)")
                let json = Self.ok(try await b.runOnStore(["conflicts", "--json"])).output
                #expect(json.contains(#""local":{"deleted":true},"server":{"value":2}"#), "\(json)")

                _ = Self.ok(try await b.runOnStore(["resolve", "notes", "today", "--keep", "local"]))
                _ = Self.ok(try await b.runOnStore(["sync", "--server", conninfo]))
                _ = Self.ok(try await a.runOnStore(["sync", "--server", conninfo]))
                #expect(try await Self.values(a, "notes").isEmpty)
                #expect(try await Self.values(b, "notes").isEmpty)
            }
        }
    }

    @Test func `last writer wins collections report no conflict`() async throws {
        try await TestPostgres.withPrivateSchema(prefix: "rk_tool") { conninfo, _ in
            try await withTemporaryDirectory { directory in
                let (a, b) = try Self.devices(directory)
                for tool in [a, b] {
                    _ = Self.ok(try await tool.runOnStore(
                        ["sync", "--server", conninfo, "--space", "s", "--collections", "cursor", "--last-writer-wins"]))
                }
                _ = Self.ok(try await a.runOnStore(["put", "cursor", "pos", "1"]))
                _ = Self.ok(try await b.runOnStore(["put", "cursor", "pos", "2"]))
                _ = Self.ok(try await a.runOnStore(["sync", "--server", conninfo]))
                let later = Self.ok(try await b.runOnStore(["sync", "--server", conninfo]))
                #expect(later.output.contains("0 new conflict(s)"), "\(later.output)")
                _ = Self.ok(try await a.runOnStore(["sync", "--server", conninfo]))
                #expect(try await Self.values(a, "cursor") == ["pos=2"])
                #expect(try await Self.values(b, "cursor") == ["pos=2"])

                // A later sync sets the policy back for the collections it names.
                let back = Self.ok(try await a.runOnStore(["sync", "--server", conninfo, "--collections", "cursor"]))
                #expect(back.outputLines.first == #"policy of "cursor" set to report"#)
                _ = Self.ok(try await a.runOnStore(["put", "cursor", "pos", "3"]))
                _ = Self.ok(try await b.runOnStore(["put", "cursor", "pos", "4"]))
                _ = Self.ok(try await b.runOnStore(["sync", "--server", conninfo]))
                let reported = Self.ok(try await a.runOnStore(["sync", "--server", conninfo]))
                #expect(reported.output.contains("1 new conflict(s)"), "\(reported.output)")
            }
        }
    }

    @Test func `a store restored from a backup as docs/BACKUP.md says recovers with sync --recover and loses nothing`()
        async throws
    {
        try await TestPostgres.withPrivateSchema(prefix: "rk_tool") { conninfo, _ in
            try await withTemporaryDirectory { directory in
                let (a, b) = try Self.devices(directory)
                _ = Self.ok(try await a.runOnStore(["put", "notes", "today", #""1""#]))
                _ = Self.ok(try await a.runOnStore(["sync", "--server", conninfo, "--space", "home", "--collections", "notes"]))
                _ = Self.ok(try await b.runOnStore(["sync", "--server", conninfo, "--space", "home", "--collections", "notes"]))
                // A change not yet synced when the backup is taken; the device goes on after it.
                _ = Self.ok(try await a.runOnStore(["put", "notes", "draft", #""d""#]))
                let backup = directory.appendingPathComponent("backup.sqlite").path
                _ = Self.ok(try await a.runOnStore(["backup", backup]))
                _ = Self.ok(try await a.runOnStore(["put", "notes", "today", #""after the backup""#]))
                _ = Self.ok(try await a.runOnStore(["sync", "--server", conninfo]))

                // Restore (docs/BACKUP.md): nothing has the store open; remove its -wal and -shm
                // files; move the copy to the store's path; sync with --recover.
                for suffix in ["-wal", "-shm"] where FileManager.default.fileExists(atPath: a.storePath + suffix) {
                    try FileManager.default.removeItem(atPath: a.storePath + suffix)
                }
                try FileManager.default.removeItem(atPath: a.storePath)
                try FileManager.default.moveItem(atPath: backup, toPath: a.storePath)
                #expect(try await Self.values(a, "notes") == [#"draft="d""#, #"today="1""#])
                // Edited before syncing, on the restored older value.
                _ = Self.ok(try await a.runOnStore(["put", "notes", "today", #""restored edit""#]))
                let recovered = Self.ok(try await a.runOnStore(["sync", "--server", conninfo, "--recover"]))
                #expect(recovered.outputLines.first?.hasPrefix("recovered: it syncs as device ") == true, "\(recovered.output)")
                #expect(recovered.output.contains("1 new conflict(s)"), "\(recovered.output)")
                #expect(try await Self.values(a, "notes") == [#"draft="d""#, #"today="after the backup""#])
                let conflict = Self.ok(try await a.runOnStore(["conflicts"])).outputLines
                #expect(conflict.count == 1)
                #expect(conflict.first?.hasSuffix("\t\"restored edit\"\t\"after the backup\"") == true, "\(conflict)")

                // Both keep syncing: keeping the restored edit reaches the other device.
                _ = Self.ok(try await a.runOnStore(["resolve", "notes", "today", "--keep", "local"]))
                _ = Self.ok(try await a.runOnStore(["sync", "--server", conninfo]))
                _ = Self.ok(try await b.runOnStore(["sync", "--server", conninfo]))
                #expect(try await Self.values(b, "notes") == [#"draft="d""#, #"today="restored edit""#])
                #expect(try await Self.values(a, "notes") == (try Self.values(b, "notes")))
            }
        }
    }

    @Test func `a copy made with backup syncs as a new device and says so`() async throws {
        try await TestPostgres.withPrivateSchema(prefix: "rk_tool") { conninfo, _ in
            try await withTemporaryDirectory { directory in
                let (a, b) = try Self.devices(directory)
                _ = Self.ok(try await a.runOnStore(["put", "notes", "shared", "1"]))
                _ = Self.ok(try await a.runOnStore(["sync", "--server", conninfo, "--space", "home", "--collections", "notes"]))
                _ = Self.ok(try await a.runOnStore(["backup", b.storePath]))
                _ = Self.ok(try await a.runOnStore(["put", "notes", "shared", "2"]))
                _ = Self.ok(try await b.runOnStore(["put", "notes", "shared", "3"]))
                _ = Self.ok(try await a.runOnStore(["sync", "--server", conninfo]))
                let copy = Self.ok(try await b.runOnStore(["sync", "--server", conninfo]))
                #expect(copy.output.contains("this store file is a copy of another device's store"), "\(copy.output)")
                #expect(copy.output.contains("1 new conflict(s)"), "\(copy.output)")
                #expect(try await Self.values(b, "notes") == ["shared=2"])
                #expect(Self.ok(try await b.runOnStore(["conflicts"])).outputLines.first?.hasSuffix("\t3\t2") == true)
                let again = Self.ok(try await b.runOnStore(["sync", "--server", conninfo]))
                #expect(!again.output.contains("copy"), "bound to its file now: \(again.output)")
            }
        }
    }

    @Test func `settings and credentials the server refuses exit 78 and 77, never 69`() async throws {
        try await TestPostgres.withPrivateSchema(prefix: "rk_tool") { conninfo, _ in
            try await withTemporaryDirectory { directory in
                let (a, _) = try Self.devices(directory)
                _ = Self.ok(try await a.runOnStore(["put", "notes", "one", "1"]))
                let before = try SyncCommandTests.fingerprint(a)
                let database = try await a.runOnStore([
                    "sync", "--server", conninfo + " dbname=recordkeeper_no_such_database", "--space", "s",
                    "--collections", "notes",
                ])
                #expect(database.status == 78, "\(database.stderr)")
                #expect(database.stderr.contains("settings are wrong"), "\(database.stderr)")
                let role = try await a.runOnStore([
                    "sync", "--server", conninfo + " user=recordkeeper_no_such_role", "--space", "s", "--collections",
                    "notes",
                ])
                #expect(role.status == 77, "\(role.stderr)")
                #expect(role.stderr.contains("refused the credentials"), "\(role.stderr)")
                let tls = try await a.runOnStore([
                    "sync", "--server", conninfo + " sslmode=require", "--space", "s", "--collections", "notes",
                ])
                #expect(tls.status == 78, "\(tls.stderr)")
                #expect(try SyncCommandTests.fingerprint(a) == before, "the store is untouched")
            }
        }
    }

    @Test func `server notices reach stderr as the tool's own lines`() async throws {
        try await TestPostgres.withPrivateSchema(prefix: "rk_tool") { conninfo, _ in
            try await withTemporaryDirectory { directory in
                let (a, _) = try Self.devices(directory)
                _ = Self.ok(try await a.runOnStore(["put", "notes", "one", "1"]))
                _ = Self.ok(try await a.runOnStore(["sync", "--server", conninfo, "--space", "home", "--collections", "notes"]))
                // A trigger in the test's schema raises a notice for every record the server stores.
                let admin = try await PostgresConnection(conninfo: conninfo)
                try await admin.transaction { connection in
                    try connection.execute(
                        """
                        CREATE FUNCTION rk_notice() RETURNS trigger LANGUAGE plpgsql AS $$
                        BEGIN RAISE NOTICE 'hello from the trigger'; RETURN NEW; END $$
                        """)
                    try connection.execute(
                        "CREATE TRIGGER rk_notice BEFORE INSERT OR UPDATE ON recordkeeper_sync_records FOR EACH ROW EXECUTE FUNCTION rk_notice()")
                }
                _ = Self.ok(try await a.runOnStore(["put", "notes", "two", "2"]))
                let synced = Self.ok(try await a.runOnStore(["sync", "--server", conninfo]))
                let lines = synced.stderr.split(separator: "\n").map(String.init)
                #expect(lines == ["recordkeeper: server NOTICE: hello from the trigger"], "\(synced.stderr)")
            }
        }
    }

    @Test func `a store whose cursor the server compacted past resyncs and says so`() async throws {
        try await TestPostgres.withPrivateSchema(prefix: "rk_tool") { conninfo, _ in
            try await withTemporaryDirectory { directory in
                let (a, b) = try Self.devices(directory)
                _ = Self.ok(try await a.runOnStore(["put", "notes", "one", "1"]))
                _ = Self.ok(try await a.runOnStore(["put", "notes", "two", "2"]))
                _ = Self.ok(try await a.runOnStore(["sync", "--server", conninfo, "--space", "home", "--collections", "notes"]))
                _ = Self.ok(try await b.runOnStore(["sync", "--server", conninfo, "--space", "home", "--collections", "notes"]))
                _ = Self.ok(try await a.runOnStore(["delete", "notes", "one"]))
                _ = Self.ok(try await a.runOnStore(["sync", "--server", conninfo]))

                // Everything the server holds of the space was received, and its cursors handed
                // out, forty days ago; then the server compacts.
                let connection = try await PostgresConnection(conninfo: conninfo)
                try await connection.transaction { connection in
                    try connection.execute(
                        "UPDATE recordkeeper_sync_operations SET received_at = received_at - interval '40 days'")
                    try connection.execute("UPDATE recordkeeper_sync_cursors SET bucket = bucket - 40 * 24")
                }
                let server = try await PostgresSyncServer.connect(conninfo)
                #expect(try await server.compact(space: "home", olderThan: .seconds(30 * 86_400)).deletedTombstones == 1)

                let resynced = Self.ok(try await b.runOnStore(["sync", "--server", conninfo]))
                #expect(resynced.output.contains("resynced: the server had compacted past this store's cursor"), "\(resynced.output)")
                #expect(resynced.output.contains("removed 1 record(s) deleted meanwhile"), "\(resynced.output)")
                #expect(try await Self.values(b, "notes") == ["two=2"])
            }
        }
    }
}
