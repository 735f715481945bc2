import Dispatch

/// The serial executor every `RecordStore` runs on: one private dispatch queue per store.
///
/// SQLite calls block (file I/O, `fsync` at commit, long scans). Running the store actor on its
/// own serial queue keeps that blocking work off Swift's cooperative thread pool, which has
/// only as many threads as cores; dispatch queues run on threads of their own that may block.
final class DatabaseExecutor: SerialExecutor {
    private let queue: DispatchQueue

    init(label: String) {
        queue = DispatchQueue(label: label, qos: .userInitiated)
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedSerialExecutor()
        queue.async {
            job.runSynchronously(on: executor)
        }
    }

    /// Runs `work` on the queue, after the jobs already enqueued, serially with them.
    func run(_ work: @escaping @Sendable () -> Void) {
        queue.async(execute: work)
    }

    func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }
}
