/// The tasks a ``FeatureModel`` runs to follow change streams. The model owns the only
/// reference, so when the model is released this is released too and cancels them: a task
/// waiting for the next change of an `AsyncStream` ends at once, and the stream unregisters.
/// A task that ends (its sequence finished or threw) leaves by itself, so a model that follows
/// many short sequences keeps none of them.
final class FollowerTasks {
    private var tasks: [Int: Task<Void, Never>] = [:]
    private var lastID = 0

    /// The tasks still following.
    var count: Int { tasks.count }

    /// The identity the next task is added under (for its ``finished(_:)``).
    func nextID() -> Int {
        lastID += 1
        return lastID
    }

    func add(_ task: Task<Void, Never>, id: Int) {
        tasks[id] = task
    }

    /// The task added under `id` ended.
    func finished(_ id: Int) {
        tasks[id] = nil
    }

    func cancelAll() {
        for task in tasks.values { task.cancel() }
        tasks.removeAll()
    }

    deinit {
        for task in tasks.values { task.cancel() }
    }
}
