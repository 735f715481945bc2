import Foundation
import RecordKeeper
import TestHelpers
import Testing

/// `recordkeeper sync --server http://… --token-file F` against a relay process: stores
/// converge through it, and a token that does not fit is refused with nothing changed.
@Suite(.enabled(if: TestPostgres.enabled, TestPostgres.disabledReason), .timeLimit(.minutes(10)))
struct SyncToolThroughRelayTests {
    /// Runs `recordkeeper --store STORE arguments` to its end.
    private func tool(
        _ store: URL, _ arguments: [String], environment: [String: String?] = [:]
    ) async throws -> ChildProcess.Result {
        let executable = try #require(BuildProducts.executable(named: "recordkeeper", override: "RECORDKEEPER_BINARY"))
        var changes: [String: String?] = ["RECORDKEEPER_SYNC_SERVER": nil, "RECORDKEEPER_SYNC_TOKEN": nil, "RECORDKEEPER_STORE": nil]
        for (name, value) in environment { changes[name] = value }
        let directory = store.deletingLastPathComponent()
        return try await ChildProcess.run(executable, ["--store", store.path] + arguments, in: directory, environment: changes)
    }

    private func tokenFile(_ directory: URL, _ name: String, _ token: String) throws -> URL {
        let url = directory.appendingPathComponent(name)
        try Data((token + "\n").utf8).write(to: url)
        return url
    }

