public import RecordKeeper

extension RecordStore {
    /// Makes the next write transaction fail at its commit and roll back, as a real commit
    /// failure (a full disk, an I/O error) would.
    ///
    /// A tool for apps to test their own failure handling: that a screen shows the error, that
    /// nothing half-saved appears, that a retry works. The failing write throws
    /// ``RecordKeeper/RecordStoreError`` with code `injectedFailure`, nothing of it is stored,
    /// and the store works normally afterwards.
    ///
    /// ```swift
    /// import RecordKeeperTestSupport
    ///
    /// try await store.failNextCommitForTesting()
    /// await model.save(draft)            // must surface the error and keep the draft
    /// #expect(model.errorMessage != nil)
    /// ```
    public nonisolated func failNextCommitForTesting() async throws {
        failNextCommit()
    }
}
