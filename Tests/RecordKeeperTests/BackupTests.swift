import TestHelpers
import Foundation
import Testing
@testable import RecordKeeper

/// `RecordStore.backup(to:overwrite:)`: a consistent, complete, private copy, never over
/// an existing file unless asked, and nothing at all for a store that does not exist.
@Suite struct BackupTests {
    @Test func `a backup taken while another connection keeps writing opens, passes check and is consistent`() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("records.sqlite")
            let store = RecordStore(url: url)
            let writer = RecordStore(url: url)  // Another connection to the same file.
            try await store.put("pair", key: "a", data: Data("0"))

            let stop = Protected(false)
            let running = Gate()
            let writing = Task {
                var round = 0
                while !stop.withLock({ $0 }) {
                    round += 1
                    let value = Data("\(round)")
                    let logKey = String(format: "%08d", round)
                    try await writer.write { tx in
                        try tx.put("pair", key: "a", data: value)
                        try tx.put("pair", key: "b", data: value)
                        try tx.put("log", key: logKey, data: value)
                    }
                    if round == 3 { await running.open() }
                }
                return round
            }
            await running.wait()
            let destination = directory.appendingPathComponent("backup.sqlite")
            try await store.backup(to: destination)
            stop.withLock { $0 = true }
            let rounds = try await writing.value

            // One complete file: the format is in the main file, and no log is needed.
            #expect(!FileManager.default.fileExists(atPath: destination.path + "-wal"))
            let header = try contents(of: destination)
            #expect(header.count >= 100 && header[68..<72] == Data("RKst"))
            let copy = RecordStore(url: destination)
            #expect(try await copy.integrityCheck() == ["ok"])
            let pair = try #require(try await copy.read("pair"))
            let a = try #require(pair["a"].map { Int(String(decoding: $0, as: UTF8.self)) } ?? nil)
            #expect(pair["b"].map { String(decoding: $0, as: UTF8.self) } == "\(a)")
            #expect(a >= 3 && a <= rounds)
            #expect(try await copy.read("log")?.count == a)
            await copy.close()
            await writer.close()
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a backup holds the store's records in one private file that opens on its own`(kind: StoreKind) async throws {
        try await withStore(kind) { store, url in
            try await store.replace("notes", values: ["a": Data("1"), "b": Data("2")])
            try await store.apply("empty", changes: RecordChanges())
            let directory = url.deletingLastPathComponent()
            let destination = directory.appendingPathComponent("copy.sqlite")
            try await store.backup(to: destination)

            #expect(try permissions(of: destination) == 0o600)
            let listing = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            #expect(!listing.contains { $0.contains(".backup-") }, "a temporary file was left: \(listing)")
            let copy = RecordStore(url: destination)
            #expect(try await copy.read("notes") == ["a": Data("1"), "b": Data("2")])
            #expect(try await copy.read("empty") == [:])
            let version = try await store.record("notes", key: "a")?.version
            #expect(try await copy.record("notes", key: "a")?.version == version)
            // The source still works and is unchanged.
            #expect(try await store.read("notes")?.count == 2)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a backup refuses an existing file unless asked to overwrite it`(kind: StoreKind) async throws {
        try await withStore(kind) { store, url in
            try await store.put("c", key: "k", data: Data("1"))
            let destination = url.deletingLastPathComponent().appendingPathComponent("existing.sqlite")
            try Data("keep me").write(to: destination)

            let error = await #expect(throws: RecordStoreError.self) { try await store.backup(to: destination) }
            #expect(error?.code == .invalidArgument)
            #expect(error?.operation == .backup)
            #expect(error?.errorDescription?.contains("a file already exists at \(destination.path)") == true)
            #expect(try contents(of: destination) == Data("keep me"))

            try await store.backup(to: destination, overwrite: true)
            #expect(try await RecordStore(url: destination).read("c") == ["k": Data("1")])
            #expect(try permissions(of: destination) == 0o600)
        }
    }