    @Test func `two stores synced through the relay by the tool converge, and conflicts are listed`() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveRelay(in: directory) { relay in
                let (phone, laptop) = (directory.appendingPathComponent("phone.sqlite"), directory.appendingPathComponent("laptop.sqlite"))
                let token = try LiveRelay.token("alice")
                let file = try tokenFile(directory, "token", token)
                let server = relay.url.absoluteString
                #expect(try await tool(phone, ["put", "notes", "today", "\"milk\""]).status == 0)
                let first = try await tool(phone, ["sync", "--server", server, "--token-file", file.path, "--collections", "notes"])
                #expect(first.status == 0, "\(first.stderr)")
                #expect(first.output.contains("started syncing \"notes\" with space \"alice\""), "\(first.output)")
                // The token from the environment, and --space equal to the token's.
                let second = try await tool(
                    laptop, ["sync", "--server", server, "--space", "alice", "--collections", "notes"],
                    environment: ["RECORDKEEPER_SYNC_TOKEN": token])
                #expect(second.status == 0, "\(second.stderr)")
                #expect(try await tool(laptop, ["get", "notes", "today"]).output == "\"milk\"\n")

                #expect(try await tool(phone, ["put", "notes", "today", "\"eggs\""]).status == 0)
                #expect(try await tool(laptop, ["put", "notes", "today", "\"bread\""]).status == 0)
                #expect(try await tool(phone, ["sync", "--server", server, "--token-file", file.path]).status == 0)
                let conflicted = try await tool(laptop, ["sync", "--server", server, "--token-file", file.path])
                #expect(conflicted.status == 0, "\(conflicted.stderr)")
                #expect(conflicted.output.contains("conflict\tnotes\ttoday"), "\(conflicted.output)")
                #expect(try await tool(laptop, ["conflicts"]).output.contains("notes\ttoday"))
            }
        }
    }

    @Test func `a read-only token pulls when nothing is pending, and is refused up front when something is`() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveRelay(in: directory) { relay in
                let server = relay.url.absoluteString
                let writer = try tokenFile(directory, "writer", try LiveRelay.token("alice"))
                let reader = try tokenFile(directory, "reader", try LiveRelay.token("alice", readOnly: true))
                let phone = directory.appendingPathComponent("phone.sqlite")
                #expect(try await tool(phone, ["put", "notes", "today", "\"milk\""]).status == 0)
                let pushed = try await tool(phone, ["sync", "--server", server, "--token-file", writer.path, "--collections", "notes"])
                #expect(pushed.status == 0, "\(pushed.stderr)")

                // Nothing pending: a pull-only sync.
                let kiosk = directory.appendingPathComponent("kiosk.sqlite")
                let pulled = try await tool(kiosk, ["sync", "--server", server, "--token-file", reader.path, "--collections", "notes"])
                #expect(pulled.status == 0, "\(pulled.stderr)")
                #expect(pulled.output.contains("pulled 1 change(s)"), "\(pulled.output)")
                #expect(try await tool(kiosk, ["get", "notes", "today"]).output == "\"milk\"\n")

                // Something pending: exit 77 naming the read-only token, before anything changes.
                #expect(try await tool(kiosk, ["put", "notes", "today", "\"eggs\""]).status == 0)
                let before = try Data(contentsOf: kiosk)
                let refused = try await tool(
                    kiosk, ["sync", "--server", server, "--token-file", reader.path, "--collections", "notes,more"])
                #expect(refused.status == 77, "\(refused.stderr)")
                #expect(refused.stderr.contains("read-only"), "\(refused.stderr)")
                #expect(refused.stderr.contains("1 local operation(s) stay pending"), "\(refused.stderr)")
                #expect(try Data(contentsOf: kiosk) == before, "not even the new collection is started")

                // Nothing pending, but a collection to start holds a record here: starting it
                // would queue it for upload. Refused before the store is touched, too (a trial
                // found the collection started and its record pending, "local data untouched").
                let desk = directory.appendingPathComponent("desk.sqlite")
                #expect(try await tool(desk, ["put", "notes", "n", "1"]).status == 0)
                #expect(try await tool(desk, ["put", "tags", "t", "1"]).status == 0)
                #expect(try await tool(desk, ["sync", "--server", server, "--token-file", writer.path, "--collections", "notes"]).status == 0)
                let unchanged = try Data(contentsOf: desk)
                let starting = try await tool(desk, ["sync", "--server", server, "--token-file", reader.path, "--collections", "tags"])
                #expect(starting.status == 77, "\(starting.stderr)")
                #expect(starting.stderr.contains("starting to sync \"tags\" (1 record(s)) would queue those records"), "\(starting.stderr)")
                #expect(try Data(contentsOf: desk) == unchanged, "tags is not started")
            }
        }
    }

    @Test func `a store of more than 100 collections syncs through the relay with the tool`() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveRelay(in: directory) { relay in
                let server = relay.url.absoluteString
                let token = try tokenFile(directory, "token", try LiveRelay.token("alice"))
                let names = (1...101).map { "c\($0)" }
                let input = directory.appendingPathComponent("input.ndjson")
                try Data(names.map { #"{"collection":"\#($0)","key":"k","value":1}"# + "\n" }.joined().utf8).write(to: input)
                let phone = directory.appendingPathComponent("phone.sqlite")
                #expect(try await tool(phone, ["import", input.path]).status == 0)
                // The token check named every collection, more than a pull may name: it was
                // refused as an invalid request (65), at every later sync too.
                let first = try await tool(phone, ["sync", "--server", server, "--token-file", token.path, "--collections", names.joined(separator: ",")])
                #expect(first.status == 0, "\(first.stderr)")
                let laptop = directory.appendingPathComponent("laptop.sqlite")
                let second = try await tool(laptop, ["sync", "--server", server, "--token-file", token.path, "--collections", names.joined(separator: ",")])
                #expect(second.status == 0, "\(second.stderr)")
                #expect(try await tool(laptop, ["get", "c101", "k"]).output == "1\n")
                #expect(try await tool(phone, ["sync", "--server", server, "--token-file", token.path]).status == 0)
            }
        }
    }

    @Test func `tokens that do not fit are refused with their exit codes and the store untouched`() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveRelay(in: directory) { relay in
                let server = relay.url.absoluteString
                let alice = try tokenFile(directory, "alice", try LiveRelay.token("alice"))
                let bob = try tokenFile(directory, "bob", try LiveRelay.token("bob"))
                let expired = try tokenFile(directory, "expired", try LiveRelay.token("alice", expiresIn: -3600))
                let tagsOnly = try tokenFile(directory, "tags-only", try LiveRelay.token("alice", collections: ["tags"]))
                let garbage = try tokenFile(directory, "garbage", "not a token")
                // Unsigned: the tool reads the claims before anything reaches the relay.
                let mistypedReadOnly = try tokenFile(directory, "read-only-yes", "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzcGFjZSI6ImFsaWNlIiwicmVhZF9vbmx5IjoieWVzIn0.c2ln")
                let numberSpace = try tokenFile(directory, "number-space", "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzcGFjZSI6N30.c2ln")
                let empty = try tokenFile(directory, "empty", "  ")
                let fresh = directory.appendingPathComponent("fresh.sqlite")
                let start = ["sync", "--server", server, "--collections", "notes", "--token-file"]
                let cases: [([String], Int32, String)] = [
                    (start + [alice.path, "--space", "bob"], 65, "is not the token's space"),
                    (start + [expired.path], 77, "the relay refused the token"),
                    (start + [tagsOnly.path], 77, "does not grant collection(s) 'notes'"),
                    (start + [garbage.path], 77, "the token cannot be used: it is not three parts joined by dots"),
                    (start + [mistypedReadOnly.path], 77, "the token cannot be used: its read_only claim is not a Boolean"),
                    (start + [numberSpace.path], 77, "the token cannot be used: its space claim is not a string"),
                    (start + [empty.path], 77, "is empty"),
                    (start + [directory.appendingPathComponent("none").path], 66, "does not exist"),
                    (["sync", "--server", server, "--collections", "notes"], 64, "RECORDKEEPER_SYNC_TOKEN"),
                    (["sync", "--server", "host=localhost", "--token-file", alice.path], 64, "--token-file is for a relay"),
                ]
                for (arguments, status, message) in cases {
                    let result = try await tool(fresh, arguments)
                    #expect(result.status == status, "\(arguments): \(result.stderr)")
                    #expect(result.stderr.contains(message), "\(arguments): \(result.stderr)")
                    #expect(!FileManager.default.fileExists(atPath: fresh.path), "\(arguments): no store is created")
                }

                // A store syncing alice's space, given bob's token: refused before the relay.
                let store = directory.appendingPathComponent("alice.sqlite")
                #expect(try await tool(store, ["put", "notes", "a", "1"]).status == 0)
                #expect(try await tool(store, start + [alice.path]).status == 0)
                let before = try Data(contentsOf: store)
                let refused = try await tool(store, ["sync", "--server", server, "--token-file", bob.path])
                #expect(refused.status == 65, "\(refused.stderr)")
                #expect(refused.stderr.contains("syncs space \"alice\", not \"bob\""), "\(refused.stderr)")
                #expect(try Data(contentsOf: store) == before)

                // A token granting other collections than the store syncs: refused (77) before
                // the cursor moves, so a later sync with a full token still brings the change.
                let other = directory.appendingPathComponent("other.sqlite")
                #expect(try await tool(other, start + [alice.path]).status == 0)
                #expect(try await tool(other, ["put", "notes", "missed", "1"]).status == 0)
                #expect(try await tool(other, ["sync", "--server", server, "--token-file", alice.path]).status == 0)
                let tags = try tokenFile(directory, "tags", try LiveRelay.token("alice", collections: ["tags"]))
                let narrow = try await tool(store, ["sync", "--server", server, "--token-file", tags.path])
                #expect(narrow.status == 77, "\(narrow.stderr)")
                #expect(narrow.stderr.contains("does not grant collection(s) 'notes'"), "\(narrow.stderr)")
                #expect(try await tool(store, ["sync", "--server", server, "--token-file", alice.path]).status == 0)
                #expect(try await tool(store, ["get", "notes", "missed"]).status == 0, "the change still came")
            }
        }
    }
}
