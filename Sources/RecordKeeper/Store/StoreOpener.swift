import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Opens a store file: creates missing directories, checks the file is a RecordKeeper store
/// this version can read, configures the connection and migrates the format forward.
///
/// It never picks another path, never deletes, renames or resets a file it cannot read, and
/// never falls back to an in-memory database: every problem is thrown.
enum StoreOpener {
    /// Opens the store at `path` (nil: a new private in-memory database).
    static func open(
        path: String?, options: RecordStore.Options
    ) throws -> (SQLiteConnection, OpeningTimings) {
        let clock = ContinuousClock()
        let start = clock.now
        if let path { try prepareFile(at: path, protection: options.fileProtection) }
        let directoryDone = clock.now

        let connection: SQLiteConnection
        let found: Int
        do {
            connection = try SQLiteConnection(
                path: path, busyTimeout: options.busyTimeout, protectionFlag: options.fileProtection.sqliteOpenFlag)
            do {
                found = try checkFormat(of: connection, path: path)
            } catch let refused as RecordStoreError {
                throw refusal(refused, leaving: connection)
            }
            if path != nil {
                try enableWriteAheadLog(connection, busyTimeout: options.busyTimeout)
                connection.monitorWriteAheadLog()
            }
            try connection.setDurability(full: options.durability == .full)
        } catch let failure as SQLiteFailure {
            var error = RecordStoreError(failure, operation: .open, path: path)
            if let path, error.code != .protectedDataUnavailable, failure.code.matches(.cannotOpen) || failure.code.matches(.readOnly),
                let reason = unwritableDirectory(of: path)
            {
                // SQLite says "unable to open database file" when it cannot create the -shm.
                error.code = .readOnly
                error.detail = "the store is read-only here: the directory \((path as NSString).deletingLastPathComponent) "
                    + "is not writable (\(reason)), and writing needs the -wal and -shm files beside the store"
            } else if let path, error.code != .protectedDataUnavailable,
                failure.code.matches(.cannotOpen) || failure.code.matches(.readOnly),
                let detail = RecordStoreError.unwritableCompanionDetail(of: path)
            {
                // SQLite cannot open the store beside such a file ("unable to open"): the same
                // words as a write refused by one.
                error.code = .readOnly
                error.detail = detail
            }
            throw error
        }
        let opened = clock.now

        try migrate(connection, from: found, path: path)
        if path != nil, found < StoreFormat.currentVersion {
            try carryFormatToMainFile(connection, path: path)
        }
        let migrated = clock.now
        let timings = OpeningTimings(
            path: path, directory: directoryDone - start, open: opened - directoryDone,
            migration: migrated - opened, formatVersionFound: found,
            formatVersion: StoreFormat.currentVersion)
        return (connection, timings)
    }

    /// The errors that say "not allowed" (the file's mode or owner, an immutable file,
    /// read-only media).
    static let refusals: Set<Int32> = [EACCES, EPERM, EROFS]

    /// The error when this process may not access `path` in `mode` (`R_OK`, `W_OK`): one of
    /// ``refusals``. Nil when it may, and when access(2) answers anything else: the file is then
    /// left to SQLite. access(2), not faccessat2 (which some container seccomp profiles refuse).
    static func accessRefusal(_ path: String, _ mode: Int32) -> Int32? {
        guard access(path, mode) != 0 else { return nil }
        let number = errno
        return refusals.contains(number) ? number : nil
    }

    /// Refuses a store path that names (links followed) a directory, a FIFO, a device or a
    /// socket: none of them is a store or can become one (a FIFO or `/dev/null` read as an
    /// empty file would say "no records", and writing would fail with an I/O error).
    static func refuseNonRegular(_ info: stat, path: String) throws {
        guard let kind = FileKind.nonRegular(mode: info.st_mode) else { return }
        let detail = kind == "a directory" ? "it is a directory" : "it is \(kind), not a regular file"
        throw RecordStoreError(code: .cannotOpen, operation: .open, path: path, detail: detail)
    }

