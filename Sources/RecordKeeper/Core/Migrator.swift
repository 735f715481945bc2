/// One step of a migration plan: constant SQL that brings a database to `version`.
struct Migration: Sendable {
    /// The `user_version` the database has after this step.
    let version: Int
    /// What the step does, for timings and errors.
    let name: String
    /// Constant SQL written in this library (never built from input).
    let sql: String
}

/// A migration step that failed; the database was rolled back to the version before it.
struct MigrationFailure: Error {
    /// The step that failed.
    let step: Migration
    /// What SQLite reported.
    let failure: SQLiteFailure
    /// Set when rolling back failed too (the connection's state is then unknown).
    let rollbackFailure: SQLiteFailure?
}

/// Runs plain migration steps forward. It knows SQL, transactions and `user_version`, nothing
/// of what the steps create.
enum Migrator {
    /// Runs every step newer than `found`, in order, each in one immediate transaction that
    /// also records the new `user_version` and `applicationID`, so a crash leaves either the
    /// old or the new version. A step another connection already ran while this one waited
    /// for the write lock is skipped. Returns the highest version found in the file on the
    /// way, which the caller must check: another connection (a newer version of the app, an
    /// extension) may have migrated past every step meanwhile.
    @discardableResult
    static func run(
        _ steps: [Migration], on connection: SQLiteConnection, from found: Int, applicationID: Int32
    ) throws(MigrationFailure) -> Int {
        var highest = found
        for step in steps where step.version > found {
            do throws(SQLiteFailure) {
                try connection.beginImmediate()
                let current = try connection.userVersion()
                if current >= step.version {
                    highest = max(highest, current)
                    try connection.commit()
                    continue
                }
                try connection.execute(step.sql)
                try connection.setFormat(version: step.version, applicationID: applicationID)
                try connection.commit()
            } catch {
                do throws(SQLiteFailure) {
                    try connection.rollback()
                } catch let rollbackFailure {
                    throw MigrationFailure(step: step, failure: error, rollbackFailure: rollbackFailure)
                }
                throw MigrationFailure(step: step, failure: error, rollbackFailure: nil)
            }
            highest = max(highest, step.version)
        }
        return highest
    }
}
