import Foundation
public import Testing

/// Skips the running case of a parameterized test where `swift test` shows it: Swift Testing
/// prints skipped tests and suites (`.enabled(if:)`) but says nothing of a skipped case, and
/// would count the test as passed on its other cases alone. Prints a line in the style of
/// Swift Testing's own skip lines, naming the test, the case and the reason; with Swift 6.3 or
/// later it then cancels the case (`Test.cancel`, so event streams record it) and throws, with
/// earlier compilers it returns and the caller must return.
public func skipCase(
    _ testCase: String, _ reason: Comment, sourceLocation: SourceLocation = #_sourceLocation
) throws {
    let test = Test.current.map { $0.displayName ?? $0.name } ?? "?"
    // Unbuffered, so the line is there even if the run stops later.
    FileHandle.standardOutput.write(Data("➜ Test \"\(test)\" case \(testCase) skipped: \"\(reason.rawValue)\"\n".utf8))
    #if compiler(>=6.3)
        try Test.cancel(reason, sourceLocation: sourceLocation)
    #endif
}
