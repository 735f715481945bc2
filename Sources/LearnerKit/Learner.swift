/// The `learner` example app.
public enum Learner {
    /// Runs one command line (without the program name) and returns the exit code.
    @MainActor
    public static func run(arguments: [String], environment: [String: String]) async -> Int32 { 0 }
}
