import Foundation
import RecordKeeper
import TestHelpers
import Testing

/// The protocol's rules, against every server implementation (in memory, and PostgreSQL when a
/// server is configured): the same requests get the same answers.
@Suite struct SyncServerProtocolTests {
    @Test(arguments: ServerKind.allCases)
    func `an applied push returns its version and a pull returns the records at that version`(
        kind: ServerKind
    ) async throws {
        guard let server = try await kind.make() else { return }
        let space = TestPostgres.space()
        let outcomes = try await server.push(
            space: space,
            operations: [
                operation("phone", 1, put("notes", "a", "A1", base: nil), put("notes", "b", "B1", base: nil)),
                operation("phone", 2, put("tags", "x", "X1", base: nil)),
            ])
        #expect(outcomes.map(\.result) == [.applied(SyncServerVersion(1)), .applied(SyncServerVersion(2))])
        #expect(outcomes.allSatisfy { !$0.isRedelivery })

        let page = try await server.pull(space: space, after: .start, limit: 10)
        #expect(
            page.changes == [
                SyncPulledChange(collection: "notes", key: "a", value: .text("A1"), version: SyncServerVersion(1)),
                SyncPulledChange(collection: "notes", key: "b", value: .text("B1"), version: SyncServerVersion(1)),
                SyncPulledChange(collection: "tags", key: "x", value: .text("X1"), version: SyncServerVersion(2)),
            ])
        #expect(page.cursor == SyncCursor(counter: 2))
        #expect(!page.hasMore)
    }

    @Test(arguments: ServerKind.allCases)
    func `a re-delivered operation gets its first outcome and has no second effect`(kind: ServerKind)
        async throws
    {
        guard let server = try await kind.make() else { return }
        let space = TestPostgres.space()
        let first = operation("phone", 1, put("notes", "a", "A1", base: nil))
        let answer = try await server.push(space: space, operations: [first])
        #expect(answer.map(\.result) == [.applied(SyncServerVersion(1))])

        // Another device changes the record; then the first operation arrives again, alone and
        // in a batch with a new one (and twice within one push).
        let second = operation("laptop", 1, put("notes", "a", "A2", base: 1))
        _ = try await server.push(space: space, operations: [second])
        let again = try await server.push(space: space, operations: [first])
        #expect(again == [SyncOutcome(first, result: .applied(SyncServerVersion(1)), isRedelivery: true)])
        let fresh = operation("phone", 2, put("notes", "b", "B1", base: nil))
        let batch = try await server.push(space: space, operations: [first, fresh, fresh, second])
        #expect(batch.map(\.isRedelivery) == [true, false, true, true])
        #expect(batch[1].result == .applied(SyncServerVersion(3)))
        #expect(batch[2].result == batch[1].result)

        let all = try await server.pullAll(space: space)
        #expect(all.cursor == SyncCursor(counter: 3), "re-deliveries must not advance the counter")
        #expect(try await server.snapshot(space: space) == ["notes/a": .text("A2"), "notes/b": .text("B1")])
    }

    @Test(arguments: ServerKind.allCases)
    func `a stale base is a conflict with the server's value and version, and nothing of the operation applies`(
        kind: ServerKind
    ) async throws {
        guard let server = try await kind.make() else { return }
        let space = TestPostgres.space()
        _ = try await server.push(
            space: space,
            operations: [operation("phone", 1, put("notes", "a", "A1", base: nil), put("notes", "b", "B1", base: nil))])
        _ = try await server.push(space: space, operations: [operation("phone", 2, put("notes", "a", "A2", base: 1))])

        // The laptop saw version 1 of both and changes both: "a" moved on, "b" did not.
        let stale = operation("laptop", 1, put("notes", "a", "mine", base: 1), put("notes", "b", "mine too", base: 1))
        let outcome = try #require(try await server.push(space: space, operations: [stale]).first)
        #expect(
            outcome.result
                == .conflict([
                    SyncConflict(
                        collection: "notes", key: "a", base: SyncServerVersion(1),
                        server: SyncRecordState(value: .text("A2"), version: SyncServerVersion(2)))
                ]))
        #expect(try await server.snapshot(space: space) == ["notes/a": .text("A2"), "notes/b": .text("B1")])

        // A re-delivery gets the same conflict, even though "a" moved on again since.
        _ = try await server.push(space: space, operations: [operation("phone", 3, put("notes", "a", "A3", base: 2))])
        let again = try await server.push(space: space, operations: [stale])
        #expect(again.first?.result == outcome.result)
        #expect(again.first?.isRedelivery == true)

        // Keeping the local value means pushing it again based on the server's version.
        let keepLocal = operation("laptop", 2, put("notes", "a", "mine", base: 3))
        #expect(try await server.push(space: space, operations: [keepLocal]).first?.result == .applied(SyncServerVersion(4)))
    }

    @Test(arguments: ServerKind.allCases)
    func `creating a record the server already has is a conflict`(kind: ServerKind) async throws {
        guard let server = try await kind.make() else { return }
        let space = TestPostgres.space()
        _ = try await server.push(space: space, operations: [operation("phone", 1, put("notes", "a", "A1", base: nil))])
        let outcome = try await server.push(space: space, operations: [operation("laptop", 1, put("notes", "a", "L", base: nil))])
        #expect(
            outcome.first?.result.conflicts
                == [SyncConflict(
                    collection: "notes", key: "a", base: nil,
                    server: SyncRecordState(value: .text("A1"), version: SyncServerVersion(1)))])
        let missing = try await server.push(space: space, operations: [operation("laptop", 2, put("notes", "z", "Z", base: 5))])
        #expect(missing.first?.result.conflicts == [SyncConflict(collection: "notes", key: "z", base: SyncServerVersion(5), server: nil)])
    }

    @Test(arguments: ServerKind.allCases)
    func `a device builds on its own unacknowledged write but not on another device's`(kind: ServerKind)
        async throws
    {
        guard let server = try await kind.make() else { return }
        let space = TestPostgres.space()
        let first = operation("phone", 1, after: nil, put("notes", "a", "A1", base: nil))
        _ = try await server.push(space: space, operations: [first])
        // Two edits sent together, both based on version 1 (the second was made before the
        // first was acknowledged), each naming the one before it: no conflict with itself.
        let second = operation("phone", 2, after: first, put("notes", "a", "A2", base: 1))
        let third = operation("phone", 3, after: second, put("notes", "a", "A3", base: 1))
        let own = try await server.push(space: space, operations: [second, third])
        #expect(own.map(\.result) == [.applied(SyncServerVersion(2)), .applied(SyncServerVersion(3))])
        // Another device based on version 1 conflicts; and once it wrote, the phone's next edit
        // based on the old chain conflicts too.
        let other = try await server.push(space: space, operations: [operation("laptop", 1, put("notes", "a", "L", base: 1))])
        #expect(other.first?.result.conflicts.first?.server?.version == SyncServerVersion(3))
        _ = try await server.push(space: space, operations: [operation("laptop", 2, put("notes", "a", "L", base: 3))])
        let late = try await server.push(
            space: space, operations: [operation("phone", 4, after: third, put("notes", "a", "A4", base: 1))])
        #expect(late.first?.result.conflicts.first?.server == SyncRecordState(value: .text("L"), version: SyncServerVersion(4)))
        // Without a checked chain, the device id alone proves nothing (a copy of the store
        // could send it): the same two edits by hand get no own-write rule.
        _ = try await server.push(space: space, operations: [operation("tablet", 1, put("notes", "t", "T1", base: nil))])
        let unchecked = try await server.push(
            space: space,
            operations: [
                operation("tablet", 2, put("notes", "t", "T2", base: 5)),
                operation("tablet", 3, put("notes", "t", "T3", base: 5)),
            ])
        #expect(unchecked[0].result == .applied(SyncServerVersion(6)))
        #expect(unchecked[1].result.conflicts.first?.server?.version == SyncServerVersion(6))
    }

    @Test(arguments: ServerKind.allCases)
    func `last writer wins by the server's arrival order`(kind: ServerKind) async throws {
        guard let server = try await kind.make() else { return }
        let space = TestPostgres.space()
        func lww(_ text: String) -> SyncChange {
            SyncChange(collection: "prefs", key: "theme", value: .text(text), base: nil, policy: .lastWriterWins)
        }
        let first = try await server.push(space: space, operations: [operation("phone", 1, lww("dark"))])
        let second = try await server.push(space: space, operations: [operation("laptop", 1, lww("light"))])
        #expect(first.first?.result == .applied(SyncServerVersion(1)))
        #expect(second.first?.result == .applied(SyncServerVersion(2)))
        #expect(try await server.snapshot(space: space) == ["prefs/theme": .text("light")])
        // In one push, the later operation wins too.
        _ = try await server.push(
            space: space, operations: [operation("tablet", 1, lww("blue")), operation("tv", 1, lww("red"))])
        #expect(try await server.snapshot(space: space) == ["prefs/theme": .text("red")])
    }

    @Test(arguments: ServerKind.allCases)
    func `an operation older than the device's last applied one is refused and changes nothing`(
        kind: ServerKind
    ) async throws {
        guard let server = try await kind.make() else { return }
        let space = TestPostgres.space()
        _ = try await server.push(space: space, operations: [operation("phone", 5, put("notes", "a", "A5", base: nil))])
        let older = operation("phone", 4, put("notes", "b", "B4", base: nil))
        let outcomes = try await server.push(space: space, operations: [older, operation("phone", 5, put("notes", "c", "C", base: nil))])
        #expect(outcomes.map(\.result) == [.outOfOrder(lastSequence: 5), .outOfOrder(lastSequence: 5)])
        #expect(try await server.snapshot(space: space) == ["notes/a": .text("A5")])
        // Other devices have their own order; gaps are allowed.
        let next = try await server.push(
            space: space,
            operations: [operation("laptop", 1, put("notes", "b", "L", base: nil)), operation("phone", 9, put("notes", "c", "C", base: nil))])
        #expect(next.map(\.result) == [.applied(SyncServerVersion(2)), .applied(SyncServerVersion(3))])
    }

    @Test(arguments: ServerKind.allCases)
    func `a client of one space never sees or changes another space's records`(kind: ServerKind)
        async throws
    {
        guard let server = try await kind.make() else { return }
        let alice = TestPostgres.space("alice")
        let bob = TestPostgres.space("bob")
        let shared = operation("phone", 1, put("notes", "a", "alice's", base: nil))
        _ = try await server.push(space: alice, operations: [shared])
        // The same operation id and the same key in another space are independent.
        let bobs = try await server.push(space: bob, operations: [shared])
        #expect(bobs.first?.isRedelivery == false)
        _ = try await server.push(space: bob, operations: [operation("phone", 2, put("notes", "a", "bob's", base: 1))])
        _ = try await server.push(space: bob, operations: [operation("phone", 3, put("notes", "b", "bob only", base: nil))])

        #expect(try await server.snapshot(space: alice) == ["notes/a": .text("alice's")])
        #expect(try await server.snapshot(space: bob) == ["notes/a": .text("bob's"), "notes/b": .text("bob only")])
        #expect(try await server.pullAll(space: alice).cursor == SyncCursor(counter: 1))
        let nobody = try await server.pull(space: TestPostgres.space("nobody"), after: .start, limit: 10)
        #expect(nobody == SyncPage(changes: [], cursor: .start, hasMore: false))
    }

    @Test(arguments: ServerKind.allCases)
    func `deletions travel as tombstones and a record can come back`(kind: ServerKind) async throws {
        guard let server = try await kind.make() else { return }
        let space = TestPostgres.space()
        _ = try await server.push(space: space, operations: [operation("phone", 1, put("notes", "a", "A1", base: nil))])
        let (_, afterCreate) = try await server.pullAll(space: space)
        let deleted = try await server.push(space: space, operations: [operation("laptop", 1, delete("notes", "a", base: 1))])
        #expect(deleted.first?.result == .applied(SyncServerVersion(2)))

        let page = try await server.pull(space: space, after: afterCreate, limit: 10)
        #expect(page.changes == [SyncPulledChange(collection: "notes", key: "a", value: .tombstone, version: SyncServerVersion(2))])
        #expect(try await server.snapshot(space: space) == ["notes/a": .tombstone])

        // Writing it again is based on the tombstone's version.
        let blind = try await server.push(space: space, operations: [operation("phone", 2, put("notes", "a", "again", base: nil))])
        #expect(blind.first?.result.conflicts.first?.server == SyncRecordState(value: .tombstone, version: SyncServerVersion(2)))
        let back = try await server.push(space: space, operations: [operation("phone", 3, put("notes", "a", "again", base: 2))])
        #expect(back.first?.result == .applied(SyncServerVersion(3)))
        #expect(try await server.snapshot(space: space) == ["notes/a": .text("again")])
    }

    @Test(arguments: ServerKind.allCases)
    func `pages follow the cursor with no gap and no repeat, also inside one operation`(kind: ServerKind)
        async throws
    {
        guard let server = try await kind.make() else { return }
        let space = TestPostgres.space()
        // 10 operations of 1 record, one of 7 records (a page boundary falls inside it), then
        // rewrites of 3 early records (they move to the end of the feed).
        var operations = (1...10).map { operation("phone", Int64($0), put("notes", "k\($0)", "v\($0)", base: nil)) }
        operations.append(
            SyncOperation(
                device: "phone", sequence: 11,
                changes: (1...7).map { put("bulk", "b\($0)", "x\($0)", base: nil) }))
        operations += [1, 2, 3].map { i in
            operation("phone", Int64(11 + i), put("notes", "k\(i)", "w\(i)", base: Int64(i)))
        }
        _ = try await server.push(space: space, operations: operations)

        var cursor = SyncCursor.start
        var seen: [String: SyncPulledChange] = [:]
        var pages = 0
        while true {
            let page = try await server.pull(space: space, after: cursor, limit: 4)
            pages += 1
            #expect(page.cursor > cursor)
            for change in page.changes {
                let id = "\(change.collection)/\(change.key)"
                #expect(seen[id] == nil, "\(id) delivered twice")
                seen[id] = change
            }
            cursor = page.cursor
            if !page.hasMore { break }
        }
        #expect(pages == 5)  // 17 records, 4 per page
        #expect(seen.count == 17)
        #expect(seen["notes/k2"]?.value == .text("w2"))
        #expect(seen["notes/k2"]?.version == SyncServerVersion(13))
        #expect(seen["bulk/b5"]?.version == SyncServerVersion(11))
        #expect(cursor == SyncCursor(counter: 14))
        // Nothing new: an empty page, the cursor stays.
        #expect(try await server.pull(space: space, after: cursor, limit: 4) == SyncPage(changes: [], cursor: cursor, hasMore: false))
        // Re-pulling from an older cursor is harmless: the same latest values come back.
        let repeated = try await server.pullAll(space: space, after: SyncCursor(counter: 11, position: .init(collection: "bulk", key: "b3")), limit: 2)
        #expect(repeated.changes.map(\.key) == ["b4", "b5", "b6", "b7", "k1", "k2", "k3"])
        #expect(repeated.cursor == cursor)
    }

    @Test(arguments: ServerKind.allCases)
    func `several pages read at once are the pages of sequential pulls, also filtered and past the end`(kind: ServerKind)
        async throws
    {
        guard let server = try await kind.make(), let pager = server as? any SyncPagesPulling else {
            #expect(kind == .postgres && !TestPostgres.enabled, "every server kind reads several pages at once")
            return
        }
        let space = TestPostgres.space()
        // 12 operations of 1 record, one of 7 records (page boundaries fall inside it), one tag
        // in three.
        var operations = (1...12).map { i in
            operation("phone", Int64(i), put(i % 3 == 0 ? "tags" : "notes", "k\(i)", "v\(i)", base: nil))
        }
        operations.append(
            SyncOperation(device: "phone", sequence: 13, changes: (1...7).map { put("bulk", "b\($0)", "x\($0)", base: nil) }))
        _ = try await server.push(space: space, operations: operations)

        for collections: Set<String>? in [nil, ["tags", "bulk"]] {
            for (limit, pages) in [(4, 2), (4, 3), (3, 100), (1000, 5)] {
                var cursor = SyncCursor.start
                while true {
                    var sequential: [SyncPage] = []
                    var next = cursor
                    repeat {
                        let page = try await server.pull(space: space, after: next, limit: limit, collections: collections)
                        sequential.append(page)
                        next = page.cursor
                    } while sequential.last!.hasMore && sequential.count < pages
                    let read = try await pager.pullPages(
                        space: space, after: cursor, limit: limit, collections: collections, pages: pages)
                    #expect(read == sequential, "limit \(limit), pages \(pages), collections \(String(describing: collections))")
                    cursor = sequential.last!.cursor
                    if !sequential.last!.hasMore { break }
                }
                #expect(cursor == SyncCursor(counter: 13))
            }
        }
        // Past the end: one page, empty, at the counter.
        let done = try await pager.pullPages(space: space, after: SyncCursor(counter: 13), limit: 4, collections: nil, pages: 3)
        #expect(done == [SyncPage(changes: [], cursor: SyncCursor(counter: 13), hasMore: false)])
        let error = await #expect(throws: SyncError.self) {
            try await pager.pullPages(space: space, after: .start, limit: 0, collections: nil, pages: 3)
        }
        #expect(error?.code == .invalidRequest)
    }

    @Test(arguments: ServerKind.allCases)
    func `a pull of some collections pages through theirs only, and a complete page ends at the space's counter`(
        kind: ServerKind
    ) async throws {
        guard let server = try await kind.make() else { return }
        let space = TestPostgres.space()
        // 100 operations, one in ten in "tags"; one of 6 records with 2 tags (a page boundary
        // falls inside it); then "notes/k1" rewritten and "tags/t10" deleted at the end.
        var operations: [SyncOperation] = []
        for i in 1...100 {
            let change = i % 10 == 0 ? put("tags", "t\(i)", "v\(i)", base: nil) : put("notes", "k\(i)", "v\(i)", base: nil)
            operations.append(operation("phone", Int64(i), change))
        }
        operations.append(
            SyncOperation(
                device: "phone", sequence: 101,
                changes: (1...4).map { put("notes", "bulk\($0)", "b", base: nil) } + [
                    put("tags", "bulk-a", "a", base: nil), put("tags", "bulk-b", "b", base: nil),
                ]))
        operations.append(operation("phone", 102, put("notes", "k1", "w1", base: 1)))
        operations.append(operation("phone", 103, delete("tags", "t10", base: 10)))
        _ = try await server.push(space: space, operations: operations)

        for limit in [1, 3, 1000] {
            var cursor = SyncCursor.start
            var delivered: [String] = []
            while true {
                let page = try await server.pull(space: space, after: cursor, limit: limit, collections: ["tags"])
                #expect(page.cursor > cursor)
                #expect(page.changes.allSatisfy { $0.collection == "tags" })
                if page.hasMore {
                    let last = try #require(page.changes.last)
                    #expect(page.changes.count == limit)
                    #expect(
                        page.cursor == SyncCursor(counter: last.version.rawValue, position: .init(collection: "tags", key: last.key)),
                        "a page cut short ends at its last change")
                }
                delivered += page.changes.map { "\($0.key)@\($0.version)" + ($0.value == .tombstone ? "-" : "") }
                cursor = page.cursor
                if !page.hasMore { break }
            }
            #expect(
                delivered == (2...10).map { "t\($0 * 10)@\($0 * 10)" } + ["bulk-a@101", "bulk-b@101", "t10@103-"],
                "limit \(limit)")
            #expect(cursor == SyncCursor(counter: 103), "the cursor is the space's")
        }
        let both = try await server.pull(space: space, after: .start, limit: 1000, collections: ["tags", "notes"])
        #expect(both == (try await server.pull(space: space, after: .start, limit: 1000)))
        let unknown = try await server.pull(space: space, after: .start, limit: 10, collections: ["nothing"])
        #expect(unknown == SyncPage(changes: [], cursor: SyncCursor(counter: 103), hasMore: false))
        let none = try await server.pull(space: space, after: .start, limit: 10, collections: [])
        #expect(none == SyncPage(changes: [], cursor: SyncCursor(counter: 103), hasMore: false))
        let within = try await server.pull(
            space: space, after: SyncCursor(counter: 101, position: .init(collection: "notes", key: "bulk4")), limit: 10,
            collections: ["tags"])
        #expect(within.changes.map(\.key) == ["bulk-a", "bulk-b", "t10"])

        let tooMany = Set((0...SyncPullFilter.maximumCollections).map { "c\($0)" })
        for bad: Set<String> in [["tags", ""], ["ta\u{0}gs"], tooMany] {
            let error = await #expect(throws: SyncError.self) {
                try await server.pull(space: space, after: .start, limit: 10, collections: bad)
            }
            #expect(error?.code == .invalidRequest)
        }
    }

    @Test(arguments: ServerKind.allCases)
    func `a cursor ahead of the server gets the server's counter back, so the client sees it is behind`(
        kind: ServerKind
    ) async throws {
        // A lagging replica, or a server restored from a backup, is behind a device's cursor:
        // the page says so (a client refuses it) instead of keeping the cursor silently.
        guard let server = try await kind.make() else { return }
        let space = TestPostgres.space()
        _ = try await server.push(space: space, operations: [operation("phone", 1, put("notes", "a", "A", base: nil))])
        for ahead in [SyncCursor(counter: 50), SyncCursor(counter: 50, position: .init(collection: "notes", key: "m"))] {
            #expect(
                try await server.pull(space: space, after: ahead, limit: 10)
                    == SyncPage(changes: [], cursor: SyncCursor(counter: 1), hasMore: false))
        }
    }

    @Test(arguments: ServerKind.allCases)
    func `bad requests are refused with a clear error and nothing is applied`(kind: ServerKind)
        async throws
    {
        guard let server = try await kind.make() else { return }
        let space = TestPostgres.space()
        let good = operation("phone", 1, put("notes", "a", "A", base: nil))
        let bad: [(String, [SyncOperation])] = [
            ("", [good]),
            (space, [good, operation("", 2, put("notes", "b", "B", base: nil))]),
            (space, [good, operation("phone", 2, put("notes", "", "B", base: nil))]),
            (space, [good, operation("phone", 2, put("", "b", "B", base: nil))]),
            (space, [good, SyncOperation(device: "phone", sequence: 2, changes: [])]),
            (space, [good, operation("phone", 2, put("notes", "b", "1", base: nil), put("notes", "b", "2", base: nil))]),
            (space, [good, operation("phone", 2, put("notes", "nul\u{0}key", "B", base: nil))]),
            // Decomposed (not NFC): one push naming "café" both ways would be one key to Swift
            // and two rows to PostgreSQL.
            (space, [good, operation("phone", 2, put("notes", "cafe\u{301}", "B", base: nil))]),
            (space, [good, operation("phone", 2, put("notes", "caf\u{E9}", "1", base: nil), put("notes", "cafe\u{301}", "2", base: nil))]),
            (space, [good, operation("phone", 2, put("note\u{301}s", "b", "B", base: nil))]),
        ]
        for (space, operations) in bad {
            let error = await #expect(throws: SyncError.self) {
                try await server.push(space: space, operations: operations)
            }
            #expect(error?.code == .invalidRequest)
        }
        #expect(try await server.snapshot(space: space) == [:])
        for limit in [0, -1, SyncPage.maximumLimit + 1, Int.max] {
            let error = await #expect(throws: SyncError.self) {
                try await server.pull(space: space, after: .start, limit: limit)
            }
            #expect(error?.code == .invalidRequest)
            #expect(error?.message.contains("limit") == true)
        }
        #expect(try await server.push(space: space, operations: []) == [])
        // Precomposed is the stored form: pushed and pulled as it is.
        _ = try await server.push(space: space, operations: [operation("phone", 3, put("notes", "caf\u{E9}", "C", base: nil))])
        #expect(try await server.snapshot(space: space) == ["notes/caf\u{E9}": .text("C")])
    }
}
