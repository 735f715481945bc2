/// The tasks a ``FeatureModel`` runs to follow change streams. The model owns the only
/// reference, so when the model is released this is released too and cancels them: a task
/// waiting for the next change of an `AsyncStream` ends at once, and the stream unregisters.
final class FollowerTasks {
    private var tasks: [Task<Void, Never>] = []

    func add(_ task: Task<Void, Never>) {
        tasks.removeAll { $0.isCancelled }
        tasks.append(task)
    }

    func cancelAll() {
        for task in tasks { task.cancel() }
        tasks.removeAll()
    }

    deinit {
        for task in tasks { task.cancel() }
    }
}
