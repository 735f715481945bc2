import RecordKeeperCommandLine

/// The tool's failures: `RecordKeeperCommandLine`'s, shared with `recordkeeper-relay`.
typealias ToolError = CommandFailure

/// The tool's names for two of the shared `sysexits.h` codes; docs/CLI.md lists them for
/// scripts.
extension ExitCode {
    /// The store file was refused: not a database, another application's database, a newer
    /// format, or damaged. It was left unchanged (69).
    static var storeRefused: ExitCode { .unavailable }
    /// The store stayed locked by another process past the busy timeout; try again (75).
    static var conflict: ExitCode { .temporaryFailure }
}
