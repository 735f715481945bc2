import Foundation
import RecordKeeperTool

// The raw bytes of each argument: `CommandLine.arguments` would turn bytes that are not UTF-8
// into U+FFFD, silently (two different keys would become one).
var rawArguments: [[UInt8]] = []
for index in 1..<Int(CommandLine.argc) {
    guard let argument = CommandLine.unsafeArgv[index] else { continue }
    rawArguments.append(Array(UnsafeBufferPointer(start: argument, count: strlen(argument))).map { UInt8(bitPattern: $0) })
}
let code = await RecordKeeperTool.run(rawArguments: rawArguments, environment: ProcessInfo.processInfo.environment)
exit(code)
