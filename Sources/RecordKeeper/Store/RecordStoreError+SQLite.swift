extension RecordStoreError {
    /// Maps a SQLite failure to the store's error, adding the request's context. SQLite's
    /// extended code and message are kept as they are.
    init(
        _ failure: SQLiteFailure, operation: StoreOperation, collection: String? = nil, key: String? = nil,
        path: String? = nil
    ) {
        let code: Code =
            switch failure.kind {
            case .notADatabase: .notADatabase
            case .corrupt: .corruptStore
            case .cannotOpen: .cannotOpen
            case .readOnly: .readOnly
            case .full: .storageFull
            case .busy: .busy
            case .ioError: .ioError
            case .tooBig: .tooBig
            case .interrupted, .other: .sqlite
            }
        self.init(
            code: code, operation: operation, collection: collection, key: key, path: path,
            sqliteCode: failure.code, sqliteMessage: failure.message)
    }
}
