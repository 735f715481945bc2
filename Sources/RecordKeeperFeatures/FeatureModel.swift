import Foundation
import RecordKeeper
public import Observation

/// The observable model of one feature's content: a ``LoadState`` filled by a loading
/// function, actions that change the content, and (optionally) a change stream that makes it
/// refresh itself.
///
/// - A failed refresh keeps the last confirmed content beside the error (``LoadState/failed(_:previous:)``);
///   it never turns into an empty value.
/// - Operations (refreshes and actions) run one at a time, in the order they were asked for:
///   a refresh asked for while a save runs waits for the save and then sees the saved state.
/// - A failed action becomes ``actionFailure`` (with a message a screen can show); the content
///   stays as it was.
/// - ``follow(_:)`` refreshes on every element of a change stream; the model stops following
///   when it is released (the stream's task holds it weakly). A model made with
///   ``init(repository:)`` that follows that repository applies each committed change to its
///   content instead (see `follow(_ repository:)`), without loading the collection again.
/// - Cancellation is not a failure: a refresh whose load throws `CancellationError` (its task
///   was cancelled: ``stopFollowing()``, a screen's task that ended) leaves the state as it was
///   before it started, and a cancelled action shows no ``actionFailure``. Any other error is
///   shown, also when the task was cancelled meanwhile.
///
/// The model is isolated to the main actor, where a screen reads it; its loading function and
/// actions are `@Sendable` and run off the main actor. Call it from any task with `await`.
///
/// ```swift
/// let books = RecordRepository<Book>(store: store, collection: "books")
/// let model = FeatureModel(repository: books)
/// await model.follow(books)                     // refreshes after every committed change
/// await model.refresh()                         // model.state: .loaded([…])
/// await model.perform("save the book") { try await books.save(book) }
/// if let failure = model.actionFailure { show(failure.message) }
/// ```
@MainActor
@Observable
public final class FeatureModel<Value: Sendable> {
    /// What the screen shows: nothing yet, loading, loaded, or failed beside the last
    /// confirmed content.
    public private(set) var state: LoadState<Value> = .idle

    /// The last action that failed, until ``dismissActionFailure()`` or an action succeeds.
    public private(set) var actionFailure: ActionFailure?

    /// How many operations (refreshes and actions) are running or waiting for their turn.
    public private(set) var pendingOperations = 0

    /// The last confirmed content, whatever happened since.
    public var content: Value? { state.content }

    @ObservationIgnored private let load: @Sendable () async throws -> Value
    /// What a refresh asked for by a followed change stream runs instead of `load`, when it
    /// differs (a query model's runs leave the versions its repository knows as they are).
    @ObservationIgnored private let loadForChange: (@Sendable () async throws -> Value)?
    @ObservationIgnored private var turns = OperationTurns()
    /// Refreshes asked for by change streams that have not started yet: a change arriving
    /// while one waits needs no second refresh, since the waiting one will see it.
    @ObservationIgnored private var waitingFollowRefreshes = 0
    /// The tasks following change streams; cancelled when the model is released.
    @ObservationIgnored let followers = FollowerTasks()
    /// The repository whose `load()` is the content (set by `init(repository:)`): following it
    /// applies its changes to the content instead of refreshing.
    @ObservationIgnored var contentSource: ObjectIdentifier?
    /// How many times the loading function ran (for tests).
    @ObservationIgnored var loadCount = 0

    /// Creates a model whose content comes from `load`. Does no work until ``refresh()``.
    /// - Parameter load: Reads the content; a thrown error is shown beside the last confirmed
    ///   content. It runs off the main actor.
    public init(load: @escaping @Sendable () async throws -> Value) {
        self.load = load
        self.loadForChange = nil
    }

    /// A model whose refreshes run `load`, and whose refreshes for a followed change run
    /// `loadForChange`.
    init(load: @escaping @Sendable () async throws -> Value, loadForChange: @escaping @Sendable () async throws -> Value) {
        self.load = load
        self.loadForChange = loadForChange
    }

    // MARK: Operations

    /// Loads the content after every operation asked for before it has finished.
    ///
    /// While it runs the state is `.loading(previous:)`; then `.loaded` with the new content,
    /// or `.failed` with the error beside the content confirmed before.
    public func refresh() async {
        await takeTurn()
        defer { releaseTurn() }
        await runRefresh()
    }

