import Foundation
import RecordKeeper

/// The `learner` example app: a language learner's reading progress and vocabulary, kept in
/// a RecordKeeper store. `main.swift` only calls ``run(arguments:environment:)``.
///
/// Commands that need the store open it lazily; when it cannot be used they print a clear
/// error and exit non-zero, and nothing is reset or moved. `--help` and `--version` need no
/// store and always work.
public enum Learner {
    /// The app's version, printed by `learner --version`.
    public static let version = "0.1.0"

    /// Runs one command line (without the program name), prints its output and messages, and
    /// returns the exit code.
    @MainActor
    public static func run(arguments: [String], environment: [String: String]) async -> Int32 {
        let result = await execute(arguments: arguments, environment: environment)
        FileHandle.standardOutput.write(Data(result.output.utf8))
        FileHandle.standardError.write(Data(result.errors.utf8))
        return result.status
    }

    /// What one run printed and returned.
    struct Run: Sendable {
        var status: Int32
        var output: String
        var errors: String
    }

    /// Runs one command line. `repository` replaces the store at the resolved location (tests
    /// pass an in-memory one).
    @MainActor
    static func execute(
        arguments: [String], environment: [String: String],
        repository: (any LearnerRepository)? = nil
    ) async -> Run {
        var console = Console()
        var store: RecordStore?
        do {
            let parsed = try LearnerArguments.parse(arguments)
            if parsed.flags.contains("version") {
                console.print("learner \(version) (RecordKeeper example app)")
                return Run(status: 0, output: console.output, errors: console.errors)
            }
            if parsed.flags.contains("help") || parsed.words.first == "help" {
                console.print(helpText)
                return Run(status: 0, output: console.output, errors: console.errors)
            }
            guard let command = parsed.words.first else {
                throw LearnerError(.usage, "no command given")
            }
            guard LearnerCommands.names.contains(command) else {
                throw LearnerError(.usage, "unknown command '\(command)'")
            }
            let chosen: any LearnerRepository
            if let repository {
                chosen = repository
            } else {
                let location = try StoreLocation.resolve(option: parsed.values["store"], environment: environment)
                let opened = RecordStore(url: location.url)
                store = opened
                chosen = RecordKeeperLearnerRepository(store: opened)
            }
            var commands = LearnerCommands(repository: chosen, arguments: parsed, console: console)
            try await commands.run(command)
            console = commands.console
            await store?.close()
            return Run(status: 0, output: console.output, errors: console.errors)
        } catch {
            await store?.close()
            let code = LearnerError.exitCode(for: error)
            console.printError("learner: " + LearnerError.describe(error))
            if code == .usage { console.printError("Run 'learner --help' for the commands.") }
            return Run(status: code.rawValue, output: console.output, errors: console.errors)
        }
    }

    static let helpText = """
        learner: your reading progress and vocabulary, kept in a RecordKeeper store.

        Usage: learner COMMAND [options]

        Commands:
          read BOOK [--page N] [--title TEXT]  Record the page reached in BOOK (a slug such as
                                               moby-dick), or show it without --page
          words add WORD TRANSLATION           Add a word, or change its translation
          words review [--count N]             Show the N words due for review (default 5) and
                                               record that you reviewed them
          words list                           List every word
          words remove WORD                    Remove a word
          status                               Books, pages and words so far
          help, --help, -h                     This help (needs no store)
          --version                            The version (needs no store)

        Options:
          --store PATH   The store file. Default: $LEARNER_STORE, else learner.sqlite in
                         $XDG_DATA_HOME/learner, else ~/.local/share/learner (Application
                         Support/learner on Apple platforms), created 0700

        Examples:
          learner read moby-dick --page 12
          learner words add ballena whale
          learner words review
          learner status
        """
}

/// What a run prints, collected so tests can read it.
struct Console {
    private(set) var output = ""
    private(set) var errors = ""

    mutating func print(_ line: String) { output += line + "\n" }
    mutating func printError(_ line: String) { errors += line + "\n" }
}
