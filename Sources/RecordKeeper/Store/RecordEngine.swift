import Foundation

/// The SQL side of one request: the table gateways over one connection, and the control of
/// its transactions.
///
/// Each gateway owns the SQL of one feature's tables (docs/FORMAT.md) and runs it through the
/// request's `StatementRunner`, which turns every SQLite failure into a `RecordStoreError`
/// naming the operation, collection and key (or `CancellationError` when the running task was
/// cancelled). A gateway is a small value made on each use.
struct RecordEngine {
    let runner: StatementRunner

    init(connection: SQLiteConnection, path: String?, operation: StoreOperation) {
        runner = StatementRunner(connection: connection, path: path, operation: operation)
    }

    var connection: SQLiteConnection { runner.connection }
    var path: String? { runner.path }
    var operation: StoreOperation { runner.operation }

    // MARK: Gateways

    /// Records, collections and the version floor.
    var records: RecordsTable { RecordsTable(runner: runner) }
    /// The change log that change streams read.
    var changeLog: ChangeLogTable { ChangeLogTable(runner: runner) }
    /// The item versions of collections and of single synced records.
    var itemVersions: ItemVersionsTable { ItemVersionsTable(runner: runner) }
    /// The outbox's operations and dead letters.
    var outbox: OutboxTable { OutboxTable(runner: runner) }
    /// Sync's pending local operations and their changes.
    var syncQueue: SyncQueueTable { SyncQueueTable(runner: runner) }
    /// What the store knows of each synced record on the server: versions, values kept aside.
    var syncRecords: SyncRecordsTable { SyncRecordsTable(runner: runner) }
    /// Sync's state: registered collections, cursor, device and its chain.
    var syncState: SyncStateTable { SyncStateTable(runner: runner) }
    /// Sync's unresolved conflicts.
    var conflicts: ConflictsTable { ConflictsTable(runner: runner) }
    /// The declared indexes of collections.
    var indexes: IndexesTable { IndexesTable(runner: runner) }
    /// The queries over a collection's records, in one snapshot.
    var queries: RecordQueries { RecordQueries(engine: self) }

    // MARK: Transactions

    /// Begins a write transaction (`StoreCore.performWrite` ends it).
    func beginWrite() throws {
        try runner.run { try connection.beginImmediate() }
    }

    /// Runs `body` in one read transaction, so that everything it reads comes from one
    /// snapshot of the store, even while other connections write: commits when it returns,
    /// rolls back when it throws. Every read transaction is this one.
    func readTransaction<T>(_ body: () throws -> T) throws -> T {
        try runner.run { try connection.beginDeferred() }
        do {
            let result = try body()
            try commit()
            return result
        } catch {
            try rollback(after: error)
            throw error
        }
    }

    func commit() throws {
        try runner.run { try connection.commit() }
    }

    /// Rolls back after `original` failed a transaction. When the rollback fails too, the
    /// error says both.
    func rollback(after original: any Error) throws {
        do {
            try connection.rollback()
        } catch {
            var error = RecordStoreError(error, operation: operation, path: path)
            error.detail = "rolling back after \(original) failed too"
            throw error
        }
    }
}
