import Foundation
import Observation
import Testing
@testable import RecordKeeper
import RecordKeeperTestSupport
@testable import RecordKeeperFeatures
import TestHelpers

@Suite(
    .disabled(if: starvedUnderThreadSanitizer, "starved by the rest of the sanitized suite; .ci/run runs it alone under the sanitizer"),
    .timeLimit(.minutes(3)))
struct FeatureModelTests {
    @Test(arguments: StoreKind.allCases) @MainActor
    func `a refresh shows the stored list and a failed refresh keeps it beside the error`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let books = RecordRepository<Book>(store: store, collection: "books")
            try await books.save(Book(id: "a", title: "A"))
            let model = FeatureModel(repository: books)
            #expect(model.state.content == nil && model.state.error == nil)

            await model.refresh()
            #expect(model.state.content == [Book(id: "a", title: "A")])

            var changed = 0
            withObservationTracking { _ = model.state } onChange: { MainActor.assumeIsolated { changed += 1 } }
            try await store.put("books", key: "b", data: Data("garbage"))
            await model.refresh()
            #expect(changed == 1)
            #expect(model.state.content == [Book(id: "a", title: "A")])
            let error = try #require(model.state.error as? RepositoryError)
            #expect(error.key == "b")

            try await store.removeCollection("books")
            await model.refresh()
            #expect(model.state.content == [])
            #expect(model.state.error == nil)
        }
    }

    @Test(arguments: ["not a database", "directory is a file"])
    func `a store whose file cannot be opened is a failed state with no content, and the file is left unchanged`(
        obstacle: String
    ) async throws {
        try await withTemporaryDirectory { directory in
            let file = directory.appendingPathComponent("obstacle")
            let bytes = Data(String(repeating: "this is not a RecordKeeper store\n", count: 200).utf8)
            try bytes.write(to: file)
            let url = obstacle == "not a database" ? file : file.appendingPathComponent("records.sqlite")
            let books = RecordRepository<Book>(store: RecordStore(url: url), collection: "books")
            let model = await FeatureModel(repository: books)

            // Driven from a plain task, not the main actor.
            await Task.detached { await model.refresh() }.value
            let state = await model.state
            #expect(state.content == nil)
            #expect(state.error is RecordStoreError)

            let saved = await model.perform("save the book A") { try await books.save(Book(id: "a", title: "A")) }
            #expect(!saved)
            let failure = try #require(await model.actionFailure)
            #expect(failure.error is RecordStoreError)
            #expect(failure.message.hasPrefix("Could not save the book A: "))
            #expect(await model.state.content == nil)
            #expect(try Data(contentsOf: file) == bytes)
        }
    }

    @Test @MainActor
    func `a refresh in progress shows loading beside the confirmed content`() async throws {
        struct Offline: Error {}
        let loading = Gate()
        let release = Gate()
        let answers = Answers([.success([1, 2]), .failure(Offline()), .success([3])])
        let model = FeatureModel<[Int]>(load: {
            let answer = await answers.next()
            if await answers.served == 2 {
                await loading.open()
                await release.wait()
            }
            return try answer.get()
        })
        #expect(!model.state.isLoading && model.state.content == nil)
        await model.refresh()
        #expect(model.state.content == [1, 2])

        let refresh = Task { await model.refresh() }
        await loading.wait()
        #expect(model.state.isLoading)
        #expect(model.state.content == [1, 2])
        await release.open()
        await refresh.value
        #expect(!model.state.isLoading)
        #expect(model.state.error is Offline)
        #expect(model.state.content == [1, 2])

        await model.refresh()
        #expect(model.state.content == [3])
        #expect(model.state.error == nil)
    }

    @Test(arguments: StoreKind.allCases) @MainActor
    func `a failed action becomes a message and the content stays`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let books = RecordRepository<Book>(store: store, collection: "books")
            try await books.save(Book(id: "a", title: "A"))
            let model = FeatureModel(repository: books)
            await model.refresh()

            try await store.failNextCommitForTesting()
            let deleted = await model.perform("delete the book A") { try await books.delete("a") }
            #expect(!deleted)
            let failure = try #require(model.actionFailure)
            #expect(failure.action == "delete the book A")
            #expect(failure.error is RecordStoreError)
            #expect(failure.message.hasPrefix("Could not delete the book A: "))
            #expect(model.state.content == [Book(id: "a", title: "A")])
            #expect(model.state.error == nil)
            #expect(try await books.load() == [Book(id: "a", title: "A")])

            // A later action that succeeds clears the message and shows its effect.
            #expect(await model.perform("delete the book A") { try await books.delete("a") })
            #expect(model.actionFailure == nil)
            #expect(model.state.content == [])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a refresh asked for during a save waits for it and then sees the saved state`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let books = RecordRepository<Book>(store: store, collection: "books")
            let log = EventLog()
            let saving = Gate()
            let release = Gate()
            let model = await FeatureModel<[Book]>(load: {
                await log.append("load")
                return try await books.load()
            })

            let save = Task.detached {
                await model.perform("save the book A") {
                    await log.append("save started")
                    await saving.open()
                    await release.wait()
                    try await books.save(Book(id: "a", title: "A"))
                    await log.append("save committed")
                }
            }
            await saving.wait()
            let refresh = Task.detached { await model.refresh() }
            await waitUntilObserved { model.pendingOperations == 2 }
            #expect(await log.events == ["save started"])  // the refresh is waiting its turn
            await release.open()
            #expect(await save.value)
            await refresh.value

            #expect(await log.events == ["save started", "save committed", "load", "load"])
            #expect(await model.state.content == [Book(id: "a", title: "A")])
            #expect(await model.pendingOperations == 0)
        }
    }

    @Test @MainActor
    func `operations asked for from many tasks run one at a time in the order they were asked for`() async throws {
        let log = EventLog()
        let release = Gate()
        let model = FeatureModel<Int>(load: { 0 })
        var tasks: [Task<Bool, Never>] = []
        for index in 0..<8 {
            tasks.append(Task.detached {
                await model.perform("step \(index)") {
                    await log.append("start \(index)")
                    if index == 0 { await release.wait() }
                    await log.append("end \(index)")
                }
            })
            await waitUntilObserved { model.pendingOperations == index + 1 }
        }
        await release.open()
        for task in tasks { #expect(await task.value) }
        let expected = (0..<8).flatMap { ["start \($0)", "end \($0)"] }
        #expect(await log.events == expected)
    }

    @Test(arguments: StoreKind.allCases) @MainActor
    func `a followed repository refreshes the model when its collection changes`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let books = RecordRepository<Book>(store: store, collection: "books")
            let model = FeatureModel(repository: books)
            await model.follow(books)
            await model.refresh()
            #expect(model.state.content == [])

            // Another repository on the same store, and the store itself, write.
            let other = RecordRepository<Book>(store: store, collection: "books")
            try await other.save(Book(id: "a", title: "A"))
            await waitUntilObserved { model.state.content?.count == 1 }
            try await store.put("books", key: "b", data: RecordCoding.encode(Book(id: "b", title: "B")))
            await waitUntilObserved { model.state.content?.count == 2 }
            #expect(model.state.content == [Book(id: "a", title: "A"), Book(id: "b", title: "B")])

            // A record that does not decode is shown as a failure beside the list, not skipped;
            // following goes on, and repairing it shows the list again.
            try await store.put("books", key: "c", data: Data("garbage"))
            await waitUntilObserved { model.state.error != nil }
            #expect((model.state.error as? RepositoryError)?.key == "c")
            #expect(model.state.content?.count == 2)
            try await store.put("books", key: "c", data: RecordCoding.encode(Book(id: "c", title: "C")))
            await waitUntilObserved { model.state.content?.count == 3 && model.state.error == nil }
        }
    }

    @Test(arguments: StoreKind.allCases) @MainActor
    func `a follower that fell behind the change log drops the items removed meanwhile`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let books = RecordRepository<Book>(store: store, collection: "books")
            try await books.save([Book(id: "gone", title: "G"), Book(id: "a", title: "A")])
            let model = FeatureModel(repository: books)
            await model.follow(books)
            await model.refresh()
            #expect(model.state.content?.count == 2)
            // One commit removes `gone`, adds `b` and trims the log past the follower's position:
            // its stream gets a full state, which names no removal.
            try await store.write { transaction in
                try transaction.apply(
                    "books", changes: RecordChanges(upserts: ["b": RecordCoding.encode(Book(id: "b", title: "B"))], removals: ["gone"]))
                let engine = transaction.context.engine
                try engine.changeLog.trim(through: try engine.changeLog.bounds().last - 1)
            }
            await waitUntilObserved { model.state.content?.count == 2 && model.state.content?.contains { $0.id == "b" } == true }
            #expect(model.state.content == [Book(id: "a", title: "A"), Book(id: "b", title: "B")])
        }
    }

    @Test @MainActor
    func `a followed repository refreshes the model when another store on the same file writes`() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("records.sqlite")
            let store = RecordStore(url: url)
            let books = RecordRepository<Book>(store: store, collection: "books")
            let model = FeatureModel(repository: books)
            await model.follow(books)
            await model.refresh()
            #expect(model.state.content == [])

            // A second RecordStore on the file: another part of the app, or an app extension.
            let elsewhere = RecordRepository<Book>(store: RecordStore(url: url), collection: "books")
            try await elsewhere.save(Book(id: "a", title: "A"))
            await waitUntilObserved { model.state.content?.count == 1 }
            #expect(model.state.content == [Book(id: "a", title: "A")])
        }
    }

    @Test @MainActor
    func `a change stream that fails makes one more refresh and is no longer followed`() async throws {
        struct StreamBroke: Error {}
        let loads = Answers<Int>((1...3).map { .success($0) })
        let model = FeatureModel<Int>(load: { try await loads.next().get() })
        let (changes, continuation) = AsyncThrowingStream<Void, any Error>.makeStream()
        let ended = Gate()
        model.follow(SignallingSequence(base: changes, ended: ended))

        continuation.yield()
        continuation.finish(throwing: StreamBroke())
        await ended.wait()
        await waitUntilObserved { model.content == 2 && model.pendingOperations == 0 }
        #expect(await loads.served == 2)
        await model.refresh()
        #expect(model.content == 3)
    }

    @Test @MainActor
    func `a released model stops following and is not kept alive by its stream`() async throws {
        let store = RecordStore.inMemory()
        let books = RecordRepository<Book>(store: store, collection: "books")
        let ended = Gate()
        var model: FeatureModel<[Book]>? = FeatureModel(repository: books)
        weak let weakModel = model
        model?.follow(SignallingSequence(base: await books.changes(), ended: ended))
        #expect(store.observerCount("books") == 1)

        try await books.save(Book(id: "a", title: "A"))
        await waitUntilObserved { weakModel?.state.content?.count == 1 && weakModel?.pendingOperations == 0 }

        model = nil
        #expect(weakModel == nil)
        await ended.wait()  // the following task was cancelled and its stream ended
        #expect(store.observerCount("books") == 0)
        try await books.save(Book(id: "b", title: "B"))
        #expect(try await books.load().count == 2)
    }

    @Test @MainActor
    func `a model following a repository is released when its owner lets it go`() async throws {
        let store = RecordStore.inMemory()
        let books = RecordRepository<Book>(store: store, collection: "books")
        var model: FeatureModel<[Book]>? = FeatureModel(repository: books)
        weak let weakModel = model
        await model?.follow(books)
        try await books.save(Book(id: "a", title: "A"))
        await waitUntilObserved { weakModel?.state.content?.count == 1 && weakModel?.pendingOperations == 0 }
        model = nil
        #expect(weakModel == nil)
    }

    @Test @MainActor
    func `stopping following ends the streams while the model stays`() async throws {
        let store = RecordStore.inMemory()
        let books = RecordRepository<Book>(store: store, collection: "books")
        let ended = Gate()
        let model = FeatureModel(repository: books)
        model.follow(SignallingSequence(base: await books.changes(), ended: ended))
        model.stopFollowing()
        await ended.wait()
        try await books.save(Book(id: "a", title: "A"))
        #expect(model.state.content == nil)
        await model.refresh()
        #expect(model.state.content == [Book(id: "a", title: "A")])
    }
}