    /// Runs `action` in its turn, then refreshes so the state shows its effect.
    ///
    /// When the action throws, nothing is refreshed and the content stays as it was;
    /// ``actionFailure`` names the action and the error. An action that throws
    /// `CancellationError` (its task was cancelled) returns false without a failure to show.
    /// A successful action clears an earlier failure.
    ///
    /// - Parameters:
    ///   - name: What the action does, in words a person reads after "Could not", such as
    ///     `"delete the word ballena"`.
    ///   - action: The change to make; it runs off the main actor.
    /// - Returns: Whether the action succeeded (the refresh after it may still fail, which the
    ///   state shows).
    @discardableResult
    public func perform(_ name: String, _ action: @escaping @Sendable () async throws -> Void) async -> Bool {
        await takeTurn()
        defer { releaseTurn() }
        do {
            try await action()
        } catch is CancellationError {
            // Cancelled (a screen's task that ended): not a failure to show.
            return false
        } catch {
            actionFailure = ActionFailure(action: name, error: error)
            return false
        }
        actionFailure = nil
        await runRefresh()
        return true
    }

    /// Forgets the last action failure, once the screen has shown it.
    public func dismissActionFailure() {
        actionFailure = nil
    }

    // MARK: Following changes

    /// Refreshes after every element of `changes`, until the sequence ends, throws, or the
    /// model is released.
    ///
    /// A thrown error is not hidden: the model refreshes once more (so a failure to read shows
    /// in ``state``) and stops following that sequence. Changes that arrive while a refresh
    /// they asked for is still waiting share that refresh.
    ///
    /// The task that reads `changes` holds the model weakly, and is cancelled when the model
    /// is released, which ends the iteration of a cancellable sequence such as an
    /// `AsyncStream`.
    public func follow<Changes>(_ changes: Changes)
    where Changes: AsyncSequence & Sendable, Changes.Element: Sendable {
        follow(changes) { model, _ in await model.refreshForChange() }
    }

    /// Follows `changes`, calling `handle` in the model for each element, and refreshing once
    /// when the sequence throws; the task holds the model weakly.
    func follow<Changes>(
        _ changes: Changes, _ handle: @escaping @MainActor (FeatureModel, Changes.Element) async -> Void
    ) where Changes: AsyncSequence & Sendable, Changes.Element: Sendable {
        // The task runs on the main actor, after this call added it.
        let id = followers.nextID()
        let task = Task { [weak self] in
            defer { self?.followers.finished(id) }
            do {
                for try await element in changes {
                    guard let model = self else { return }
                    await handle(model, element)
                }
            } catch {
                guard let model = self else { return }
                await model.refreshForChange()
            }
        }
        followers.add(task, id: id)
    }

    /// Stops following every change stream this model follows.
    public func stopFollowing() {
        followers.cancelAll()
    }

    // MARK: Turns

    private func runRefresh(forChange: Bool = false) async {
        let before = state
        state.startLoading()
        loadCount += 1
        do {
            let value = try await (forChange ? loadForChange ?? load : load)()
            state.finish(.success(value))
        } catch is CancellationError {
            // Cancellation the app asked for (stopFollowing, a screen's task that ended) is
            // not a failure of the content: it stays what it was. Any other error is shown,
            // also when the task was cancelled meanwhile.
            state = before
        } catch {
            state.finish(.failure(error))
        }
    }

    /// Applies one change to loaded content in its turn (ordered with refreshes and actions);
    /// content that is not loaded (never, or beside an error) is refreshed instead, as is
    /// content `apply` cannot take the change into (it throws).
    func applyForChange(_ apply: (Value) throws -> Value) async {
        guard waitingFollowRefreshes == 0 else { return }  // a waiting refresh will see it
        await takeTurn()
        defer { releaseTurn() }
        guard case .loaded(let content) = state else {
            await runRefresh(forChange: true)
            return
        }
        do {
            state = .loaded(try apply(content))
        } catch {
            await runRefresh(forChange: true)
        }
    }

    func refreshForChange() async {
        guard waitingFollowRefreshes == 0 else { return }
        waitingFollowRefreshes += 1
        await takeTurn()
        waitingFollowRefreshes -= 1
        defer { releaseTurn() }
        await runRefresh(forChange: true)
    }

    private func takeTurn() async {
        pendingOperations += 1
        if turns.takeIfFree() { return }
        await withCheckedContinuation { turns.enqueue($0) }
    }

    private func releaseTurn() {
        pendingOperations -= 1
        turns.release()
    }
}

/// An action of a ``FeatureModel`` that failed: what it was, why, and a message to show.
public struct ActionFailure: Sendable, CustomStringConvertible {
    /// What the action does, as given to ``FeatureModel/perform(_:_:)``.
    public let action: String
    /// The error the action threw.
    public let error: any Error

    /// "Could not <action>: <the error's description>".
    public var message: String {
        "Could not \(action): \(FeatureModelText.describe(error))"
    }

    /// The same as ``message``.
    public var description: String { message }
}

/// Text helpers shared by the feature layer.
enum FeatureModelText {
    /// A person-readable description of `error`: its `LocalizedError` description when it has
    /// one, otherwise `String(describing:)`.
    static func describe(_ error: any Error) -> String {
        if let localized = error as? any LocalizedError, let text = localized.errorDescription {
            return text
        }
        return String(describing: error)
    }
}
