import TestHelpers
import CSQLite
import Foundation
import Testing
@testable import RecordKeeper

@Suite struct RecordStoreOpeningTests {
    @Test func `creating a store does no I/O`() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("deeper/records.sqlite")
            _ = RecordStore(url: url)
            #expect(!FileManager.default.fileExists(atPath: url.deletingLastPathComponent().path))
        }
    }

    @Test func `read and removeCollection on a missing file create nothing`() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("deeper/records.sqlite")
            let store = RecordStore(url: url)
            #expect(try await store.read("notes") == nil)
            try await store.removeCollection("notes")
            #expect(!FileManager.default.fileExists(atPath: url.deletingLastPathComponent().path))
            try await store.put("notes", key: "a", data: Data("1"))
            #expect(try await store.read("notes") == ["a": Data("1")])
        }
    }

    @Test func `read on a fresh in-memory store is nil`() async throws {
        let store = RecordStore.inMemory()
        #expect(try await store.read("notes") == nil)
        try await store.put("notes", key: "a", data: Data("1"))
        #expect(try await store.read("notes") == ["a": Data("1")])
    }

    @Test func `opening a fresh directory creates it owner-only and the file 0600`() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("a/b/records.sqlite")
            let store = RecordStore(url: url)
            try await store.put("c", key: "k", data: Data("v"))
            #expect(try permissions(of: url) == 0o600)
            #expect(try permissions(of: directory.appendingPathComponent("a")) == 0o700)
            #expect(try permissions(of: directory.appendingPathComponent("a/b")) == 0o700)
            let wal = URL(fileURLWithPath: url.path + "-wal")
            if FileManager.default.fileExists(atPath: wal.path) {
                #expect(try permissions(of: wal) == 0o600)
            }
        }
    }

    @Test func `the observers' lock file is created owner-only, by a writer and by a stream alike`() async throws {
        try await withTemporaryDirectory { directory in
            let written = directory.appendingPathComponent("written.sqlite")
            try await RecordStore(url: written).put("c", key: "k", data: Data("v"))
            #expect(try permissions(of: URL(fileURLWithPath: written.path + "-observers")) == 0o600)

            let observed = directory.appendingPathComponent("observed.sqlite")
            try await RecordStore(url: observed).write { _ in }  // the store, before its lock file
            try FileManager.default.removeItem(atPath: observed.path + "-observers")
            let observer = RecordStore(url: observed)
            let stream = await observer.changes(in: "c")
            #expect(try permissions(of: URL(fileURLWithPath: observed.path + "-observers")) == 0o600)
            _ = stream
        }
    }

    @Test func `a reopened store has the records that were committed`() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("records.sqlite")
            do {
                let store = RecordStore(url: url)
                try await store.replace("c", values: ["a": Data("1"), "b": Data("2")])
                await store.close()
            }
            let reopened = RecordStore(url: url)
            #expect(try await reopened.read("c") == ["a": Data("1"), "b": Data("2")])
            #expect(try await reopened.info().formatVersion == StoreFormat.currentVersion)
            #expect(try await reopened.info().journalMode == "wal")
        }
    }

    @Test func `a file that is not a database is refused and left unchanged`() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("records.sqlite")
            let original = Data(String(repeating: "these are someone's notes, not a database\n", count: 200).utf8)
            try original.write(to: url)
            let store = RecordStore(url: url)
            // A change stream taken on it creates nothing beside it either.
            let stream = await store.changes(in: "c")
            let error = await #expect(throws: RecordStoreError.self) { try await store.read("c") }
            withExtendedLifetime(stream) {}
            #expect(error?.code == .notADatabase)
            #expect(error?.sqliteCode == SQLITE_NOTADB)
            #expect(error?.path == url.path)
            await #expect(throws: RecordStoreError.self) { try await store.put("c", key: "k", data: Data()) }
            #expect(try contents(of: url) == original)
            let siblings = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            #expect(siblings == ["records.sqlite"])
        }
    }

    @Test func `a directory at the store path is refused alike by reads and writes`() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("records.sqlite", isDirectory: true)
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: false)
            let store = RecordStore(url: url)
            let read = await #expect(throws: RecordStoreError.self) { try await store.read("c") }
            let write = await #expect(throws: RecordStoreError.self) { try await store.put("c", key: "k", data: Data()) }
            for error in [read, write] {
                #expect(error?.code == .cannotOpen)
                #expect(error?.errorDescription?.contains("it is a directory") == true, "\(String(describing: error))")
            }
            #expect(try FileManager.default.contentsOfDirectory(atPath: url.path).isEmpty)
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["records.sqlite"])
        }
    }

    @Test func `a store file that cannot be created leaves no directory it made behind`() async throws {
        try await withTemporaryDirectory { directory in
            // The directories can be made; the file's name is too long for the file system.
            let url = directory.appendingPathComponent("a/b/" + String(repeating: "x", count: 300) + ".sqlite")
            let store = RecordStore(url: url)
            let error = await #expect(throws: RecordStoreError.self) { try await store.put("c", key: "k", data: Data("1")) }
            #expect(error?.code == .cannotOpen)
            #expect(error?.errorDescription?.contains("could not create the store file") == true, "\(String(describing: error))")
            let left = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            #expect(left == [])
        }
    }

    @Test func `a FIFO or a device at the store path is refused alike by reads and writes`() async throws {
        try await withTemporaryDirectory { directory in
            let fifo = directory.appendingPathComponent("records.sqlite")
            #expect(mkfifo(fifo.path, 0o600) == 0)
            // Also through a symbolic link: the store follows it, and so does the check.
            let link = directory.appendingPathComponent("link.sqlite")
            try FileManager.default.createSymbolicLink(at: link, withDestinationURL: fifo)
            for (url, kind) in [(fifo, "a FIFO"), (link, "a FIFO"), (URL(fileURLWithPath: "/dev/null"), "a device")] {
                let store = RecordStore(url: url)
                // Before, a read took the FIFO for an empty file ("no records") and a write
                // failed with a disk I/O error.
                let read = await #expect(throws: RecordStoreError.self) { try await store.read("c") }
                let write = await #expect(throws: RecordStoreError.self) { try await store.put("c", key: "k", data: Data()) }
                for error in [read, write] {
                    #expect(error?.code == .cannotOpen)
                    #expect(error?.errorDescription?.contains("it is \(kind), not a regular file") == true, "\(String(describing: error))")
                }
            }
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted() == ["link.sqlite", "records.sqlite"])
        }
    }

    @Test func `a store of a newer format is refused and left unchanged`() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("records.sqlite")
            do {
                let store = RecordStore(url: url)
                try await store.put("c", key: "k", data: Data("v"))
                await store.close()
            }
            try rawSQLite(url, "PRAGMA user_version = 99; PRAGMA journal_mode = DELETE")
            let before = try contents(of: url)
            let store = RecordStore(url: url)
            let error = await #expect(throws: RecordStoreError.self) { try await store.read("c") }
            #expect(error?.code == .newerFormat)
            #expect(error?.localizedDescription.contains("newer") == true)
            #expect(try contents(of: url) == before)
        }
    }

    @Test func `another application's database is refused and left unchanged`() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("records.sqlite")
            try rawSQLite(url, "CREATE TABLE theirs (x); INSERT INTO theirs VALUES (1)")
            let before = try contents(of: url)
            let store = RecordStore(url: url)
            let stream = await store.changes(in: "c")
            let error = await #expect(throws: RecordStoreError.self) { try await store.read("c") }
            withExtendedLifetime(stream) {}
            #expect(error?.code == .foreignDatabase)
            #expect(try contents(of: url) == before)
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["records.sqlite"])
        }
    }

    @Test func `a URL that is not a file URL is refused at every request and nothing is created`() async throws {
        try await withTemporaryDirectory { directory in
            // Its path names a file in this test's directory: a store that ignored the scheme
            // would create its file there.
            let url = try #require(URL(string: "https://example.com\(directory.path)/records.sqlite"))
            let log = EventLog()
            let store = RecordStore(url: url, options: .init(eventHandler: { log.append($0) }))
            let expected =
                "Could not open the store at \(url.absoluteString): the URL is not a file URL; nothing was created."
            let put = await #expect(throws: RecordStoreError.self) { try await store.put("c", key: "k", data: Data("v")) }
            #expect(put?.code == .invalidArgument)
            #expect(put?.operation == .open)
            #expect(put?.path == url.absoluteString)
            #expect(put?.localizedDescription == expected)
            let read = await #expect(throws: RecordStoreError.self) { try await store.read("c") }
            #expect(read?.localizedDescription == expected)
            let removal = await #expect(throws: RecordStoreError.self) { try await store.removeCollection("c") }
            #expect(removal?.code == .invalidArgument)
            let info = await #expect(throws: RecordStoreError.self) { try await store.info() }
            #expect(info?.code == .invalidArgument)
            let backup = await #expect(throws: RecordStoreError.self) {
                try await store.backup(to: directory.appendingPathComponent("copy.sqlite"))
            }
            #expect(backup?.code == .invalidArgument)
            _ = await store.changes(in: "c")
            let reported = log.all.compactMap { event -> RecordStoreError? in
                switch event {
                case .openingFailed(let error), .changeObservationFailed(let error): error
                default: nil
                }
            }
            #expect(!reported.isEmpty && reported.allSatisfy { $0.code == .invalidArgument })
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == [])
        }
    }

    @Test func `an opening failure is thrown and a later request retries`() async throws {
        try await withTemporaryDirectory { directory in
            // A file stands where the store's directory should be: never removed by the store.
            let obstruction = directory.appendingPathComponent("store")
            try Data("in the way".utf8).write(to: obstruction)
            let store = RecordStore(url: obstruction.appendingPathComponent("records.sqlite"))
            let error = await #expect(throws: RecordStoreError.self) { try await store.read("c") }
            #expect(error?.code == .cannotOpen)
            #expect(try contents(of: obstruction) == Data("in the way".utf8))
            try FileManager.default.removeItem(at: obstruction)
            try await store.put("c", key: "k", data: Data("v"))
            #expect(try await store.read("c") == ["k": Data("v")])
        }
    }

    @Test func `concurrent first requests share one opening`() async throws {
        let attempts = Counter()
        let gate = Gate()
        let store = RecordStore(location: nil, options: .init()) {
            _ = attempts.increment()
            await gate.wait()
        }
        async let first = store.read("c")
        async let second = store.value("c", key: "k")
        async let third: Void = store.put("c", key: "k", data: Data("v"))
        try await waitUntil { await store.openingRequests == 3 }
        await gate.open()
        _ = try await (first, second, third)
        #expect(attempts.count == 1)
    }

    @Test func `a failed opening is thrown to every waiter and a late waiter never clears a newer attempt`() async throws {
        struct Refused: Error {}
        let attempts = Counter()
        let firstGate = Gate()
        let secondGate = Gate()
        let store = RecordStore(location: nil, options: .init()) {
            let attempt = attempts.increment()
            if attempt == 1 {
                await firstGate.wait()
                throw Refused()
            }
            await secondGate.wait()
        }
        // Three requests wait on the first attempt.
        let waiters = (0..<3).map { _ in Task { try await store.read("c") } }
        try await waitUntil { await store.openingRequests == 3 && attempts.count == 1 }
        await firstGate.open()
        for waiter in waiters {
            await #expect(throws: Refused.self) { try await waiter.value }
        }
        // A new request starts a second attempt; the first attempt's waiters have all
        // finished, and none of them cleared it: a further request joins it.
        let retry = Task { try await store.put("c", key: "k", data: Data("v")) }
        try await waitUntil("the second opening attempt started") { attempts.count == 2 }
        let joiner = Task { try await store.read("c") }
        try await waitUntil { await store.openingRequests == 5 }
        #expect(attempts.count == 2)
        await secondGate.open()
        try await retry.value
        _ = try await joiner.value  // joined the second attempt and succeeded with it
        #expect(attempts.count == 2)
        #expect(try await store.read("c") == ["k": Data("v")])
    }

    // Before the fix the cancelled request waited for the gate, which opens only after it: the
    // time limit makes that a failure instead of a hang.
    @Test(.timeLimit(.minutes(5)))
    func `a request cancelled while the opening runs stops waiting and the opening goes on`() async throws {
        let attempts = Counter()
        let gate = Gate()
        let store = RecordStore(location: nil, options: .init()) {
            _ = attempts.increment()
            await gate.wait()
        }
        let cancelled = Task { try await store.put("c", key: "gone", data: Data("x")) }
        let patient = Task { try await store.put("c", key: "kept", data: Data("v")) }
        try await waitUntil { await store.openingRequests == 2 }
        cancelled.cancel()
        // Answered while the opening is still held at the gate.
        await #expect(throws: CancellationError.self) { try await cancelled.value }
        #expect(attempts.count == 1)
        await gate.open()
        try await patient.value
        #expect(attempts.count == 1)
        #expect(try await store.read("c") == ["kept": Data("v")])
    }

    @Test func `opening reports its timings through the event handler`() async throws {
        let log = EventLog()
        try await withStore(.onDisk, options: .init(eventHandler: { log.append($0) })) { store, url in
            try await store.put("c", key: "k", data: Data("v"))
            let opened = log.all.compactMap { event -> OpeningTimings? in
                if case .opened(let timings) = event { return timings }
                return nil
            }
            #expect(opened.count == 1)
            #expect(opened.first?.path == url.path)
            #expect(opened.first?.formatVersionFound == 0)
            #expect(opened.first?.formatVersion == StoreFormat.currentVersion)
            let requests = log.all.filter {
                if case .request(operation: .put, collection: "c", duration: _, succeeded: true) = $0 { return true }
                return false
            }
            #expect(requests.count == 1)
        }
    }

    @Test(arguments: Durability.allCases)
    func `durability sets the synchronous mode`(durability: Durability) async throws {
        try await withStore(.onDisk, options: .init(durability: durability)) { store, _ in
            try await store.put("c", key: "k", data: Data("v"))
            #expect(try await store.info().durability == durability)
        }
    }

    @Test func `a second connection waits for a lock instead of failing at once`() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("records.sqlite")
            let store = RecordStore(url: url, options: .init(busyTimeout: .seconds(60)))
            try await store.put("c", key: "a", data: Data("1"))
            // Another "process": a raw connection holding the write lock.
            let lock = try ForeignWriteLock(url)
            let finished = Protected(false)
            let put = Task {
                defer { finished.withLock { $0 = true } }
                try await store.put("c", key: "b", data: Data("2"))
            }
            // The handshake: the put holds the store's writer, which it takes for its
            // transaction and keeps while SQLite's busy handler waits for the other lock
            // (a put that failed at once would have finished instead).
            try await waitUntil("the put holds the writer or has finished") {
                finished.withLock { $0 } || store.core.writer.withLockIfAvailable({ _ in true }) == nil
            }
            #expect(!finished.withLock { $0 }, "the put ended while another connection held the write lock")
            lock.release()
            try await put.value
            #expect(try await store.read("c")?.count == 2)
        }
    }
}
