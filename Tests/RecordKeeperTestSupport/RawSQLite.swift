import CSQLite
public import Foundation

/// Runs SQL through a separate raw connection, as another program would.
/// - Throws: ``RawSQLiteError`` with SQLite's message when opening or a statement fails.
public func rawSQLite(_ url: URL, _ sql: String) throws {
    var handle: OpaquePointer?
    defer { sqlite3_close(handle) }
    guard sqlite3_open(url.path, &handle) == SQLITE_OK else {
        throw RawSQLiteError(message: "open \(url.path): " + String(cString: sqlite3_errmsg(handle)))
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

/// Another "process" holding a store's write lock: a raw connection in an immediate
/// transaction, until ``release()``.
///
/// `@unchecked Sendable`: the handle is used by `init` and then once by `release()` (or
/// `deinit`), which a test calls after it is done with the lock, never at the same time.
public final class ForeignWriteLock: @unchecked Sendable {
    private var handle: OpaquePointer?

    /// Opens `url` and takes its write lock (`BEGIN IMMEDIATE`).
    public init(_ url: URL) throws {
        guard sqlite3_open(url.path, &handle) == SQLITE_OK,
            sqlite3_exec(handle, "BEGIN IMMEDIATE", nil, nil, nil) == SQLITE_OK
        else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close(handle)
            handle = nil
            throw RawSQLiteError(message: "could not take the write lock: \(message)")
        }
    }

    /// Commits the empty transaction and closes the connection.
    public func release() {
        sqlite3_exec(handle, "COMMIT", nil, nil, nil)
        sqlite3_close(handle)
        handle = nil
    }

    deinit { if handle != nil { release() } }
}

/// Another "process" holding a read snapshot of a store: a raw connection in a read
/// transaction started by `init`, until ``release()``. While it holds the snapshot, a
/// truncating checkpoint cannot finish (it waits for every reader to see the newest commit).
///
/// `@unchecked Sendable`: as ``ForeignWriteLock``, the handle is used by `init` and then once
/// by `release()` (or `deinit`), never at the same time.
public final class ForeignReadSnapshot: @unchecked Sendable {
    private var handle: OpaquePointer?

    /// Opens `url` and starts a read transaction on it.
    public init(_ url: URL) throws {
        guard sqlite3_open(url.path, &handle) == SQLITE_OK,
            sqlite3_exec(handle, "BEGIN; SELECT count(*) FROM sqlite_master", nil, nil, nil) == SQLITE_OK
        else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close(handle)
            handle = nil
            throw RawSQLiteError(message: "could not start a read transaction: \(message)")
        }
    }

    /// Ends the read transaction and closes the connection.
    public func release() {
        sqlite3_exec(handle, "COMMIT", nil, nil, nil)
        sqlite3_close(handle)
        handle = nil
    }

    deinit { if handle != nil { release() } }
}
