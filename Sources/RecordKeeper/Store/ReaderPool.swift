/// The readers of a file store: a small pool of `SerializedConnection`s, each a read-write
/// connection in `query_only` mode (see `StoreOpener.openForReading`) that serves reads outside
/// any write transaction. In WAL mode each sees the last committed state at once, even while
/// the writer (or another process) is in the middle of a write transaction.
///
/// A reader opens on the first read it serves, so a store read by one task at a time opens one;
/// the next opens only when reads overlap. The readers close with the store (`StoreCore.close()`)
/// and reopen the file now at the path after the writer found it replaced (their
/// `ReadState.fileGeneration`).
///
/// An in-memory store has no pool: a second connection cannot see its private database, so its
/// reads run on its writer (see `StoreCore.readers`).
final class ReaderPool: Sendable {
    /// How many readers a store may open: enough for a long read (an export, a full load) and
    /// point reads beside it, few enough that each reader's page cache stays cheap.
    static let capacity = 2

    let readers: [SerializedConnection<ReadState>]
    /// Per reader, the requests sent to its queue that have not finished.
    private let queued: Protected<QueuedReads>

    init(label: String, capacity: Int = ReaderPool.capacity) {
        let readerLabel = label + " reader"
        readers = (0..<capacity).map { SerializedConnection(ReadState(), label: readerLabel, number: $0 + 1) }
        queued = Protected(QueuedReads(count: capacity))
    }

    /// Runs `body` inline on the first reader whose lock is free now (see
    /// `SerializedConnection.attemptInline(_:)`); nil when none may serve it inline. A reader
    /// that declines ends the attempt: the others would meet the same lock or the same slow
    /// opening.
    func attemptInline<T>(_ body: (ReadState) throws -> T?) -> Result<T, any Error>? {
        for reader in readers {
            switch reader.attemptInline(body) {
            case .done(let result): return result
            case .busy: continue
            case .declined: return nil
            }
        }
        return nil
    }

    /// Runs `body` on the queue of the reader with the fewest requests waiting (the first of
    /// them on a tie, so a second reader opens only while reads overlap).
    func run<T: Sendable>(_ body: @Sendable (ReadState) throws -> T) async throws -> T {
        let index = queued.withLock { queued in
            var least = 0
            for index in queued.counts.indices where queued.counts[index] < queued.counts[least] { least = index }
            queued.counts[least] += 1
            return least
        }
        defer { queued.withLock { $0.counts[index] -= 1 } }
        return try await readers[index].run(body)
    }

    /// Closes every reader; the next read opens one again. Waits for a read in progress.
    func closeAll() {
        for reader in readers { reader.withLock { $0.connection = nil } }
    }

}

/// What `ReaderPool`'s queue lock guards: per reader, the requests sent to its queue that have
/// not finished. A class rather than `[Int]` itself: the runtime builds the metadata of
/// `Protected<[Int]>` from its mangled name when the first store of a process is created, about
/// 14 µs of a cold open (W5); a non-generic class's metadata is static.
final class QueuedReads {
    var counts: [Int]

    init(count: Int) { counts = Array(repeating: 0, count: count) }
}
