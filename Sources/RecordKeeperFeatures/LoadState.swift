/// What a feature shows about content it loads: nothing yet, loading, loaded, or failed, with
/// the last confirmed content kept beside a refresh in progress or a refresh error.
///
/// A failed refresh does not throw away what the user was looking at: ``content`` still gives
/// the last loaded value, and ``error`` says why the refresh failed, so a screen can show both.
///
/// ``FeatureModel`` publishes a `LoadState` for you; the example below shows the transitions a
/// hand-written model makes.
///
/// ```swift
/// @Observable @MainActor final class BooksModel {
///     private(set) var state: LoadState<[Book]> = .idle
///     let books: RecordRepository<Book>
///     init(books: RecordRepository<Book>) { self.books = books }
///
///     func refresh() async {
///         state.startLoading()
///         do {
///             state.finish(.success(try await books.load()))
///         } catch {
///             state.finish(.failure(error))
///         }
///     }
/// }
/// ```
public enum LoadState<Value> {
    /// Nothing was requested yet.
    case idle
    /// A load is running; `previous` is the content confirmed before it, if any.
    case loading(previous: Value?)
    /// The content was loaded.
    case loaded(Value)
    /// The last load failed; `previous` is the content confirmed before it, if any.
    case failed(any Error, previous: Value?)

    /// The last confirmed content, whatever happened since; nil if none was ever loaded.
    public var content: Value? {
        switch self {
        case .idle: return nil
        case .loading(let previous): return previous
        case .loaded(let value): return value
        case .failed(_, let previous): return previous
        }
    }

    /// The error of the last load, if it failed.
    public var error: (any Error)? {
        if case .failed(let error, _) = self { return error }
        return nil
    }

    /// True while a load is running.
    public var isLoading: Bool {
        if case .loading = self { return true }
        return false
    }

    /// Marks a load as started, keeping the confirmed content.
    public mutating func startLoading() {
        self = .loading(previous: content)
    }

    /// Records a load's outcome: the new content, or the error beside the content confirmed
    /// before.
    public mutating func finish(_ result: Result<Value, any Error>) {
        switch result {
        case .success(let value): self = .loaded(value)
        case .failure(let error): self = .failed(error, previous: content)
        }
    }
}

extension LoadState: Sendable where Value: Sendable {}
