import RecordKeeperCommandLine

// The argument parser lives in RecordKeeperCommandLine, shared with `recordkeeper-relay`; these
// names keep the tool's files reading as before.
typealias OptionSpec = RecordKeeperCommandLine.OptionSpec
typealias ArgumentSpec = RecordKeeperCommandLine.ArgumentSpec
typealias CommandSpec = RecordKeeperCommandLine.CommandSpec
typealias ParsedCommandLine = RecordKeeperCommandLine.ParsedCommandLine
typealias UsageError = RecordKeeperCommandLine.UsageError
typealias ArgumentParser = RecordKeeperCommandLine.ArgumentParser
