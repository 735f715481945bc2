import Dispatch
import Foundation

/// The records of a load, copied out of the read statement a window at a time so that their
/// payloads can be decoded on several threads (``WindowDecoding``). SQLite stays on the
/// store's executor: only the copied bytes go to other threads, and the results come back in
/// key order.
///
/// A window is decoded on the reading thread when it is small (fewer than
/// `Limits.recordsPerThread` records per thread) or the device has one core; otherwise in chunks,
/// each with its own decoder, while the reading thread copies the next window.
struct LoadWindow {
    /// How large a window grows and how finely it is shared between threads.
    struct Limits: Sendable {
        /// Records and bytes a window holds before it is decoded: bound the copy (a few MiB
        /// beside the items themselves), however large the collection.
        var records = 16_384
        var bytes = 8 << 20
        /// The fewest records worth a thread of their own.
        var recordsPerThread = 1_024
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

/// One window being decoded: on the calling thread when it is small, else in chunks on
/// Dispatch's global queue, while the caller reads the next window. ``finish()`` waits for the
/// chunks and gives them in key order.
///
/// `@unchecked Sendable` because the chunks' result slots are a raw buffer: chunk `i` writes
/// only slot `i`, and nothing reads the slots before ``finish()`` has waited for every chunk
/// (the group's wait orders those writes before the reads). The window itself is immutable
/// once decoding starts.
final class WindowDecoding<Item: Sendable>: @unchecked Sendable {
    let window: LoadWindow
    private let ranges: [Range<Int>]
    private let results: UnsafeMutableBufferPointer<LoadWindow.Chunk<Item>?>
    private let group = DispatchGroup()

    /// Starts decoding `window`; every record is decoded by `decode` (on several threads at
    /// once, each with its own coder from `makeCoder`).
    init(
        _ window: LoadWindow, partial: Bool, makeCoder: @escaping @Sendable () -> PayloadCoder,
        _ decode: @escaping @Sendable (UnsafeRawBufferPointer, String, PayloadCoder) throws(RepositoryError) -> Item
    ) {
        self.window = window
        let count = window.count
        let threads = min(window.limits.threads, count / max(1, window.limits.recordsPerThread))
        // Twice the threads: a chunk whose thread is descheduled (a busy device) holds up less.
        let chunkCount = threads > 1 ? threads * 2 : 1
        ranges = (0..<chunkCount).map { index in (count * index / chunkCount)..<(count * (index + 1) / chunkCount) }
        results = .allocate(capacity: chunkCount)
        results.initialize(repeating: nil)
        guard chunkCount > 1 else {
            results[0] = window.decode(ranges[0], partial: partial, makeCoder: makeCoder, decode)
            return
        }
        for index in ranges.indices {
            DispatchQueue.global().async(group: group) { [self] in
                results[index] = window.decode(ranges[index], partial: partial, makeCoder: makeCoder, decode)
            }
        }
    }

    deinit {
        group.wait()  // only ever already done: `finish()` waited; kept so no chunk outlives the buffer
        results.deinitialize()
        results.deallocate()
    }

    /// The chunks in key order, once every one has been decoded.
    func finish() -> [LoadWindow.Chunk<Item>] {
        group.wait()
        return results.map { $0! }
    }
}
