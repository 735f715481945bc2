public import Foundation

/// A snapshot read back from a ``SnapshotCache``: the value and when it was saved.
public struct CachedSnapshot<T: Sendable>: Sendable {
    /// The value saved.
    public let value: T
    /// When it was saved (the saving process's clock).
    public let savedAt: Date

    /// Creates a snapshot value.
    public init(value: T, savedAt: Date) {
        self.value = value
        self.savedAt = savedAt
    }
}

extension CachedSnapshot: Equatable where T: Equatable {}

/// A directory of JSON snapshots of data that can be fetched again: feeds, catalogues,
/// remote listings. Not for the user's own records (use ``RecordStore`` for those).
///
/// One cache holds values of any `Codable` type, one file per key:
/// - **Atomic.** A save writes a temporary file in the same directory, syncs it and renames it
///   over the old snapshot, so a crash leaves the old snapshot or the new one, never half of one.
/// - **Private.** Files are created `0600`; the directory, when the cache creates it, `0700`.
/// - **Any key, one file, inside the directory.** A key is never used as a path: its UTF-8
///   bytes name the file in hexadecimal (keys longer than 100 bytes by their SHA-256), and the
///   full key is stored in the file and checked when loading. `../x`, `/etc/passwd`, `.`,
///   keys that differ only in case or Unicode normalization, and very long keys each get
///   their own file in the directory.
/// - **Honest.** ``load(_:forKey:)`` returns nil only when nothing was saved for the key (or it
///   was removed); a truncated, corrupt or undecodable snapshot throws
///   ``SnapshotCacheError`` naming the key, so the caller can fetch again.
///
/// Creating a cache does no I/O: the directory is created by the first save. File work runs on
/// the cache's own serial queue, not on Swift's cooperative threads.
///
/// ```swift
/// let cache = SnapshotCache(directory: caches.appending(path: "feeds"))
/// try await cache.save(feed, forKey: "https://example.com/feed.json")
/// if let cached = try await cache.load(Feed.self, forKey: "https://example.com/feed.json") {
///     show(cached.value, fetchedAt: cached.savedAt)
/// }
/// ```
public actor SnapshotCache {
    /// The directory holding the snapshots.
    public nonisolated let directory: URL
    /// The data-protection class of the directory (when the cache creates it) and of every
    /// snapshot file (see ``FileProtection``; no effect on macOS and Linux).
    public nonisolated let fileProtection: FileProtection

    nonisolated let executor: DatabaseExecutor
    /// Test seam: runs after the temporary file is complete and before it is renamed over
    /// the snapshot (may throw, to stand for a crash at that point).
    let beforeRename: (@Sendable (_ temporary: URL, _ destination: URL) throws -> Void)?
    /// Used only on the actor.
    private let encoder = RecordCoding.makeEncoder()
    private let decoder = RecordCoding.makeDecoder()

    /// The serial executor the cache's file work runs on.
    public nonisolated var unownedExecutor: UnownedSerialExecutor {
        executor.asUnownedSerialExecutor()
    }

    /// Creates a cache for the snapshots in `directory`, whose files get the `fileProtection`
    /// class (Apple platforms but macOS). Does no I/O.
    public init(directory: URL, fileProtection: FileProtection = .systemDefault) {
        self.init(directory: directory, fileProtection: fileProtection, beforeRename: nil)
    }

    init(
        directory: URL, fileProtection: FileProtection = .systemDefault,
        beforeRename: (@Sendable (URL, URL) throws -> Void)?
    ) {
        self.directory = directory.standardizedFileURL
        self.fileProtection = fileProtection
        self.beforeRename = beforeRename
        self.executor = DatabaseExecutor(label: "RecordKeeper.SnapshotCache \(directory.path)")
    }

    /// Saves `value` as the snapshot for `key`, replacing the previous one atomically.
    ///
    /// Creates the directory (`0700`) if it does not exist.
    /// - Throws: ``SnapshotCacheError``: `unencodableValue` before anything is written;
    ///   `cannotWrite` when the directory or file cannot be written (the previous snapshot is
    ///   then unchanged).
    public func save<T: Encodable & Sendable>(_ value: T, forKey key: String) async throws {
        let name = Self.fileName(forKey: key)
        let data: Data
        do {
            data = try encoder.encode(SnapshotEnvelope(format: SnapshotFiles.currentFormat, key: key, savedAt: Date(), value: value))
        } catch {
            throw SnapshotCacheError(.unencodableValue, operation: "save", key: key, path: path(of: name), underlying: error)
        }
        try SnapshotFiles.writeAtomically(
            data, directory: directory.path, name: name, key: key, protection: fileProtection, beforeRename: beforeRename)
    }

    /// The snapshot saved for `key`, or nil when none was saved (or it was removed).
    /// - Throws: ``SnapshotCacheError`` naming the key: `corruptSnapshot` when the file is
    ///   truncated, not a snapshot, or the snapshot of another key; `undecodableValue` when it
    ///   does not decode as `T`; `cannotRead` when it cannot be read.
    public func load<T: Decodable & Sendable>(_ type: T.Type, forKey key: String) async throws -> CachedSnapshot<T>? {
        let path = path(of: Self.fileName(forKey: key))
        guard let data = try SnapshotFiles.readIfPresent(path, key: key) else { return nil }
        let header: SnapshotHeader
        do {
            header = try decoder.decode(SnapshotHeader.self, from: data)
        } catch {
            throw SnapshotCacheError(
                .corruptSnapshot, operation: "load", key: key, path: path, underlying: error,
                detail: "the file is not a complete snapshot (\(data.count) bytes)")
        }
        guard header.format == SnapshotFiles.currentFormat else {
            throw SnapshotCacheError(
                .corruptSnapshot, operation: "load", key: key, path: path,
                detail: "unknown snapshot format \(header.format)")
        }
        guard header.key == key else {
            throw SnapshotCacheError(
                .corruptSnapshot, operation: "load", key: key, path: path,
                detail: "the file holds the snapshot of the key \(RecordStoreError.quoted(header.key))")
        }
        do {
            let value = try decoder.decode(SnapshotValue<T>.self, from: data).value
            return CachedSnapshot(value: value, savedAt: header.savedAt)
        } catch {
            throw SnapshotCacheError(
                .undecodableValue, operation: "load", key: key, path: path, underlying: error,
                detail: "the snapshot is not a \(T.self)")
        }
    }

    /// Removes the snapshot for `key`. Removing a key that has none does nothing.
    /// - Throws: ``SnapshotCacheError`` (`cannotRemove`).
    public func remove(forKey key: String) async throws {
        if try SnapshotFiles.remove(path(of: Self.fileName(forKey: key)), key: key, operation: "remove") {
            try SnapshotFiles.syncDirectory(directory.path, key: key, operation: "remove")
        }
    }

    /// Removes every snapshot (and temporary file left by an interrupted save) in the
    /// directory. Other files in the directory are left alone; the directory stays.
    /// - Throws: ``SnapshotCacheError`` (`cannotRead`, `cannotRemove`) at the first file that
    ///   cannot be removed.
    public func removeAll() async throws {
        var removed = false
        for name in try SnapshotFiles.cacheFiles(in: directory.path) {
            removed = try SnapshotFiles.remove(path(of: name), key: nil, operation: "removeAll") || removed
        }
        // Durable, as saves are: a power loss right after must not bring the snapshots back.
        if removed { try SnapshotFiles.syncDirectory(directory.path, key: nil, operation: "removeAll") }
    }

    // MARK: Names

    /// The file name for `key`: `k-<hex of the UTF-8 bytes>.snapshot` for keys up to 100
    /// bytes, `h-<SHA-256 hex>.snapshot` beyond. Only `[0-9a-z.-]`, never `.` or `..`, at
    /// most 211 bytes; different keys give different names (the prefixes keep the two kinds
    /// apart, and the stored key is checked on load).
    static func fileName(forKey key: String) -> String {
        let bytes = Array(key.utf8)
        if bytes.count <= maximumHexKeyBytes {
            return "k-" + Hex.encode(bytes) + fileSuffix
        }
        return "h-" + SHA256.hexDigest(bytes) + fileSuffix
    }

    static let maximumHexKeyBytes = 100
    static let fileSuffix = ".snapshot"
    static let temporaryPrefix = ".snapshot-tmp-"

    private nonisolated func path(of name: String) -> String {
        directory.path + "/" + name
    }
}

/// What a snapshot file holds (JSON by ``/RecordKeeperCoding/RecordCoding``).
struct SnapshotEnvelope<T: Encodable>: Encodable {
    let format: Int
    let key: String
    let savedAt: Date
    let value: T
}

/// The envelope without its value, to check it before decoding the value.
struct SnapshotHeader: Decodable {
    let format: Int
    let key: String
    let savedAt: Date
}

/// The value of an envelope.
struct SnapshotValue<T: Decodable>: Decodable {
    let value: T
}
