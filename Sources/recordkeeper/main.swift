import Foundation
import RecordKeeperTool

let code = await RecordKeeperTool.run(
    arguments: Array(CommandLine.arguments.dropFirst()),
    environment: ProcessInfo.processInfo.environment)
exit(code)
