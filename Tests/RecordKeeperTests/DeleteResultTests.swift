import TestHelpers
import Foundation
import Testing
@testable import RecordKeeper

/// Deleting says whether it removed anything, everywhere; deleting what is not stored is not
/// an error; a failed delete says "delete".
@Suite struct DeleteResultTests {
    @Test(arguments: StoreKind.allCases)
    func `a repository's delete says whether it removed the item`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let books = RecordRepository<Book>(store: store, collection: "books")
            try await books.save(Book(id: "a", title: "A"))
            #expect(try await books.delete("a") == true)
            #expect(try await books.delete("a") == false, "already removed")
            #expect(try await books.delete("never-stored") == false)
            #expect(try await books.delete("never-stored", onConflict: .overwrite) == false)
            try await books.save(Book(id: "b", title: "B"))
            #expect(try await books.delete("b", onConflict: .overwrite) == true)
            #expect(try await store.read("books") == [:])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `the store's delete says whether it removed the record and creates nothing`(kind: StoreKind) async throws {
        try await withStore(kind) { store, url in
            #expect(try await store.delete("notes", key: "today") == false)
            #expect(!FileManager.default.fileExists(atPath: url.path), "no store was created")
            try await store.put("notes", key: "today", data: Data("x"))
            #expect(try await store.delete("other", key: "today") == false)
            #expect(try await store.read("other") == nil, "no collection was established")
            #expect(try await store.delete("notes", key: "today") == true)
            #expect(try await store.delete("notes", key: "today") == false)
            #expect(try await store.read("notes") == [:])
            let removed = try await store.write { tx in try tx.delete("notes", key: "missing") }
            #expect(removed == false)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a conditional delete removes only the stated version and says delete when it conflicts`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await store.put("notes", key: "k", data: Data("1"))
            let stale = await #expect(throws: RecordConflict.self) {
                try await store.delete("notes", key: "k", ifVersion: RecordVersion(7))
            }
            #expect(stale?.action == .delete)
            #expect(stale?.localizedDescription ==
                    #"Could not delete from collection "notes": "k" changed since it was loaded (version 7, now 1); nothing was removed."#)
            #expect(try await store.delete("notes", key: "k", ifVersion: RecordVersion(1)) == true)
            let gone = await #expect(throws: RecordConflict.self) {
                try await store.delete("notes", key: "k", ifVersion: RecordVersion(1))
            }
            #expect(gone?.localizedDescription ==
                    #"Could not delete from collection "notes": no record "k" (expected version 1); nothing was removed."#)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a repository's conflicting delete says delete, not save`(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let mine = try await staleRepository(on: store)
            let conflict = await #expect(throws: RecordConflict.self) { try await mine.delete("a") }
            #expect(conflict?.localizedDescription.hasPrefix(#"Could not delete from collection "books": "a" changed"#) == true)
            #expect(conflict?.localizedDescription.hasSuffix("nothing was removed.") == true)
            let save = await #expect(throws: RecordConflict.self) { try await mine.save(Book(id: "a", title: "mine")) }
            #expect(save?.localizedDescription.hasPrefix("Could not save to collection") == true)
        }
    }

    @Test func `a delete that fails in the store says delete`() async throws {
        try await withStore(.onDisk) { store, url in
            try await store.put("notes", key: "first", data: Data("1"))
            await store.close()
            var bytes = try Data(contentsOf: url)
            try #require(bytes.count > 4096)
            bytes.replaceSubrange(4096..., with: Data(repeating: 0xFF, count: bytes.count - 4096))
            try bytes.write(to: url)
            let error = await #expect(throws: RecordStoreError.self) { try await store.delete("notes", key: "first") }
            #expect(error?.operation == .delete)
            #expect(error?.localizedDescription.hasPrefix(#"Could not delete from collection "notes" (key "first")"#) == true,
                    "\(error?.localizedDescription ?? "")")
        }
    }
}
