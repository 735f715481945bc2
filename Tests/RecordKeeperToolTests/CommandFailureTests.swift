import Testing
import RecordKeeperCommandLine

/// The failure report both tools (`recordkeeper`, `recordkeeper-relay`) share.
@Suite struct CommandFailureTests {
    private struct Unknown: Error {}
    private struct Known: Error {}

    private func report(_ error: any Error, command: String? = nil) -> CommandFailure {
        CommandFailure.reporting(error, tool: "tool", command: command) { error in
            error is Known ? CommandFailure(.dataError, "known\nacross lines") : nil
        }
    }

    @Test func `a usage error points at the help of its command or of the tool`() {
        let forCommand = report(UsageError(message: "missing KEY", command: "get"))
        #expect(forCommand.exitCode == .usage)
        #expect(forCommand.message == "missing KEY (see 'tool get --help')")
        let forTool = report(UsageError(message: "unknown command 'x'", command: nil))
        #expect(forTool.message == "unknown command 'x' (see 'tool --help')")
    }

    @Test func `a command failure stands and a translated error takes its code`() {
        let failure = report(CommandFailure(.notFound, "no such file"))
        #expect(failure.exitCode == .notFound && failure.message == "no such file")
        #expect(report(Known()).exitCode == .dataError)
    }

    @Test func `an error nobody translates is an internal error naming it`() {
        let failure = report(Unknown())
        #expect(failure.exitCode == .internalError)
        #expect(failure.message.hasPrefix("internal error: ") && failure.message.contains("Unknown"))
    }

    @Test func `the reported line names the tool and folds line breaks`() {
        #expect(report(Known()).line(tool: "tool") == "tool: known across lines")
    }
}
