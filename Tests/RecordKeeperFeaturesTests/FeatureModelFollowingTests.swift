import Foundation
import Observation
import Testing
@testable import RecordKeeper
@testable import RecordKeeperFeatures
import TestHelpers

/// How a model follows a repository: committed changes applied to the content (no reload of
/// the collection), conflicts kept, and stopping is not a failure.
@Suite(
    .disabled(if: starvedUnderThreadSanitizer, "starved by the rest of the sanitized suite; .ci/run runs it alone under the sanitizer"),
    .timeLimit(.minutes(3)))
struct FeatureModelFollowingTests {
    @Test(arguments: StoreKind.allCases) @MainActor
    func `following applies each committed change to the content without loading the collection again`(
        kind: StoreKind
    ) async throws {
        try await withStore(kind) { store, _ in
            let books = RecordRepository<Book>(store: store, collection: "books")
            try await books.save([Book(id: "b", title: "B"), Book(id: "d", title: "D")])
            let model = FeatureModel(repository: books)
            await model.follow(books)
            await model.refresh()
            #expect(model.loadCount == 1)

            let other = RecordRepository<Book>(store: store, collection: "books")
            _ = try await other.load()
            try await other.save([Book(id: "a", title: "A"), Book(id: "c", title: "C")])
            await waitUntilObserved { model.state.content?.count == 4 }
            try await other.save(Book(id: "b", title: "B, edited"))
            try await other.delete("d")
            await waitUntilObserved { model.state.content?.map(\.id) == ["a", "b", "c"] }
            try await store.put("books", key: "e", data: RecordCoding.encode(Book(id: "e", title: "E")))
            await waitUntilObserved { model.state.content?.count == 4 }

            #expect(model.state.content == [
                Book(id: "a", title: "A"), Book(id: "b", title: "B, edited"), Book(id: "c", title: "C"), Book(id: "e", title: "E"),
            ])
            #expect(model.state.content == (try await other.load()), "in the order load() gives")
            #expect(model.loadCount == 1, "no change made the model load the whole collection")
        }
    }

    @Test(arguments: StoreKind.allCases) @MainActor
    func `a delete right after another writer's edit conflicts while following`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let books = RecordRepository<Book>(store: store, collection: "books")
            try await books.save(Book(id: "a", title: "A"))
            let model = FeatureModel(repository: books)
            await model.follow(books)
            await model.refresh()

            let other = RecordRepository<Book>(store: store, collection: "books")
            _ = try await other.load()
            try await other.save(Book(id: "a", title: "edited elsewhere"))
            await waitUntilObserved { model.state.content?.first?.title == "edited elsewhere" }

            let deleted = await model.perform("delete A") { try await books.delete("a") }
            #expect(!deleted, "the delete was based on the version before the other writer's edit")
            #expect(model.actionFailure?.error is RecordConflict)
            #expect(try await store.value("books", key: "a") != nil)
        }
    }

    @Test(arguments: StoreKind.allCases) @MainActor
    func `a save based on an older copy still conflicts when following made the model load`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let books = RecordRepository<Book>(store: store, collection: "books")
            try await books.save(Book(id: "a", title: "A"))  // the base of the next save
            let model = FeatureModel(repository: books)
            await model.follow(books)  // not refreshed: the first change makes it load

            let other = RecordRepository<Book>(store: store, collection: "books")
            _ = try await other.load()
            try await other.save(Book(id: "a", title: "edited elsewhere"))
            await waitUntilObserved { model.state.content?.first?.title == "edited elsewhere" && model.pendingOperations == 0 }

            await #expect(throws: RecordConflict.self, "the save is based on A before the other writer's edit") {
                try await books.save(Book(id: "a", title: "mine"))
            }
            #expect(try await store.value("books", key: "a").map { try RecordCoding.decode(Book.self, from: $0) }?.title
                    == "edited elsewhere")
            await model.refresh()  // an explicit refresh is the base of later saves
            try await books.save(Book(id: "a", title: "mine"))
        }
    }

    @Test(arguments: StoreKind.allCases) @MainActor
    func `a new item the repository knew to be absent still conflicts when following made the model load`(
        kind: StoreKind
    ) async throws {
        try await withStore(kind) { store, _ in
            let books = RecordRepository<Book>(store: store, collection: "books")
            try await books.save(Book(id: "a", title: "A"))
            _ = try await books.load()  // a whole load: "b" is known to be absent
            let model = FeatureModel(repository: books)
            await model.follow(books)  // not refreshed: the first change makes it load

            let other = RecordRepository<Book>(store: store, collection: "books")
            _ = try await other.load()
            try await other.save(Book(id: "b", title: "theirs"))
            await waitUntilObserved { model.state.content?.count == 2 && model.pendingOperations == 0 }

            await #expect(throws: RecordConflict.self, "a save of a new b is based on b being absent") {
                try await books.save(Book(id: "b", title: "mine"))
            }
        }
    }

    @Test @MainActor
    func `a model with its own loading function still refreshes on every change`() async throws {
        let store = RecordStore.inMemory()
        let books = RecordRepository<Book>(store: store, collection: "books")
        let model = FeatureModel<[Book]>(load: { try await books.load().filter { $0.title.hasPrefix("K") } })
        await model.follow(books)
        await model.refresh()
        try await books.save([Book(id: "a", title: "Kept"), Book(id: "b", title: "Left out")])
        await waitUntilObserved { model.state.content == [Book(id: "a", title: "Kept")] && model.pendingOperations == 0 }
        #expect(model.loadCount >= 2)
    }

    /// A model showing `[1]`, whose next load opens `loading`, waits for `release`, and then
    /// throws `CancellationError` if its task was cancelled meanwhile (as the store does).
    @MainActor
    /// A model loaded once with the first of `results`, whose second load opens `loading`,
    /// waits for `release` and then (checking for cancellation first, unless told not to)
    /// answers the second.
    static func modelWhoseSecondLoadWaits(
        _ results: [Result<[Int], any Error>] = [.success([1]), .success([2])], checkingCancellation: Bool = true
    ) async -> (FeatureModel<[Int]>, loading: Gate, release: Gate) {
        let loading = Gate()
        let release = Gate()
        let answers = Answers<[Int]>(results)
        let model = FeatureModel<[Int]>(load: {
            let answer = await answers.next()
            if await answers.served == 2 {
                await loading.open()
                await release.wait()
                if checkingCancellation { try Task.checkCancellation() }
            }
            return try answer.get()
        })
        await model.refresh()
        return (model, loading, release)
    }

    @Test @MainActor
    func `stopping following while a refresh it started is running shows no failure`() async throws {
        let (model, loading, release) = await Self.modelWhoseSecondLoadWaits()
        let (changes, continuation) = AsyncStream<Void>.makeStream()
        model.follow(changes)
        continuation.yield()
        await loading.wait()
        model.stopFollowing()
        await release.open()
        await waitUntilObserved { model.pendingOperations == 0 }
        #expect(model.state.error == nil, "cancellation the app asked for is not a failure: \(String(describing: model.state))")
        #expect(model.state.content == [1])
        #expect(!model.state.isLoading)
    }

    @Test @MainActor
    func `a refresh whose task is cancelled keeps the state it had`() async throws {
        let (model, loading, release) = await Self.modelWhoseSecondLoadWaits()
        let refresh = Task { await model.refresh() }
        await loading.wait()
        refresh.cancel()
        await release.open()
        await refresh.value
        #expect(model.state.error == nil)
        #expect(model.state.content == [1])
        #expect(!model.state.isLoading)
    }

    struct ReadFailure: Error, Equatable {}

    @Test @MainActor
    func `a real load failure during a cancelled refresh is shown, not taken for cancellation`() async throws {
        let (model, loading, release) = await Self.modelWhoseSecondLoadWaits(
            [.success([1]), .failure(ReadFailure())], checkingCancellation: false)
        let refresh = Task { await model.refresh() }
        await loading.wait()
        refresh.cancel()
        await release.open()
        await refresh.value
        #expect(model.state.error is ReadFailure, "\(String(describing: model.state))")
        #expect(model.state.content == [1], "the confirmed content stays beside the error")
    }

    @Test @MainActor
    func `a cancelled action is not shown as a failure`() async throws {
        let model = FeatureModel<[Int]>(load: { [1] })
        await model.refresh()
        let started = Gate()
        let action = Task {
            await model.perform("import words") {
                await started.open()
                try await Task.sleep(for: .seconds(600))
            }
        }
        await started.wait()
        action.cancel()
        #expect(await action.value == false)
        #expect(model.actionFailure == nil)
        #expect(model.state.content == [1])
    }

    @Test @MainActor
    func `a followed sequence that ends leaves nothing behind in the model`() async throws {
        let model = FeatureModel<[Int]>(load: { [1] })
        await model.refresh()
        for _ in 0..<50 {
            let (stream, continuation) = AsyncStream<Int>.makeStream()
            model.follow(stream)
            continuation.yield(1)
            continuation.finish()
        }
        // The tasks run on the main actor: yielding it lets each run to its end.
        for _ in 0..<100_000 where model.followers.count > 0 { await Task.yield() }
        #expect(model.followers.count == 0)
        #expect(model.state.content == [1])
    }
}
