import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

extension StoreFormat {
    /// The oldest format whose records a reading request reads as they are, without migrating.
    ///
    /// Reads never migrate: only the first write does. Every migration so far only adds tables
    /// beside `collections`, `records` and `store_meta`, so every format from 1 on is read as
    /// is. A migration that changes those tables must raise this, and give reads of older
    /// stores a clear error of their own until a write migrates them.
    static let oldestReadableVersion = 1
}

/// What a reading request finds at the store path.
enum ReadTarget {
    /// A store this version reads: the connection stays open for later reads.
    case store(SQLiteConnection)
    /// A store this process may read but whose log index (`-shm`) it can neither open nor
    /// create (its directory is not writable: another user's, read-only media), and whose
    /// log is empty: an `immutable` connection to the main file, which holds every commit, for
    /// this one request. The stamp says whether the file stayed as it was meanwhile.
    case snapshot(SQLiteConnection, FileStamp)
    /// No store (yet): no file, an empty file, or an SQLite database without the store's
    /// format. For a database, a connection that leaves nothing behind, for this one request.
    case notAStore(SQLiteConnection?)
}

extension StoreOpener {
    /// Opens the store at `path` for reading without changing anything: never creates a
    /// file, a directory, a table or a `-wal`/`-shm` file that outlives the connection, and
    /// never migrates.
    ///
    /// - No file, or a file of 0 bytes: `.notAStore(nil)`.
    /// - A store (format 1 … current): a read-write connection in `query_only` mode, so that
    ///   when it is the last connection it removes the `-wal` and `-shm` files it needed while
    ///   open, as a writer would (a read-only connection leaves them behind).
    /// - A store whose `-shm` this process can neither open nor create (SQLite fails with
    ///   `SQLITE_READONLY_DIRECTORY` or `SQLITE_CANTOPEN`: a directory it cannot write, read-only
    ///   media) or grow (`SQLITE_IOERR_SHMSIZE` or `SQLITE_FULL`: a full disk): `.snapshot`, an `immutable` connection for one request, when the `-wal` is
    ///   missing or empty, so the main file holds every commit; a `readOnly` error naming the log
    ///   when the `-wal` holds commits that cannot be read without its index.
    /// - A store this process may read but not write (its mode, another user's file) whose
    ///   `-wal` is missing or empty: `.snapshot`, so that no `-wal` or `-shm` of the file's mode
    ///   is left behind to stop later writes.
    /// - An SQLite database without the store's format (no tables, `application_id` 0): a
    ///   read-only connection; `immutable` when the database is in WAL mode and has no `-wal`
    ///   file, which means no connection has it open, so that no `-wal`/`-shm` is created.
    /// - Anything else is refused as opening would refuse it (`notADatabase`,
    ///   `foreignDatabase`, `newerFormat`), the file left as it is.
    ///
    /// With `refuseWaiting`, the format is read with the busy handler off: a lock another
    /// connection holds (while it recovers the log) throws `busy` at once.
    static func openForReading(path: String, options: RecordStore.Options, refuseWaiting: Bool = false) throws -> ReadTarget {
        guard let header = try readHeader(path) else { return .notAStore(nil) }
        func format(_ connection: SQLiteConnection) throws -> Int {
            do {
                return try refuseWaiting
                    ? connection.refusingToWait { try checkedFormat(of: connection, path: path) }
                    : checkedFormat(of: connection, path: path)
            } catch let refused as RecordStoreError where refused.code == .newerFormat || refused.code == .foreignDatabase {
                // The log may say what the main file does not (a newer format migrated in it):
                // closing must not checkpoint it into a file this version refuses.
                throw refusal(refused, leaving: connection)
            }
        }
        do {
            // The common case first: the main file says "a store this version reads". Its
            // header is checked again through the connection, which also sees the log.
            if header.isStore {
                if accessRefusal(path, W_OK) != nil, !hasLog(path) {
                    // A store this process may read but not write (mode 0444, another user's
                    // file): a read-write connection would open it read-only and leave a `-wal`
                    // and a `-shm` of the file's mode behind, which stop every write even after
                    // the file is made writable. The main file holds every commit: read it as is.
                    return try snapshot(path: path, options: options, after: nil, format: format)
                }
                do {
                    let connection = try storeReader(path: path, options: options)
                    if try format(connection) != 0 { return .store(connection) }
                } catch let failure as SQLiteFailure where cannotUseLogIndex(failure) {
                    return try snapshot(path: path, options: options, after: failure, format: format)
                }
                return .notAStore(try glance(path: path, header: header, options: options))
            }
            let connection = try glance(path: path, header: header, options: options)
            guard try format(connection) != 0 else { return .notAStore(connection) }
            return .store(try storeReader(path: path, options: options))
        } catch let failure as SQLiteFailure {
            throw RecordStoreError(failure, operation: .open, path: path)
        }
    }

