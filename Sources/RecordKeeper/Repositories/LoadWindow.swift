import Dispatch
import Foundation
import RecordKeeperSync

/// The records of a load, copied out of the read statement a window at a time so that their
/// payloads can be decoded on several threads (``WindowDecoding``). SQLite stays on the
/// store's executor: only the copied bytes go to other threads, and the results come back in
/// key order.
///
/// A window is decoded on the reading thread when it is small (fewer than
/// `Limits.recordsPerThread` records or `Limits.bytesPerThread` bytes per thread) or the device
/// has one core; otherwise in chunks, each with its own decoder, on other threads while the
/// reading thread copies the next window, and on the reading thread too once it has.
struct LoadWindow {
    /// How large a window grows and how finely it is shared between threads.
    struct Limits: Sendable {
        /// Records and bytes a window holds before it is decoded: bound the copy (a few MiB
        /// beside the items themselves), however large the collection.
        var records = 16_384
        var bytes = 8 << 20
        /// The fewest records, or payload bytes, worth a thread of their own.
        var recordsPerThread = 1_024
        var bytesPerThread = 512 << 10
        /// The threads a window is decoded on, at most.
        var threads = max(1, ProcessInfo.processInfo.activeProcessorCount)

        static let standard = Limits()
    }

    let limits: Limits
    private var bytes: [UInt8] = []
    /// The end offset of each record's payload in `bytes`.
    private var ends: [Int] = []
    private(set) var keys: [String] = []
    private(set) var versions: [RecordVersion] = []
    /// Records not to decode, by position, with the error they stand for (written by a newer
    /// app, in a partial load).
    private var presets: [Int: RepositoryError] = [:]

    var count: Int { keys.count }
    var isFull: Bool { keys.count >= limits.records || bytes.count >= limits.bytes }

    /// The threads worth sharing this window's decoding: one per `recordsPerThread` records or
    /// per `bytesPerThread` bytes (large payloads fill a window with fewer records), at most
    /// `threads`, never more than the records.
    var threadsWorthIt: Int {
        let byRecords = count / max(1, limits.recordsPerThread)
        let byBytes = bytes.count / max(1, limits.bytesPerThread)
        return max(1, min(limits.threads, max(byRecords, byBytes), count))
    }

    init(_ limits: Limits) {
        self.limits = limits
    }

    /// Adds a record to decode.
    mutating func append(key: String, payload: UnsafeRawBufferPointer, version: RecordVersion) {
        bytes.append(contentsOf: payload)
        ends.append(bytes.count)
        keys.append(key)
        versions.append(version)
    }

    /// Adds a record that is not decoded and stands for `error`.
    mutating func append(key: String, version: RecordVersion, failure error: RepositoryError) {
        presets[keys.count] = error
        ends.append(bytes.count)
        keys.append(key)
        versions.append(version)
    }

    mutating func removeAll() {
        bytes.removeAll(keepingCapacity: true)
        ends.removeAll(keepingCapacity: true)
        keys.removeAll(keepingCapacity: true)
        versions.removeAll(keepingCapacity: true)
        presets.removeAll()
    }

    /// The payload of the record at `position`, borrowed from `all` (this window's bytes).
    fileprivate func payload(_ position: Int, in all: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        let start = position == 0 ? 0 : ends[position - 1]
        return UnsafeRawBufferPointer(rebasing: all[start..<ends[position]])
    }

    /// What decoding one chunk of a window gave: its items in order, and the positions (in the
    /// window) and errors of the records that gave none. Without `partial`, a chunk stops at
    /// its first failure.
    struct Chunk<Item> {
        var range: Range<Int>
        var items: [Item] = []
        var failures: [(position: Int, error: RepositoryError)] = []
    }

    /// Decodes the records in `range`, each by `decode` with one coder from `makeCoder`.
    fileprivate func decode<Item>(
        _ range: Range<Int>, partial: Bool, makeCoder: () -> PayloadCoder,
        _ decode: (UnsafeRawBufferPointer, String, PayloadCoder) throws(RepositoryError) -> Item
    ) -> Chunk<Item> {
        var chunk = Chunk<Item>(range: range)
        chunk.items.reserveCapacity(range.count)
        let coder = makeCoder()
        bytes.withUnsafeBytes { all in
            for position in range {
                do throws(RepositoryError) {
                    if !presets.isEmpty, let preset = presets[position] { throw preset }
                    chunk.items.append(try decode(payload(position, in: all), keys[position], coder))
                } catch {
                    chunk.failures.append((position, error))
                    if !partial { break }
                }
            }
        }
        return chunk
    }
}

