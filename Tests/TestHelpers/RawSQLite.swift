import CSQLite
public import Foundation

/// Runs SQL through a separate raw connection, as another program would. With `keepingLog`,
/// the connection closes without checkpointing: what the statements wrote in WAL mode stays
/// in the `-wal` (as after a crash, or a program still running), not in the main file.
/// - Throws: ``RawSQLiteError`` with SQLite's message when opening or a statement fails.
public func rawSQLite(_ url: URL, _ sql: String, keepingLog: Bool = false) throws {
    var handle: OpaquePointer?
    defer { sqlite3_close(handle) }
    guard sqlite3_open(url.path, &handle) == SQLITE_OK else {
        throw RawSQLiteError(message: "open \(url.path): " + String(cString: sqlite3_errmsg(handle)))
    }
    if keepingLog {
        guard recordkeeper_sqlite_no_checkpoint_on_close(handle) == SQLITE_OK else {
            throw RawSQLiteError(message: "no checkpoint on close: " + String(cString: sqlite3_errmsg(handle)))
        }
    }
    var message: UnsafeMutablePointer<CChar>?
    guard sqlite3_exec(handle, sql, nil, nil, &message) == SQLITE_OK else {
        let text = message.map { String(cString: $0) } ?? "?"
        sqlite3_free(message)
        throw RawSQLiteError(message: text)
    }
}

/// A failure of ``rawSQLite(_:_:)`` or ``ForeignWriteLock``.
public struct RawSQLiteError: Error, CustomStringConvertible {
    public let message: String
    public init(message: String) { self.message = message }
    public var description: String { "raw SQLite: \(message)" }
}

/// A raw connection of "another process" in a transaction it began, until `end()`: what
/// ``ForeignWriteLock`` and ``ForeignReadSnapshot`` hold.
///
/// `@unchecked Sendable`: the handle is used by `init` and then once by `end()` (or `deinit`),
/// which a test calls after it is done with the transaction, never at the same time.
private final class RawTransaction: @unchecked Sendable {
    private var handle: OpaquePointer?

    init(_ url: URL, begin sql: String, purpose: String) throws {
        guard sqlite3_open(url.path, &handle) == SQLITE_OK, sqlite3_exec(handle, sql, nil, nil, nil) == SQLITE_OK else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close(handle)
            handle = nil
            throw RawSQLiteError(message: "could not \(purpose): \(message)")
        }
    }

    /// Commits (nothing was written) and closes the connection.
    func end() {
        guard handle != nil else { return }
        sqlite3_exec(handle, "COMMIT", nil, nil, nil)
        sqlite3_close(handle)
        handle = nil
    }

    deinit { end() }
}

/// Another "process" holding a store's write lock: a raw connection in an immediate
/// transaction, until ``release()``.
public final class ForeignWriteLock: Sendable {
    private let transaction: RawTransaction

    /// Opens `url` and takes its write lock (`BEGIN IMMEDIATE`).
    public init(_ url: URL) throws {
        transaction = try RawTransaction(url, begin: "BEGIN IMMEDIATE", purpose: "take the write lock")
    }

    /// Lets go of the lock and closes the connection.
    public func release() { transaction.end() }
}

/// Another "process" holding a read snapshot of a store: a raw connection in a read
/// transaction started by `init`, until ``release()``. While it holds the snapshot, a
/// truncating checkpoint cannot finish (it waits for every reader to see the newest commit).
public final class ForeignReadSnapshot: Sendable {
    private let transaction: RawTransaction

    /// Opens `url` and starts a read transaction on it.
    public init(_ url: URL) throws {
        transaction = try RawTransaction(
            url, begin: "BEGIN; SELECT count(*) FROM sqlite_master", purpose: "start a read transaction")
    }

    /// Ends the read transaction and closes the connection.
    public func release() { transaction.end() }
}