    /// The fallback for a store whose log index cannot be opened or created (see
    /// `openForReading`): an immutable connection when the main file holds every commit;
    /// otherwise (the `-wal` holds commits) a `readOnly` error naming the log; when even the
    /// immutable connection fails, the first failure.
    private static func snapshot(
        path: String, options: RecordStore.Options, after failure: SQLiteFailure?,
        format: (SQLiteConnection) throws -> Int
    ) throws -> ReadTarget {
        if hasLog(path) {
            let directory = (path as NSString).deletingLastPathComponent
            throw RecordStoreError(
                code: .readOnly, operation: .open, path: path, sqliteCode: failure?.code.rawValue, sqliteMessage: failure?.message,
                detail: "its write-ahead log \(path)-wal holds commits that can only be read with the log's index "
                    + "(-shm), which cannot be opened, created or grown in \((directory as NSString).length == 0 ? "." : directory)"
                    + (failure.map(isFullDisk) == true ? " (the disk may be full)" : ""))
        }
        let stamp = FileStamp(path)
        let connection: SQLiteConnection
        do {
            connection = try SQLiteConnection(path: path, busyTimeout: options.busyTimeout, mode: .immutable)
            guard try format(connection) != 0 else { return .notAStore(connection) }
        } catch {
            throw failure ?? error
        }
        return .snapshot(connection, stamp)
    }

    /// Whether `failure` says the log's index (`-shm`) cannot be opened, created or grown
    /// here: a directory or medium this process may not write (`readOnly`, `cannotOpen`), or a
    /// full disk. A full disk must not keep a person from reading, exporting or backing up a
    /// store whose main file holds every commit.
    private static func cannotUseLogIndex(_ failure: SQLiteFailure) -> Bool {
        failure.code.matches(.readOnly) || failure.code.matches(.cannotOpen) || isFullDisk(failure)
    }

    /// `full`, or SQLite's I/O errors of the log's index, which is what growing it on a full
    /// disk fails with.
    private static func isFullDisk(_ failure: SQLiteFailure) -> Bool {
        failure.code.matches(.full) || [.ioErrorShmOpen, .ioErrorShmSize, .ioErrorShmMap].contains(failure.code)
    }

    /// Whether the store's `-wal` exists and holds anything.
    static func hasLog(_ path: String) -> Bool {
        var info = stat()
        return stat(path + "-wal", &info) == 0 && info.st_size > 0
    }

    /// Whether opening a reader is quick: no log, or a small one. (The first connection to a
    /// log without a valid index reads the whole log to rebuild it.)
    static func opensQuickly(_ path: String) -> Bool {
        var info = stat()
        guard stat(path + "-wal", &info) == 0 else { return true }
        return info.st_size <= 4 << 20
    }

    /// The persistent reader of a store.
    private static func storeReader(path: String, options: RecordStore.Options) throws(SQLiteFailure) -> SQLiteConnection {
        let connection = try SQLiteConnection(
            path: path, busyTimeout: options.busyTimeout, mode: .readWrite,
            protectionFlag: options.fileProtection.sqliteOpenFlag)
        try connection.setQueryOnly()
        try connection.setDurability(full: options.durability == .full)
        return connection
    }

    /// A connection for one look at a database that is not a store, creating no file.
    private static func glance(
        path: String, header: FileHeader, options: RecordStore.Options
    ) throws(SQLiteFailure) -> SQLiteConnection {
        let quiet = header.isWriteAheadLog && !FileManager.default.fileExists(atPath: path + "-wal")
        return try SQLiteConnection(path: path, busyTimeout: options.busyTimeout, mode: quiet ? .immutable : .readOnly)
    }

    /// The format of a readable store, 0 for an empty database; throws for anything else.
    private static func checkedFormat(of connection: SQLiteConnection, path: String) throws -> Int {
        let version = try checkFormat(of: connection, path: path)
        // Versions 1 ... current are all readable while `oldestReadableVersion` is 1.
        assert(version == 0 || version >= StoreFormat.oldestReadableVersion)
        return version
    }

