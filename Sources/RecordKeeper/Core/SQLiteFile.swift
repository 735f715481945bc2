import CSQLite

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Reads the first bytes of a database file through SQLite's own file layer (its default VFS).
///
/// Why not `open(2)`, `read(2)` and `close(2)`: POSIX advisory locks belong to the process and
/// the file, and closing *any* descriptor of the file drops all of them, including the locks
/// the process's SQLite connections hold on it. A store whose connections lost their shared
/// lock looks unused to other processes: the last of them to close deletes the `-wal` and
/// `-shm` files under the store's feet, and from then on the store writes into a log nobody
/// else sees (SQLite's "How To Corrupt", §2.2). SQLite's unix VFS knows this: a file it closes
/// while the process still holds locks on it is kept open until they are released.
enum SQLiteFile {
    /// Why the file could not be opened for reading.
    struct OpenFailure: Error {
        /// The SQLite result code of the failed open or read.
        let code: ResultCode

        init(code: Int32, systemError: Int32) {
            self.code = ResultCode(rawValue: code)
            self.systemError = systemError
        }
        /// The system's error number (`EACCES`, …); 0 when unknown.
        let systemError: Int32
    }

    /// The first `count` bytes of the file at `path` (zeros past its end) and how many of them
    /// the file holds, opened read-only; never creates anything.
    static func readPrefix(_ path: String, count: Int) throws(OpenFailure) -> (bytes: [UInt8], complete: Bool) {
        guard let vfs = sqlite3_vfs_find(nil), let xOpen = vfs.pointee.xOpen else {
            throw OpenFailure(code: SQLITE_ERROR, systemError: 0)
        }
        let size = max(Int(vfs.pointee.szOsFile), MemoryLayout<sqlite3_file>.size)
        let storage = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 16)
        storage.initializeMemory(as: UInt8.self, repeating: 0, count: size)
        defer { storage.deallocate() }
        let file = storage.bindMemory(to: sqlite3_file.self, capacity: 1)
        // The VFS keeps the name pointer while the file is open: one `withCString` for all.
        let result = path.withCString { name -> Result<(bytes: [UInt8], complete: Bool), OpenFailure> in
            var outFlags: Int32 = 0
            let opened = xOpen(vfs, name, file, SQLITE_OPEN_READONLY | SQLITE_OPEN_MAIN_DB, &outFlags)
            // The VFS may set the methods even when the open failed: close through them then.
            defer { _ = file.pointee.pMethods?.pointee.xClose?(file) }
            guard opened == SQLITE_OK, let read = file.pointee.pMethods?.pointee.xRead else {
                let number = vfs.pointee.xGetLastError?(vfs, 0, nil) ?? 0
                return .failure(OpenFailure(code: opened == SQLITE_OK ? SQLITE_ERROR : opened, systemError: number))
            }
            var bytes = [UInt8](repeating: 0, count: count)
            let code = bytes.withUnsafeMutableBytes { read(file, $0.baseAddress, Int32(count), 0) }
            guard code == SQLITE_OK || code == ResultCode.ioErrorShortRead.rawValue else {
                return .failure(OpenFailure(code: code, systemError: errno))
            }
            return .success((bytes, code == SQLITE_OK))
        }
        return try result.get()
    }
}
