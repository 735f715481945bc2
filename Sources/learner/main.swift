import Foundation
import LearnerKit

let code = await Learner.run(
    arguments: Array(CommandLine.arguments.dropFirst()),
    environment: ProcessInfo.processInfo.environment)
exit(code)
