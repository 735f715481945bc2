import Foundation

extension RecordStore {
    /// Makes the observers every write transaction of a store runs with (see
    /// `TransactionObserver`), in the order they are told of it: sync capture and the
    /// repositories' learned versions read and write inside the transaction before the change
    /// log trims; after the commit, the outbox wakes its processors and the change log its
    /// streams.
    static func transactionObservers(
        path: String?, watcher: ChangeWatcher, outbox: OutboxSignal, learned: LearnedVersions
    ) -> @Sendable () -> [any TransactionObserver] {
        {
            [
                SyncCaptureObserver(),
                LearningObserver(learned: learned),
                OutboxCommitObserver(signal: outbox),
                ChangeLogObserver(path: path, watcher: watcher),
            ]
        }
    }
}
