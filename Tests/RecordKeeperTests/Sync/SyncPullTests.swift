import TestHelpers
import Foundation
import Testing
@testable import RecordKeeper

/// Pull: no echo, values kept aside for pending local changes, a cursor that never moves
/// backwards, spaces that see nothing of each other, change streams that see pulled changes.
@Suite struct SyncPullTests {
    @Test(arguments: StoreKind.allCases)
    func `pulled changes are not captured again, and change streams see them`(kind: StoreKind) async throws {
        try await withDevices(kind, count: 2) { stores in
            let server = ScriptedServer()
            let (a, b) = (RecordSync(store: stores[0], server: server), RecordSync(store: stores[1], server: server))
            try await a.start(space: "s", collections: ["notes"])
            try await b.start(space: "s", collections: ["notes"])
            try await stores[0].put("notes", key: "a", data: Data("1"))
            try await stores[0].put("notes", key: "b", data: Data("2"))
            _ = try await a.sync()
            let stream = await stores[1].changes(in: "notes")
            let report = try await b.sync()
            #expect(report.pulledChanges == 2)
            let seen = try await changes(of: stream) { $0.upserts.count == 2 }
            #expect(seen.upserts == ["a": Data("1"), "b": Data("2")])
            #expect(try await pendingOperations(stores[1]).isEmpty, "no echo")
            let pushesBefore = await server.pushedOperations.count
            #expect(try await b.sync().pushedOperations == 0)
            #expect(try await a.sync().pulledChanges == 0, "a device's own writes do not come back")
            #expect(await server.pushedOperations.count == pushesBefore)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a pending local change keeps its value over a pulled one and takes the server's after its conflict`(
        kind: StoreKind
    ) async throws {
        try await withDevices(kind, count: 2) { stores in
            let server = InMemorySyncServer()
            let (a, b) = (RecordSync(store: stores[0], server: server), RecordSync(store: stores[1], server: server))
            try await a.start(space: "s", collections: ["notes"])
            try await b.start(space: "s", collections: ["notes"])
            try await stores[0].put("notes", key: "k", data: Data("0"))
            _ = try await a.sync()
            _ = try await b.sync()
            try await stores[1].put("notes", key: "k", data: Data("b's edit"))
            try await stores[0].put("notes", key: "k", data: Data("a's edit"))
            _ = try await a.sync()
            let pulled = try await b.pull()
            #expect(pulled.pulledChanges == 1)
            #expect(try await strings(stores[1], "notes") == ["k": "b's edit"], "the pending change keeps its value")
            #expect(try await pendingOperations(stores[1]).count == 1)
            let pushed = try await b.push()
            #expect(pushed.newConflicts.count == 1)
            #expect(try await strings(stores[1], "notes") == ["k": "a's edit"], "the server's value after the conflict")
            #expect(try await stores[1].syncConflicts().first?.local == Data("b's edit"))
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a value kept aside that is newer than the device's acknowledged write becomes the record's value`(
        kind: StoreKind
    ) async throws {
        try await withDevices(kind, count: 2) { stores in
            let inner = InMemorySyncServer()
            let lossy = ScriptedServer(inner)
            let a = RecordSync(store: stores[0], server: lossy)
            let b = RecordSync(store: stores[1], server: inner)
            try await a.start(space: "s", collections: ["prefs"], policy: .lastWriterWins)
            try await b.start(space: "s", collections: ["prefs"], policy: .lastWriterWins)
            try await stores[0].put("prefs", key: "theme", data: Data("dark"))
            await lossy.setLoseAnswers(true)
            await #expect(throws: SyncError.self) { try await a.push() }  // applied at 1, answer lost
            await lossy.setLoseAnswers(false)
            try await stores[1].put("prefs", key: "theme", data: Data("light"))
            _ = try await b.sync()  // applied at 2: the later write
            _ = try await a.pull()  // 2 is kept aside: a's change is still pending
            #expect(try await strings(stores[0], "prefs") == ["theme": "dark"])
            _ = try await a.push()  // redelivered: applied at 1, older than the value aside
            #expect(try await strings(stores[0], "prefs") == ["theme": "light"])
            _ = try await a.sync()
            _ = try await b.sync()
            #expect(try await strings(stores[1], "prefs") == ["theme": "light"])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a page behind the device's cursor is refused and the cursor never moves backwards`(kind: StoreKind) async throws {
        try await withDevices(kind, count: 2) { stores in
            let server = InMemorySyncServer()
            let a = RecordSync(store: stores[0], server: server)
            try await a.start(space: "s", collections: ["notes"])
            for n in 0..<3 { try await stores[0].put("notes", key: "\(n)", data: Data("\(n)")) }
            let report = try await a.sync()
            #expect(report.cursor == SyncCursor(counter: 3))
            let stale = RecordSync(store: stores[0], server: StaleCursorServer(inner: server))
            let error = await #expect(throws: SyncError.self) { try await stale.pull() }
            #expect(error?.code == .serverFailure)
            #expect(error?.message.contains("behind") == true)
            #expect(try await stores[0].syncStatus()?.cursor == SyncCursor(counter: 3))
            #expect(try await strings(stores[0], "notes") == ["0": "0", "1": "1", "2": "2"])
            #expect(try await pendingOperations(stores[0]).isEmpty)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `pages of a long pull each advance the cursor`(kind: StoreKind) async throws {
        try await withDevices(kind, count: 2) { stores in
            let server = ScriptedServer()
            let (a, b) = (RecordSync(store: stores[0], server: server), RecordSync(store: stores[1], server: server))
            try await a.start(space: "s", collections: ["notes"])
            try await b.start(space: "s", collections: ["notes"])
            var values: [String: Data] = [:]
            for n in 0..<2_500 { values["k\(n)"] = Data("\(n)") }
            try await stores[0].replace("notes", values: values)
            _ = try await a.sync()
            let pullsBefore = await server.pulls
            let report = try await b.pull()
            #expect(report.pulledChanges == 2_500)
            #expect(await server.pulls - pullsBefore == 3)
            #expect(try await stores[1].read("notes") == values)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a device of another space sees nothing`(kind: StoreKind) async throws {
        try await withDevices(kind, count: 2) { stores in
            let server = InMemorySyncServer()
            let alice = RecordSync(store: stores[0], server: server)
            let bob = RecordSync(store: stores[1], server: server)
            try await alice.start(space: "alice", collections: ["notes"])
            try await bob.start(space: "bob", collections: ["notes"])
            try await stores[0].put("notes", key: "secret", data: Data("alice's"))
            _ = try await alice.sync()
            let report = try await bob.sync()
            #expect(report.pulledChanges == 0)
            #expect(try await stores[1].read("notes") == nil)
        }
    }
}