    /// Refuses a store path whose main file is `missing` or empty while a `-wal` beside it
    /// holds frames: that log may be the only copy of commits (a store file moved away or
    /// truncated without its log, a store deleted while another process had it open).
    /// Creating a store there would let SQLite delete or replay that log into a new file, and
    /// reading would answer "no records". A log of its 32-byte header alone holds no frame,
    /// so no commit: another connection creating the store at that moment has just written it.
    static func refuseOrphanLog(_ path: String, missing: Bool) throws {
        var info = stat()
        guard stat(path + "-wal", &info) == 0, info.st_size > walHeaderSize else { return }
        throw RecordStoreError(
            code: .cannotOpen, operation: .open, path: path,
            detail: "the store file is \(missing ? "missing" : "empty"), but its log \(path)-wal holds "
                + "\(info.st_size) bytes that may be the store's commits; nothing was opened or created: put the "
                + "store file back beside its log, or move the log away if it is not needed")
    }

    /// The size of a write-ahead log's header; its frames come after it.
    static let walHeaderSize = 32

    /// Refuses a store path that is a symbolic link to nothing (a volume that is not mounted,
    /// a target moved away): reading would answer "no records", and creating would make a new,
    /// empty store wherever the link points.
    static func refuseDanglingLink(_ path: String) throws {
        var info = stat()
        guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFLNK else { return }
        let named = linkTarget(path) ?? "?"
        throw RecordStoreError(
            code: .cannotOpen, operation: .open, path: path,
            detail: "the store path is a symbolic link to \(named), which does not exist (a volume that is not "
                + "mounted?); nothing was opened or created")
    }

    /// The file `path` names when its last component is a symbolic link: the link followed
    /// (relative targets from the link's directory, chains to their end), so that the store's
    /// `-wal`, `-shm` and `-observers` files are the ones beside the file, where SQLite puts
    /// its own, whichever path a store was given. Another path, a link to nothing and a loop
    /// of links are returned as they are (opening refuses the last two, naming the path
    /// given). Links in the directories above need nothing: the side files of both paths are
    /// then in the same directory.
    ///
    /// One `lstat` for a path that is no link, the usual case.
    static func followingLinks(_ path: String) -> String {
        var current = path
        // Linux's MAXSYMLINKS: what the kernel follows before saying ELOOP.
        for _ in 0..<40 {
            var info = stat()
            guard lstat(current, &info) == 0 else { return path }
            guard info.st_mode & S_IFMT == S_IFLNK else { return current }
            guard let named = linkTarget(current) else { return path }
            // The link's directory, by hand: NSString's path methods trap on a one-character path.
            if named.hasPrefix("/") {
                current = named
            } else if let slash = current.lastIndex(of: "/") {
                current = String(current[...slash]) + named
            } else {
                current = named
            }
        }
        return path
    }