/// One window being decoded: on the calling thread when it is small, else in chunks that
/// Dispatch's global queue and the caller share. Worker blocks start at once; ``finish()``
/// makes the caller decode every chunk no worker has claimed yet, then wait only for the chunks
/// workers are decoding. So a load always makes progress, even when the global queue has no
/// thread free, and no worker ever waits for anything.
///
/// `@unchecked Sendable` because the chunks' result slots are a raw buffer: a chunk is claimed
/// once, under `claims`' lock, and only its claimer writes its slot. A worker writes its slot,
/// then counts the chunk as done under the lock and signals `done`; ``finish()`` waits for
/// each signal and reads the count under the lock before it reads any slot, so every write
/// happens before the reads. The window itself is immutable once decoding starts. Worker
/// blocks hold the object until they end, so the buffer outlives every write; `deinit` waits
/// for nothing (a block that starts after ``finish()`` finds no chunk and ends).
final class WindowDecoding<Item: Sendable>: @unchecked Sendable {
    let window: LoadWindow
    private let partial: Bool
    private let makeCoder: @Sendable () -> PayloadCoder
    private let decode: @Sendable (UnsafeRawBufferPointer, String, PayloadCoder) throws(RepositoryError) -> Item
    private let ranges: [Range<Int>]
    private let results: UnsafeMutableBufferPointer<LoadWindow.Chunk<Item>?>
    private let claims = Protected(Claims())
    private let done = DispatchSemaphore(value: 0)

    private struct Claims {
        /// The next chunk nobody has claimed.
        var next = 0
        /// Chunks claimed by workers, and how many of them they have finished.
        var byWorkers = 0
        var finishedByWorkers = 0
    }

    /// Starts decoding `window`; every record is decoded by `decode` (on several threads at
    /// once, each with its own coder from `makeCoder`).
    init(
        _ window: LoadWindow, partial: Bool, makeCoder: @escaping @Sendable () -> PayloadCoder,
        _ decode: @escaping @Sendable (UnsafeRawBufferPointer, String, PayloadCoder) throws(RepositoryError) -> Item
    ) {
        self.window = window
        self.partial = partial
        self.makeCoder = makeCoder
        self.decode = decode
        let threads = window.threadsWorthIt
        // Twice the threads: a chunk whose thread is descheduled (a busy device) holds up less.
        let chunkCount = threads > 1 ? threads * 2 : 1
        let count = window.count
        ranges = (0..<chunkCount).map { index in (count * index / chunkCount)..<(count * (index + 1) / chunkCount) }
        results = .allocate(capacity: chunkCount)
        results.initialize(repeating: nil)
        // The caller is one of the threads (in `finish()`); the others come from the global queue.
        for _ in 1..<threads {
            DispatchQueue.global(qos: .userInitiated).async { [self] in work() }
        }
    }

    deinit {
        results.deinitialize()
        results.deallocate()
    }

    /// A worker's part: claims and decodes chunks until none is left.
    private func work() {
        while let index = claims.withLock({ claims -> Int? in
            guard claims.next < ranges.count else { return nil }
            claims.next += 1
            claims.byWorkers += 1
            return claims.next - 1
        }) {
            results[index] = window.decode(ranges[index], partial: partial, makeCoder: makeCoder, decode)
            claims.withLock { $0.finishedByWorkers += 1 }
            done.signal()
        }
    }

    /// Leaves the chunks nobody has started undecoded: for a load that ends before taking
    /// this window's items (a failure). Chunks being decoded end on their own.
    func cancel() {
        claims.withLock { $0.next = ranges.count }
    }

    /// The chunks in key order, once every one has been decoded: the caller decodes those
    /// nobody has started, then waits for those workers are decoding.
    func finish() -> [LoadWindow.Chunk<Item>] {
        while let index = claims.withLock({ claims -> Int? in
            guard claims.next < ranges.count else { return nil }
            claims.next += 1
            return claims.next - 1
        }) {
            results[index] = window.decode(ranges[index], partial: partial, makeCoder: makeCoder, decode)
        }
        let byWorkers = claims.withLock { $0.byWorkers }
        for _ in 0..<byWorkers { done.wait() }
        precondition(claims.withLock { $0.finishedByWorkers } == byWorkers, "every claimed chunk has finished")
        return results.map { $0! }
    }
}