    @Test func `a backup of a store that does not exist is an error that creates nothing`() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("missing.sqlite")
            let destination = directory.appendingPathComponent("backup.sqlite")
            let error = await #expect(throws: RecordStoreError.self) { try await RecordStore(url: url).backup(to: destination) }
            #expect(error?.code == .cannotOpen)
            #expect(error?.operation == .backup)
            #expect(error?.errorDescription == "Could not back up the store at \(url.path): there is no store at "
                    + "\(url.path); nothing was written.")
            let listing = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            #expect(listing.isEmpty)
        }
    }

    @Test func `a backup never writes over the store's own file or next to an open store`() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("records.sqlite")
            let store = RecordStore(url: url)
            try await store.put("c", key: "k", data: Data("1"))

            let own = await #expect(throws: RecordStoreError.self) { try await store.backup(to: url, overwrite: true) }
            #expect(own?.errorDescription?.contains("is the store's own file") == true)
            // Nor over the files beside it: a copy over the -wal threw away every commit not
            // yet in the main file (a trial lost three confirmed writes that way).
            let log = try Data(contentsOf: URL(fileURLWithPath: url.path + "-wal"))
            for suffix in ["-wal", "-shm", "-journal", "-observers"] {
                let beside = URL(fileURLWithPath: url.path + suffix)
                let error = await #expect(throws: RecordStoreError.self) { try await store.backup(to: beside, overwrite: true) }
                #expect(error?.code == .invalidArgument)
                #expect(error?.errorDescription?.contains("is the store's own \(suffix) file") == true, "\(error)")
            }
            #expect(try Data(contentsOf: URL(fileURLWithPath: url.path + "-wal")) == log)
            #expect(!FileManager.default.fileExists(atPath: url.path + "-journal"))

            // Another store open at the destination has a log SQLite would apply to the copy.
            let other = directory.appendingPathComponent("other.sqlite")
            let otherStore = RecordStore(url: other)
            try await otherStore.put("x", key: "y", data: Data("2"))
            let open = await #expect(throws: RecordStoreError.self) { try await store.backup(to: other, overwrite: true) }
            #expect(open?.errorDescription?.contains("\(other.path)-wal exists") == true)
            #expect(try await otherStore.read("x") == ["y": Data("2")])
            #expect(try await store.read("c") == ["k": Data("1")])

            // A rollback journal another program left when it crashed would be played into the
            // copy when it is first opened.
            let crashed = directory.appendingPathComponent("crashed.db")
            try Data("an old database".utf8).write(to: crashed)
            try Data("its hot journal".utf8).write(to: URL(fileURLWithPath: crashed.path + "-journal"))
            let hot = await #expect(throws: RecordStoreError.self) { try await store.backup(to: crashed, overwrite: true) }
            #expect(hot?.errorDescription?.contains("\(crashed.path)-journal exists") == true, "\(String(describing: hot))")
            #expect(try Data(contentsOf: crashed) == Data("an old database".utf8))
        }
    }

    @Test func `a backup never turns a FIFO or a symbolic link, even one to nothing, into a file`() async throws {
        try await withTemporaryDirectory { directory in
            let store = RecordStore(url: directory.appendingPathComponent("records.sqlite"))
            try await store.put("c", key: "k", data: Data("1"))
            let fifo = directory.appendingPathComponent("fifo")
            #expect(mkfifo(fifo.path, 0o600) == 0)
            let target = directory.appendingPathComponent("target")
            try Data("kept".utf8).write(to: target)
            let link = directory.appendingPathComponent("link")
            try FileManager.default.createSymbolicLink(at: link, withDestinationURL: target)
            // A link to a volume not mounted: the backup must not land on this disk instead.
            let dangling = directory.appendingPathComponent("to-nothing")
            try FileManager.default.createSymbolicLink(
                at: dangling, withDestinationURL: directory.appendingPathComponent("unmounted/records.sqlite"))
            for (url, kind) in [(fifo, "a FIFO"), (link, "a symbolic link"), (dangling, "a symbolic link")] {
                for overwrite in [true, false] {
                    let error = await #expect(throws: RecordStoreError.self) { try await store.backup(to: url, overwrite: overwrite) }
                    #expect(error?.errorDescription?.contains("is \(kind), not a regular file") == true, "\(String(describing: error))")
                    #expect(FileKind.nonRegular(at: url.path) == kind)
                }
            }
            #expect(try Data(contentsOf: target) == Data("kept".utf8))
        }
    }

    @Test func `a backup leaves the store's file byte for byte as it was`() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("records.sqlite")
            let writer = RecordStore(url: url)
            try await writer.replace("c", values: ["a": Data("1"), "b": Data("2")])
            await writer.close()
            let before = try contents(of: url)
            let listing = try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()

            let store = RecordStore(url: url)
            try await store.backup(to: directory.appendingPathComponent("copy.sqlite"))
            await store.close()

            #expect(try contents(of: url) == before)
            let after = try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
            #expect(after == (listing + ["copy.sqlite"]).sorted())
        }
    }

    @Test func `a backup of an older format leaves the store as it was and copies that format`() async throws {
        try await withTemporaryDirectory { directory in
            let url = try fixtureCopy("format-1.sqlite", into: directory)
            let before = try contents(of: url)
            let store = RecordStore(url: url)
            let copy = directory.appendingPathComponent("copy.sqlite")
            try await store.backup(to: copy)
            await store.close()
            // Never migrated: an app of that format still opens both.
            #expect(try contents(of: url) == before)
            let header = try contents(of: copy)
            #expect(header[60..<64].reduce(0) { $0 << 8 | Int($1) } == 1, "the copy's user_version")
            #expect(try await RecordStore(url: copy).read("notes") == (try await RecordStore(url: url).read("notes")))
        }
    }

    @Test func `a backup of an empty SQLite database is refused and leaves it as it was`() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("records.sqlite")
            // An SQLite database with a header and no table: "no store" to every read.
            try rawSQLite(url, "CREATE TABLE t (x); DROP TABLE t")
            let before = try contents(of: url)
            let store = RecordStore(url: url)
            let copy = directory.appendingPathComponent("copy.sqlite")
            let error = await #expect(throws: RecordStoreError.self) { try await store.backup(to: copy) }
            #expect(error?.code == .cannotOpen)
            #expect(error?.errorDescription?.contains("there is no store at") == true)
            await store.close()
            #expect(try contents(of: url) == before)
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["records.sqlite"])
        }
    }

    @Test func `a backup into a missing directory names the directory`() async throws {
        let store = RecordStore.inMemory()
        try await withTemporaryDirectory { directory in
            let destination = directory.appendingPathComponent("no/such/backup.sqlite")
            let error = await #expect(throws: RecordStoreError.self) { try await store.backup(to: destination) }
            #expect(error?.code == .cannotOpen)
            #expect(error?.errorDescription == "Could not back up the in-memory store: the destination's directory "
                    + "\(directory.path)/no/such does not exist.")
        }
    }

    @Test(arguments: [StoreKind.onDisk, .inMemory])
    func `a backup whose task is cancelled during the copy stops and leaves no file`(kind: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            let folder = directory.appendingPathComponent("store", isDirectory: true)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let store = kind.makeStore(at: folder.appendingPathComponent("records.sqlite"))
            let value = Data(repeating: 0x61, count: 4_000)
            try await store.replace("big", values: Dictionary(uniqueKeysWithValues: (0..<200).map { ("k\($0)", value) }))
            let backups = directory.appendingPathComponent("backups", isDirectory: true)
            try FileManager.default.createDirectory(at: backups, withIntermediateDirectories: true)
            let destination = backups.appendingPathComponent("copy.sqlite")
            let steps = Counter()
            // The copy cancels its own task after its second step of one page: it has a few
            // hundred pages to go.
            await #expect(throws: CancellationError.self) {
                try await store.backup(to: destination, overwrite: false, pagesPerStep: 1) {
                    if steps.increment() == 2 { withUnsafeCurrentTask { $0?.cancel() } }
                }
            }
            #expect(steps.count == 2, "it stopped after the step that saw the cancellation")
            #expect(try FileManager.default.contentsOfDirectory(atPath: backups.path) == [], "no copy, no temporary file")
            // The store is as it was, and a later backup succeeds.
            try await store.backup(to: destination)
            let copy = RecordStore(url: destination)
            #expect(try await copy.read("big") == (try await store.read("big")))
        }
    }

    @Test func `an in-memory store saved with backup is a store file with everything it held`() async throws {
        try await withTemporaryDirectory { directory in
            let store = RecordStore.inMemory()
            try await store.replace("notes", values: ["a": Data("1"), "b": Data("2")])
            try await store.apply("notes", changes: RecordChanges(upserts: ["a": Data("1b")], removals: ["b"]))
            try await store.apply("carts", changes: RecordChanges(upserts: ["x": Data("3")]),
                                  enqueue: [OutboxMessage(kind: "cart.set", payload: Data("{}"), orderingKey: "cart")])
            let destination = directory.appendingPathComponent("saved.sqlite")
            try await store.backup(to: destination)

            #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["saved.sqlite"],
                    "one file, no -wal, -shm or temporary file")
            #expect(try permissions(of: destination) == 0o600)
            let saved = RecordStore(url: destination)
            #expect(try await saved.integrityCheck() == ["ok"])
            #expect(try await saved.info().formatVersion == StoreFormat.currentVersion)
            for collection in ["notes", "carts"] {
                #expect(try await saved.records(collection) == (try await store.records(collection)), "\(collection), versions too")
            }
            #expect(try await saved.outbox.pending().map(\.id) == (try await store.outbox.pending().map(\.id)))
            // The in-memory store goes on as before.
            try await store.put("notes", key: "c", data: Data("4"))
            #expect(try await store.read("notes") == ["a": Data("1b"), "c": Data("4")])
            #expect(try await saved.read("notes") == ["a": Data("1b")])
        }
    }

    @Test(arguments: [false, true])
    func `a directory is refused as destination, even with overwrite, and left as it is`(overwrite: Bool) async throws {
        try await withStore(.onDisk) { store, url in
            try await store.put("c", key: "k", data: Data("1"))
            let parent = url.deletingLastPathComponent()
            let folder = parent.appendingPathComponent("backups", isDirectory: true)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false)
            try Data("old").write(to: folder.appendingPathComponent("inside.txt"))
            let before = try FileManager.default.contentsOfDirectory(atPath: parent.path).sorted()

            let error = await #expect(throws: RecordStoreError.self) { try await store.backup(to: folder, overwrite: overwrite) }
            #expect(error?.code == .invalidArgument)
            #expect(error?.operation == .backup)
            #expect(error?.errorDescription?.contains("the destination \(folder.path) is a directory") == true,
                    "\(error?.errorDescription ?? "")")
            #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["inside.txt"])
            #expect(try contents(of: folder.appendingPathComponent("inside.txt")) == Data("old"))
            #expect(try FileManager.default.contentsOfDirectory(atPath: parent.path).sorted() == before)
        }
    }
}
