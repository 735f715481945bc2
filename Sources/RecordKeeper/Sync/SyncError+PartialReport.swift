extension SyncError {
    /// What a ``RecordSync`` call that failed had done before it failed, and kept: operations
    /// pushed and answered, conflicts recorded (``SyncReport/newConflicts``: a push's conflicts
    /// are in the store even when the pull after it fails), pages applied. `nil` when the
    /// failure came before anything was done, and for errors a server throws.
    public var partialReport: SyncReport? { partialResult as? SyncReport }

    /// Keeps `report` as ``partialReport`` when it did anything.
    mutating func attach(_ report: SyncReport) {
        guard report.pushedOperations > 0 || report.pulledChanges > 0 || !report.newConflicts.isEmpty
            || report.resynced || report.recovery != nil
        else { return }
        partialResult = report
    }
}
