public import RecordKeeper

/// The reading app of the docs' migration example (docs/REPOSITORIES.md, "Changing your item
/// type"), in its three versions, for the tests of item versions and migrations of every test
/// target.
public enum ReadingApp {
    /// Version 1: one author.
    public struct BookV1: Codable, Identifiable, Equatable, Sendable {
        public var id: String
        public var title: String
        public var author: String

        public init(id: String, title: String, author: String) {
            self.id = id
            self.title = title
            self.author = author
        }
    }

    /// Version 2: several authors and a rating (a non-optional property v1 items lack).
    public struct BookV2: Codable, Identifiable, Equatable, Sendable {
        public var id: String
        public var title: String
        public var authors: [String]
        public var rating: Int

        public init(id: String, title: String, authors: [String], rating: Int) {
            self.id = id
            self.title = title
            self.authors = authors
            self.rating = rating
        }
    }

    /// Version 3: ratings out of 10 (its step doubles the rating, so a step run twice shows).
    public struct BookV3: Codable, Identifiable, Equatable, Sendable {
        public var id: String
        public var title: String
        public var authors: [String]
        public var rating: Int
        public var scale: Int

        public init(id: String, title: String, authors: [String], rating: Int, scale: Int) {
            self.id = id
            self.title = title
            self.authors = authors
            self.rating = rating
            self.scale = scale
        }
    }

    /// The step from version 1 to 2, the docs' own: `author` becomes `authors`, `rating` starts at 0.
    public static let stepFrom1 = ItemMigrationStep.json(from: 1) { book in
        book["authors"] = [book["author"] ?? ""]
        book["author"] = nil
        book["rating"] = 0
    }

    /// The step from version 2 to 3: the rating doubles, out of 10.
    public static let stepFrom2 = ItemMigrationStep.json(from: 2) { book in
        book["rating"] = ((book["rating"] as? Int) ?? 0) * 2
        book["scale"] = 10
    }

    /// The books of `store` as version 1 reads them.
    public static func v1(_ store: RecordStore) -> RecordRepository<BookV1> {
        RecordRepository(store: store, collection: "books")
    }

    /// The books of `store` as version 2 reads them.
    public static func v2(_ store: RecordStore) -> RecordRepository<BookV2> {
        RecordRepository(store: store, collection: "books", itemVersion: 2, migrations: [stepFrom1])
    }

    /// The books of `store` as version 3 reads them.
    public static func v3(_ store: RecordStore) -> RecordRepository<BookV3> {
        RecordRepository(store: store, collection: "books", itemVersion: 3, migrations: [stepFrom1, stepFrom2])
    }
}
