import Dispatch

/// The serial executor a `PostgresConnection` runs on: one private dispatch queue per
/// connection.
///
/// libpq calls block on the network (a query waits for the server's answer, a push transaction
/// may wait on another's row lock). Running the connection actor on its own serial queue keeps
/// that blocking off Swift's cooperative thread pool, which has only as many threads as cores.
final class PostgresExecutor: SerialExecutor {
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

    func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }
}
