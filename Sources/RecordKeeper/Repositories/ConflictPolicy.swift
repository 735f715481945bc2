/// What a repository save does when records changed since the versions it last confirmed.
///
/// ```swift
/// try await repository.save(book)                          // .fail: may throw RecordConflict
/// try await repository.save(book, onConflict: .overwrite)  // last writer wins
/// ```
public enum ConflictPolicy: Sendable, Hashable {
    /// Base the write on the versions the repository last loaded or saved, and throw
    /// ``RecordConflict`` (writing nothing) if any of them changed meanwhile. An item the
    /// repository has never seen must not exist yet. The default.
    case fail
    /// Write unconditionally: the last writer wins, whatever others saved meanwhile.
    case overwrite
}