    /// The first 100 bytes of an SQLite file: what they say without opening it.
    struct FileHeader {
        /// `SQLite format 3\0` and both version bytes 2: the database is in WAL mode.
        let isWriteAheadLog: Bool
        /// The application id of a store and a format this version reads.
        let isStore: Bool
        /// An SQLite database with no schema, application id or format yet: what an opening
        /// that failed before setting the store up leaves.
        var isBlank = false
    }

    /// Reads the header of the file at `path`; nil when there is no file or it is empty.
    /// A file that exists but cannot be examined is reported, never taken for "no store".
    static func readHeader(_ path: String) throws -> FileHeader? {
        var info = stat()
        if stat(path, &info) != 0 {
            if errno == ENOENT {
                try refuseDanglingLink(path)
                try refuseOrphanLog(path, missing: true)
                return nil
            }
            let reason = errno == ENOTDIR
                ? "a part of the path is a file, not a directory" : String(cString: strerror(errno))
            throw RecordStoreError(code: .cannotOpen, operation: .open, path: path, detail: reason)
        }
        try refuseNonRegular(info, path: path)
        if info.st_size == 0 {
            try refuseOrphanLog(path, missing: false)
            return nil
        }
        // Through SQLite's file layer, never open(2)/close(2): closing a descriptor of the file
        // would drop the locks this process's connections hold on it (see `SQLiteFile`).
        let bytes: [UInt8]
        let complete: Bool
        do {
            (bytes, complete) = try SQLiteFile.readPrefix(path, count: 100)
        } catch {
            let reason = error.systemError != 0 ? String(cString: strerror(error.systemError)) : "SQLite code \(error.code)"
            if ProtectedData.isUnavailable(errno: error.systemError, path: path) {
                throw RecordStoreError(code: .protectedDataUnavailable, operation: .open, path: path, detail: reason)
            }
            if RecordStoreError.isOpenFilesLimit(error.systemError) {
                throw RecordStoreError.openFilesLimit(path: path, error.systemError)
            }
            if error.systemError == EACCES || error.systemError == EPERM {
                throw RecordStoreError(
                    code: .cannotRead, operation: .open, path: path, detail: reason)
            }
            throw RecordStoreError(
                code: error.code.matches(.ioError) ? .ioError : .cannotOpen,
                operation: .open, path: path, detail: "could not read the file: \(reason)")
        }
        let magic = Array("SQLite format 3\0".utf8)
        guard complete, Array(bytes[0..<16]) == magic else {
            // Not a database: SQLite's own read says so, in its words (a read-only
            // connection on a file without a WAL header creates nothing).
            return FileHeader(isWriteAheadLog: false, isStore: false)
        }
        func integer(at offset: Int) -> UInt32 {
            bytes[offset..<offset + 4].reduce(0) { $0 << 8 | UInt32($1) }
        }
        let applicationID = Int32(bitPattern: integer(at: 68))
        let version = Int(integer(at: 60))
        return FileHeader(
            isWriteAheadLog: bytes[18] == 2 && bytes[19] == 2,
            isStore: applicationID == StoreFormat.applicationID
                && (StoreFormat.oldestReadableVersion...StoreFormat.currentVersion).contains(version),
            isBlank: applicationID == 0 && version == 0 && integer(at: 40) == 0)  // 40: the schema cookie
    }
}

/// What `stat` says of a store file and its log, to tell whether it changed while it was read
/// without locks (through an immutable connection).
struct FileStamp: Equatable {
    let device: UInt64
    let inode: UInt64
    let size: Int64
    let modified: timespec
    /// The `-wal` file exists and is not empty.
    let hasLog: Bool

    init(_ path: String) {
        var info = stat()
        if stat(path, &info) != 0 { info = stat() }
        let identity = StoreFileIdentity(info)
        device = identity.device
        inode = identity.inode
        size = Int64(info.st_size)
        #if canImport(Darwin)
            modified = info.st_mtimespec
        #else
            modified = info.st_mtim
        #endif
        hasLog = StoreOpener.hasLog(path)
    }

    /// True while the file at `path` is still this one, unchanged, with no log.
    func isCurrent(_ path: String) -> Bool { FileStamp(path) == self && !hasLog }

    static func == (a: FileStamp, b: FileStamp) -> Bool {
        a.device == b.device && a.inode == b.inode && a.size == b.size && a.hasLog == b.hasLog
            && a.modified.tv_sec == b.modified.tv_sec && a.modified.tv_nsec == b.modified.tv_nsec
    }
}
