package import Dispatch

/// The serial executor of blocking database work: one private dispatch queue per store (every
/// `RecordStore` of RecordKeeper) or per connection (every `PostgresConnection` of
/// RecordKeeperPostgres). It lives in this module, the one both sides import, so that there is
/// one executor type and the server side needs nothing of the store.
///
/// SQLite calls block (file I/O, `fsync` at commit, long scans), and so do libpq's (a query
/// waits for the server's answer, a push may wait on another's row lock). Running the actor on
/// its own serial queue keeps that blocking work off Swift's cooperative thread pool, which has
/// only as many threads as cores; dispatch queues run on threads of their own that may block.
///
/// The queue is made on first use, not with the executor: a store's first requests are often
/// inline reads that never reach a queue, and the first dispatch queue a process makes costs
/// 30–60 µs (the dispatch library's and its Swift overlay's set-up), a twentieth of a cold
/// open to a first read (W5).
///
/// `@unchecked Sendable`: `made`, the one mutable field, is read and written only with `lock`
/// held.
package final class DatabaseExecutor: SerialExecutor, @unchecked Sendable {
    private let label: String
    private let number: Int?
    private let lock = PlatformLock()
    private var made: DispatchQueue?

    /// The queue itself, for dispatch sources (timers, file events) whose handlers must run
    /// serially with the executor's work.
    package var queue: DispatchQueue {
        lock.lock()
        defer { lock.unlock() }
        if let made { return made }
        // The number joins the label only now: a store's first integer-to-text conversion
        // cost it about 20 µs, and most of its queues are never made.
        let queue = DispatchQueue(label: number.map { label + " " + String($0) } ?? label, qos: .userInitiated)
        made = queue
        return queue
    }

    /// An executor whose queue is named `label`, followed by `number` when given.
    package init(label: String, number: Int? = nil) {
        self.label = label
        self.number = number
    }

    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedSerialExecutor()
        let queue = queue
        queue.async {
            job.runSynchronously(on: executor)
        }
    }

    /// Runs `work` on the queue, after the jobs already enqueued, serially with them.
    package func run(_ work: @escaping @Sendable () -> Void) {
        queue.async(execute: work)
    }

    /// Runs `work` on the queue, after the jobs already enqueued, and waits for it: never from
    /// the queue itself.
    package func sync<T>(_ work: () throws -> T) rethrows -> T {
        try queue.sync(execute: work)
    }

    package func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }
}
