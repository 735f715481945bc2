import Foundation
import RecordKeeperRelayTool

// recordkeeper-relay: the sync relay's command line; all of it is in RecordKeeperRelayTool.
let code = await RelayTool.run(
    arguments: Array(CommandLine.arguments.dropFirst()), environment: ProcessInfo.processInfo.environment)
exit(code)
