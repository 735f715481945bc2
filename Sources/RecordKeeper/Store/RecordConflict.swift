public import Foundation

/// A conditional write found records changed since the versions it was based on.
///
/// Nothing of the write was stored. Load the records again, decide how to merge, and retry,
/// or write unconditionally if overwriting is what you want.
///
/// ```swift
/// do {
///     try await store.apply("notes", changes: changes, expecting: ["today": loadedVersion])
/// } catch let conflict as RecordConflict {
///     print("changed meanwhile:", conflict.keys)
/// }
/// ```
public struct RecordConflict: Error, Sendable, Equatable, LocalizedError {
    /// What the refused write was doing, for its message.
    public enum Action: Sendable, Equatable {
        /// Inserting or updating records, possibly removing others too ("Could not save to
        /// collection …; nothing was written.").
        case save
        /// Only removing records ("Could not delete from collection …; nothing was removed.").
        case delete
    }

    /// The collection written to.
    public let collection: String
    /// What the write was doing: saving (upserts, with or without removals) or only deleting.
    public let action: Action
    /// The keys whose stored version differs from the expected one, sorted.
    public let keys: [String]
    /// For each conflicting key, the version stored now (nil: the record does not exist).
    public let currentVersions: [String: RecordVersion?]
    /// For each conflicting key, the version the write expected (nil: that the record does
    /// not exist), when known.
    public let expectedVersions: [String: RecordVersion?]

    /// Creates a conflict value.
    public init(
        collection: String, currentVersions: [String: RecordVersion?],
        expectedVersions: [String: RecordVersion?] = [:], action: Action = .save
    ) {
        self.collection = collection
        self.action = action
        self.currentVersions = currentVersions
        self.expectedVersions = expectedVersions
        self.keys = currentVersions.keys.sorted()
    }

    /// Says, for up to five keys, what was found instead of what was expected: a record that
    /// must not exist "already exists, at version 3" (a delete's: "is stored, at version 3, but
    /// was never loaded"); one expected at version 2 "changed since
    /// it was loaded (version 2, now 3)", or, when none is stored (removed meanwhile, or never
    /// stored at all: the store cannot tell), "no record "k" (expected version 2)".
    public var errorDescription: String? {
        let shown = keys.prefix(5).map(describe).joined(separator: "; ")
        let more = keys.count > 5 ? "; and \(keys.count - 5) more" : ""
        let (verb, nothing) =
            switch action {
            case .save: ("save to", "nothing was written")
            case .delete: ("delete from", "nothing was removed")
            }
        return "Could not \(verb) collection \(RecordStoreError.quoted(collection)): \(shown)\(more); \(nothing)."
    }

    private func describe(_ key: String) -> String {
        let name = RecordStoreError.quoted(key)
        let current = currentVersions[key] ?? nil
        guard let expectation = expectedVersions[key] else {
            return current.map { "\(name) changed since it was loaded (now version \($0.rawValue))" }
                ?? "no record \(name)"
        }
        switch (expectation, current) {
        case (nil, let current?):
            // A delete expecting no record comes from a repository that never saw this one.
            return action == .delete
                ? "\(name) is stored, at version \(current.rawValue), but was never loaded"
                : "\(name) already exists, at version \(current.rawValue)"
        case (let expected?, let current?):
            return "\(name) changed since it was loaded (version \(expected.rawValue), now \(current.rawValue))"
        case (let expected?, nil):
            // Removed since it was loaded, or never stored (a version from elsewhere): say what
            // was found, not a history the store cannot know.
            return "no record \(name) (expected version \(expected.rawValue))"
        case (nil, nil):
            return "\(name) is not stored, as expected"  // Not a conflict; never constructed so.
        }
    }

    public var recoverySuggestion: String? {
        "Load the records again, merge, and save once more."
    }
}
