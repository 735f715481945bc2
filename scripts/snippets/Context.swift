// The names the documentation's snippets assume without declaring them: what an app around
// the snippet would have. Compiled, never run (scripts/check-snippets.sh). Keep it small: a
// name only one page uses belongs in a `<!-- snippet: context … -->` marker on that page.
public import Foundation
public import RecordKeeper

/// A value of any type, for names whose value does not matter to the compiler.
public func placeholder<T>(_ type: T.Type = T.self) -> T {
    fatalError("snippets are compiled, not run")
}

/// The app's store and where it keeps its files.
public let store = RecordStore.inMemory()
public let supportDirectory = URL(fileURLWithPath: "/tmp/snippets", isDirectory: true)
public let appSupport = supportDirectory

/// The item type of the repository pages.
public struct Book: Codable, Identifiable, Equatable, Sendable {
    public var id: String
    public var title: String
    public var page: Int

    public init(id: String, title: String, page: Int) {
        self.id = id
        self.title = title
        self.page = page
    }
}

public let book = Book(id: "moby-dick", title: "Moby-Dick", page: 1)
public let books = RecordRepository<Book>(store: store, collection: "books")

/// A payload and a server, for the outbox and sync pages.
public let data = Data("{}".utf8)
public let body = Data("{}".utf8)
public let server = InMemorySyncServer()

/// The app's source of relay tokens, for the pages on `HTTPSyncServer`.
public struct AppTokens: Sendable {
    public func current() async throws -> String { "" }
}
public let tokens = AppTokens()
