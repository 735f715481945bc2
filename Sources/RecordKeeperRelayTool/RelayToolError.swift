import RecordKeeperCommandLine

/// A failure the relay tool reports as one line on standard error and an exit code.
typealias RelayToolError = CommandFailure
