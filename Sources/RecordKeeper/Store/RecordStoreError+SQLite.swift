extension RecordStoreError {
    /// Maps a SQLite failure to the store's error, adding the request's context. SQLite's
    /// extended code and message are kept as they are.
    ///
    /// A failure whose system error is `EPERM` on a data-protected file (Apple platforms, the
    /// device locked) is ``Code/protectedDataUnavailable``, whatever SQLite's code says: SQLite
    /// reports it as "unable to open" or as an I/O error, and the store would otherwise tell
    /// the person to fix permissions that are fine.
    init(
        _ failure: SQLiteFailure, operation: StoreOperation, collection: String? = nil, key: String? = nil,
        path: String? = nil
    ) {
        let code: Code
        if let path, ProtectedData.isUnavailable(errno: failure.systemErrno, path: path) {
            code = .protectedDataUnavailable
        } else {
            code =
                switch failure.code {
                case .notADatabase: .notADatabase
                case .corrupt: .corruptStore
                case .cannotOpen: .cannotOpen
                case .readOnly: .readOnly
                case .full: .storageFull
                case .busy, .locked: .busy
                case .ioError: .ioError
                case .tooBig: .tooBig
                default: .sqlite
                }
        }
        self.init(
            code: code, operation: operation, collection: collection, key: key, path: path,
            sqliteCode: failure.code.rawValue, sqliteMessage: failure.message)
    }
}