    /// What the symbolic link at `path` holds (`readlink`), as written; nil when it cannot be
    /// read or is empty.
    private static func linkTarget(_ path: String) -> String? {
        var target = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink(path, &target, target.count - 1)
        guard count > 0 else { return nil }
        return String(decoding: target[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Refuses an existing path the writer cannot use, before SQLite opens it: a directory, a
    /// FIFO, a device or a socket; a
    /// file this process may not read (`cannotRead`, as a read says); a file it may not write
    /// (`readOnly`, naming the file). SQLite would open an unwritable file read-only and leave
    /// a `-wal` and a `-shm` of the file's mode beside it, which stop writes even once the file
    /// is writable.
    static func checkExistingFile(_ path: String) throws {
        var info = stat()
        guard stat(path, &info) == 0 else {
            // A link to nothing; anything else gone meanwhile: SQLite says what it finds.
            if errno == ENOENT { try refuseDanglingLink(path) }
            return
        }
        try refuseNonRegular(info, path: path)
        if info.st_size == 0 { try refuseOrphanLog(path, missing: false) }
        for (mode, code) in [(R_OK, RecordStoreError.Code.cannotRead), (W_OK, .readOnly)] {
            guard let number = accessRefusal(path, mode) else { continue }
            let reason = String(cString: strerror(number))
            if ProtectedData.isUnavailable(errno: number, path: path) {
                throw RecordStoreError(code: .protectedDataUnavailable, operation: .open, path: path, detail: reason)
            }
            throw RecordStoreError(
                code: code, operation: .open, path: path,
                detail: code == .readOnly ? "the store file is read-only here (\(reason))" : reason)
        }
    }

    /// Creates missing parent directories (owner-only, 0700) and, when the store file does not
    /// exist, an empty file readable by its owner only (0600), both with the `protection`
    /// class where data protection exists. An existing file is not touched.
    ///
    /// When the file cannot be created, the directories this call made are removed again: a
    /// failed request leaves nothing behind (a name too long for the file system fails only
    /// at the file, after its directories were made).
    static func prepareFile(at path: String, protection: FileProtection = .systemDefault) throws {
        let url = URL(fileURLWithPath: path)
        let directory = url.deletingLastPathComponent()
        var isDirectory: ObjCBool = false
        // The directories that do not exist yet, deepest first.
        var made: [String] = []
        var probe = directory
        while probe.path != "/", !FileManager.default.fileExists(atPath: probe.path) {
            made.append(probe.path)
            probe = probe.deletingLastPathComponent()
        }
        func removeMadeDirectories() {
            for made in made where rmdir(made) != 0 { break }
        }
        if !made.isEmpty {
            do {
                try FileManager.default.createDirectory(
                    at: directory, withIntermediateDirectories: true,
                    attributes: protection.directoryAttributes())
            } catch {
                removeMadeDirectories()
                throw RecordStoreError(
                    code: .cannotOpen, operation: .open, path: path,
                    detail: "could not create the directory \(directory.path) (\(systemReason(error)))")
            }
        } else if !FileManager.default.fileExists(atPath: directory.path, isDirectory: &isDirectory) || !isDirectory.boolValue {
            throw RecordStoreError(
                code: .cannotOpen, operation: .open, path: path,
                detail: "\(directory.path) is a file, not a directory; it was left as it is")
        }
        var existing = stat()
        if made.isEmpty, lstat(path, &existing) != 0, errno == ENOENT { try refuseOrphanLog(path, missing: true) }
        let descriptor = Glibc_open(path, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0o600)
        if descriptor >= 0 {
            close(descriptor)
            do {
                try protection.apply(to: path)
            } catch {
                // Not left behind less protected than asked: the empty file is this call's own.
                unlink(path)
                removeMadeDirectories()
                throw RecordStoreError(
                    code: .cannotOpen, operation: .open, path: path,
                    detail: "could not give the new store file the protection class \(protection) (\(systemReason(error)))")
            }
        } else if errno == EEXIST {
            try checkExistingFile(path)
        } else {
            let number = errno
            removeMadeDirectories()
            if ProtectedData.isUnavailable(errno: number, path: path) {
                throw RecordStoreError(code: .protectedDataUnavailable, operation: .open, path: path,
                                       detail: "the store file could not be created in \(directory.path)")
            }
            if RecordStoreError.isOpenFilesLimit(number) {
                // Not a problem of the file, which may well exist: `O_EXCL` did not get as far.
                throw RecordStoreError.openFilesLimit(path: path, number)
            }
            let reason = String(cString: strerror(number))
            // No store exists yet, so say what is read-only: the directory it would be made in.
            let notWritable = refusals.contains(number)
            throw RecordStoreError(
                code: notWritable ? .readOnly : .cannotOpen, operation: .open, path: path,
                detail: notWritable
                    ? "the store could not be created because the directory \(directory.path) is not writable (\(reason))"
                    : "could not create the store file: \(reason)")
        }
    }

    /// Switches the file to write-ahead logging. SQLite does not call the busy handler for
    /// this change: while another connection is opening the same new store it fails at once
    /// with SQLITE_BUSY. So retry, as the busy handler would, until the busy timeout.
    private static func enableWriteAheadLog(
        _ connection: SQLiteConnection, busyTimeout: Duration
    ) throws(SQLiteFailure) {
        let deadline = ContinuousClock.now + busyTimeout
        while true {
            do throws(SQLiteFailure) {
                _ = try connection.enableWriteAheadLog()
                return
            } catch let failure where failure.isBusy && ContinuousClock.now < deadline {
                usleep(2_000)
            }
        }
    }

    /// Reads the header fields and refuses files this library must not touch.
    /// Returns the format version found (0 for a new, empty database).
    static func checkFormat(of connection: SQLiteConnection, path: String?) throws -> Int {
        // One read transaction, so the header fields and the schema come from one state of the file:
        // another connection may be creating this same store at this moment, and separate
        // reads could see its application id before and its version after its commit.
        let (applicationID, version, objectCount) = try connection.header()
        if applicationID == StoreFormat.applicationID {
            guard version <= StoreFormat.currentVersion else {
                throw RecordStoreError(
                    code: .newerFormat, operation: .open, path: path,
                    detail: "format \(version); this version reads up to format \(StoreFormat.currentVersion)")
            }
            return version
        }
        if applicationID == 0, version == 0, objectCount == 0 {
            return 0  // a new, empty database
        }
        throw RecordStoreError(
            code: .foreignDatabase, operation: .open, path: path,
            detail: "application_id \(applicationID), user_version \(version)")
    }

    /// Checkpoints after creating or migrating the store, so that the main file itself carries
    /// the application id and the format: a copy of the main file alone opens as a store, never
    /// as a new, empty database. SQLITE_BUSY (another connection reading an older snapshot for
    /// longer than the busy timeout) is not a failure: the format is committed in the log and
    /// the next checkpoint carries it.
    private static func carryFormatToMainFile(_ connection: SQLiteConnection, path: String?) throws {
        do throws(SQLiteFailure) {
            try connection.checkpoint(.truncate)
        } catch {
            var failure = RecordStoreError(error, operation: .open, path: path)
            failure.detail = "the checkpoint after creating or migrating the store failed"
            throw failure
        }
    }

    /// Brings the format forward with `StoreFormat`'s steps (see `Migrator`).
    private static func migrate(_ connection: SQLiteConnection, from found: Int, path: String?) throws {
        let reached: Int
        do throws(MigrationFailure) {
            reached = try Migrator.run(
                StoreFormat.migrations, on: connection, from: found, applicationID: StoreFormat.applicationID)
        } catch {
            var described = RecordStoreError(error.failure, operation: .open, path: path)
            described.detail =
                if let rollback = error.rollbackFailure {
                    "migration to format \(error.step.version) failed; rollback also failed: \(rollback.message)"
                } else {
                    "migration to format \(error.step.version) (\(error.step.name)) failed"
                }
            throw described
        }
        // Another connection (a newer app, an extension) migrated past this version while this
        // one waited for the write lock: the file is now of a format it must not write.
        guard reached <= StoreFormat.currentVersion else {
            throw refusal(
                RecordStoreError(
                    code: .newerFormat, operation: .open, path: path,
                    detail: "format \(reached), migrated by another connection meanwhile; this version reads up to "
                        + "format \(StoreFormat.currentVersion)"),
                leaving: connection)
        }
    }

    /// `error`, after telling `connection` to leave the file as it found it when it closes: no
    /// checkpoint of the log into the main file, no `-wal` or `-shm` removed. A file refused
    /// (another program's, a newer format) is not this version's to change; SQLite would
    /// otherwise checkpoint it when its last connection closes. Should SQLite refuse that, the
    /// error says so.
    static func refusal(_ error: RecordStoreError, leaving connection: SQLiteConnection) -> RecordStoreError {
        do throws(SQLiteFailure) {
            try connection.leaveFileAsFoundOnClose()
            return error
        } catch let failure {
            var refused = error
            refused.detail = (refused.detail.map { $0 + "; " } ?? "")
                + "closing may checkpoint the file's log (SQLite refused to keep it: \(failure.message))"
            return refused
        }
    }
}

/// Why the directory of the existing store at `path` cannot be written, in the system's words;
/// nil when it can (or nothing is at `path`).
private func unwritableDirectory(of path: String) -> String? {
    guard FileManager.default.fileExists(atPath: path) else { return nil }
    let directory = (path as NSString).deletingLastPathComponent
    guard access(directory.isEmpty ? "." : directory, W_OK) != 0 else { return nil }
    return String(cString: strerror(errno))
}

/// The system's own words for a failed file operation ("Permission denied"), or
/// Foundation's description when the error carries no POSIX code.
private func systemReason(_ error: any Error) -> String {
    let error = error as NSError
    if let underlying = error.userInfo[NSUnderlyingErrorKey] as? any Error {
        let posix = underlying as NSError
        if posix.domain == NSPOSIXErrorDomain { return String(cString: strerror(Int32(posix.code))) }
    }
    return error.localizedDescription
}

/// `open(2)`, named apart from Foundation's `open` overloads.
private func Glibc_open(_ path: String, _ flags: Int32, _ mode: mode_t) -> Int32 {
    open(path, flags, mode)
}
