import RecordKeeperTestSupport
import Foundation
import Observation
import Testing
@testable import RecordKeeper

/// An example feature model: it owns the list a screen shows and keeps the confirmed list
/// beside a refresh error, so a failed refresh never blanks the screen.
@Observable @MainActor
final class BookListModel {
    private(set) var state: LoadState<[Book]> = .idle
    private let books: RecordRepository<Book>

    init(books: RecordRepository<Book>) {
        self.books = books
    }

    func refresh() async {
        state.startLoading()
        do {
            state.finish(.success(try await books.load()))
        } catch {
            state.finish(.failure(error))
        }
    }

    /// Saves `book`; on success shows the stored list, on failure keeps what was shown and
    /// reports the error.
    func save(_ book: Book) async {
        do {
            try await books.save(book)
        } catch {
            state.finish(.failure(error))
            return
        }
        await refresh()
    }
}

@Suite struct LoadStateTests {
    @Test func `a failed refresh keeps the confirmed content beside the error`() {
        struct Offline: Error {}
        var state = LoadState<[Int]>.idle
        #expect(state.content == nil)
        state.startLoading()
        #expect(state.isLoading)
        state.finish(.success([1, 2]))
        #expect(state.content == [1, 2])
        #expect(state.error == nil)
        state.startLoading()
        #expect(state.content == [1, 2])
        state.finish(.failure(Offline()))
        #expect(state.content == [1, 2])
        #expect(state.error is Offline)
        #expect(!state.isLoading)
        state.finish(.success([]))
        #expect(state.content == [])
        #expect(state.error == nil)
    }

    @Test(arguments: StoreKind.allCases)
    func `a feature model shows the stored list and keeps it when a refresh fails`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let books = RecordRepository<Book>(store: store, collection: "books")
            try await books.save(Book(id: "a", title: "A"))
            let model = await BookListModel(books: books)

            await model.refresh()
            #expect(await model.state.content == [Book(id: "a", title: "A")])

            let changed = Counter()
            await MainActor.run {
                withObservationTracking { _ = model.state } onChange: { _ = changed.increment() }
            }
            try await store.put("books", key: "b", data: Data("garbage"))
            await model.refresh()
            #expect(changed.count == 1)
            #expect(await model.state.content == [Book(id: "a", title: "A")])
            let error = try #require(await model.state.error as? RepositoryError)
            #expect(error.key == "b")

            // A conflicting save is reported the same way, and the list stays.
            await model.save(Book(id: "b", title: "B"))
            #expect(await model.state.error is RecordConflict)
            #expect(await model.state.content == [Book(id: "a", title: "A")])

            try await store.removeCollection("books")
            await model.refresh()
            #expect(await model.state.content == [])
            #expect(await model.state.error == nil)
        }
    }
}
