import Foundation
import TestHelpers
import Testing
@testable import RecordKeeper

/// DocumentRepository keeps its schema-version guard and migrates older documents with steps,
/// all or nothing.
@Suite struct DocumentMigrationTests {
    /// Schema 1: words stored as `words/<word>` with the translation as a JSON string.
    struct WordsV1: RecordDocument, Equatable {
        static let supportedSchemaVersions = 1...1
        var schemaVersion = 1
        var words: [String: String] = [:]

        init(words: [String: String]) { self.words = words }
        init(from records: DocumentRecords) throws {
            words = try records.decode(String.self, inGroup: "words")
        }
        func encode(to records: inout DocumentRecords) throws {
            try records.encode(words, inGroup: "words")
        }
    }

    /// Schema 2: `vocabulary/<word>` with a translation and a review count.
    struct VocabularyV2: RecordDocument, Equatable {
        struct Word: Codable, Equatable, Sendable {
            var translation: String
            var reviews: Int
        }
        static let supportedSchemaVersions = 2...2
        var schemaVersion = 2
        var vocabulary: [String: Word] = [:]

        init(from records: DocumentRecords) throws {
            schemaVersion = records.schemaVersion
            vocabulary = try records.decode(Word.self, inGroup: "vocabulary")
        }
        func encode(to records: inout DocumentRecords) throws {
            try records.encode(vocabulary, inGroup: "vocabulary")
        }
    }

    struct StepFailure: Error {}

    /// The step from 1 to 2: rename the group and wrap each translation.
    static let renameWords = DocumentMigrationStep.records(from: 1) { records in
        for (key, data) in records where key.hasPrefix("words/") {
            records[key] = nil
            let translation = try RecordCoding.decode(String.self, from: data)
            records["vocabulary/" + key.dropFirst("words/".count)] =
                try RecordCoding.encode(VocabularyV2.Word(translation: translation, reviews: 0))
        }
    }

    private func storeVersion1(_ store: RecordStore) async throws {
        let v1 = DocumentRepository<WordsV1>(store: store, collection: "progress")
        try await v1.save(WordsV1(words: ["ballena": "whale", "café": "coffee"]))
        try await store.put("progress", key: "notes", data: Data(#"{"kept":true}"#.utf8))
    }

    @Test(arguments: StoreKind.allCases)
    func `a schema 1 document is migrated on load and its other records are kept`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await storeVersion1(store)
            let repository = DocumentRepository<VocabularyV2>(
                store: store, collection: "progress", migrations: [Self.renameWords])
            let document = try #require(try await repository.load())
            #expect(document.vocabulary == [
                "ballena": .init(translation: "whale", reviews: 0), "café": .init(translation: "coffee", reviews: 0),
            ])
            let stored = try #require(try await store.read("progress"))
            #expect(Set(stored.keys) == ["_schema", "notes", "vocabulary/ballena", "vocabulary/café"])
            #expect(stored["_schema"] == Data("2".utf8))
            #expect(stored["notes"] == Data(#"{"kept":true}"#.utf8))
            // A save afterwards writes only what changed.
            var changed = document
            changed.vocabulary["ballena"]?.reviews = 1
            try await repository.save(changed)
            #expect(try await DocumentRepository<VocabularyV2>(store: store, collection: "progress").load() == changed)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a failing step changes nothing and names the key`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await storeVersion1(store)
            let before = try await store.allRecords("progress")
            let failing = DocumentMigrationStep.json(from: 1, inGroup: "words") { _ in throw StepFailure() }
            let repository = DocumentRepository<VocabularyV2>(store: store, collection: "progress", migrations: [failing])
            let error = await #expect(throws: RepositoryError.self) { try await repository.load() }
            #expect(error?.code == .migrationFailed)
            #expect(error?.key == "words/ballena")
            #expect(error?.detail?.contains("from schema version 1 to 2") == true)
            #expect(try await store.allRecords("progress") == before)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a result that does not rebuild changes nothing`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await storeVersion1(store)
            let before = try await store.allRecords("progress")
            let careless = DocumentMigrationStep.records(from: 1) { records in
                records["vocabulary/ballena"] = Data(#""whale""#.utf8)  // not a Word
            }
            let repository = DocumentRepository<VocabularyV2>(store: store, collection: "progress", migrations: [careless])
            // A save before any load conflicts with the stored document and migrates nothing.
            await #expect(throws: RecordConflict.self) { try await repository.save(VocabularyV2.empty) }
            #expect(try await store.allRecords("progress") == before)
            let error = await #expect(throws: RepositoryError.self) { _ = try await repository.load() }
            #expect(error?.code == .migrationFailed)
            #expect(error?.key == "vocabulary/ballena")
            #expect(try await store.allRecords("progress") == before)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `the schema guard still refuses a newer document, migrations or not`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await store.put("progress", key: "_schema", data: Data("3".utf8))
            let before = try await store.allRecords("progress")
            let repository = DocumentRepository<VocabularyV2>(store: store, collection: "progress", migrations: [Self.renameWords])
            let error = await #expect(throws: RepositoryError.self) { try await repository.load() }
            #expect(error?.code == .unsupportedSchemaVersion)
            #expect(try await store.allRecords("progress") == before)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a missing step in the chain changes nothing`(kind: StoreKind) async throws {
        struct Version3: RecordDocument {
            static let supportedSchemaVersions = 3...3
            var schemaVersion = 3
            init(from records: DocumentRecords) throws {}
            func encode(to records: inout DocumentRecords) throws {}
        }
        try await withStore(kind) { store, _ in
            try await storeVersion1(store)
            let before = try await store.allRecords("progress")
            let repository = DocumentRepository<Version3>(store: store, collection: "progress", migrations: [Self.renameWords])
            let error = await #expect(throws: RepositoryError.self) { try await repository.load() }
            #expect(error?.code == .missingMigrationStep)
            #expect(error?.detail?.contains("from schema version 2 to 3") == true)
            #expect(try await store.allRecords("progress") == before)
        }
    }
}

extension DocumentMigrationTests.VocabularyV2 {
    static var empty: Self {
        get throws { try Self(from: DocumentRecords(collection: "progress", schemaVersion: 2)) }
    }
}
