import Foundation
import TestHelpers
import Testing
@testable import RecordKeeper

/// One Codable value under a key, read with a default, saved as one record.
@Suite struct StoredValueTests {
    enum Theme: String, Codable, Sendable { case system, light, dark }

    struct Reader: Codable, Equatable, Sendable {
        var fontSize: Double
        var lastOpened: Date
    }

    @Test(arguments: StoreKind.allCases)
    func `an unsaved value reads as the default and stores nothing`(kind: StoreKind) async throws {
        try await withStore(kind) { (store: RecordStore, _: URL) async throws in
            let theme = StoredValue(store: store, collection: "settings", key: "theme", default: Theme.system)
            #expect(try await theme.load() == .system)
            #expect(try await theme.loadIfPresent() == nil)
            #expect(try await store.read("settings") == nil)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a saved value is one record beside the others and reads back equal`(kind: StoreKind) async throws {
        try await withStore(kind) { (store: RecordStore, _: URL) async throws in
            try await store.put("settings", key: "other", data: Data("keep".utf8))
            let reader = StoredValue(
                store: store, collection: "settings", key: "reader",
                default: Reader(fontSize: 14, lastOpened: .distantPast))
            let value = Reader(fontSize: 17.5, lastOpened: Date(timeIntervalSinceReferenceDate: 812_345_678.123_456))
            try await reader.save(value)
            #expect(try await store.read("settings") == [
                "other": Data("keep".utf8), "reader": try RecordCoding.encode(value),
            ])
            let again = StoredValue(store: store, collection: "settings", key: "reader", default: Reader(fontSize: 0, lastOpened: .now))
            #expect(try await again.load() == value)
            try await again.remove()
            #expect(try await again.load() == Reader(fontSize: 0, lastOpened: again.defaultValue.lastOpened))
            #expect(try await store.read("settings") == ["other": Data("keep".utf8)])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `removing a value never saved writes nothing, not even a store`(kind: StoreKind) async throws {
        try await withStore(kind) { (store: RecordStore, url: URL) async throws in
            let theme = StoredValue(store: store, collection: "settings", key: "theme", default: Theme.system)
            try await theme.remove()
            #expect(try await store.read("settings") == nil)
            if kind == .onDisk { #expect(!FileManager.default.fileExists(atPath: url.path), "no store was created") }
            // Stored by someone else meanwhile: a removal based on "absent" conflicts.
            try await store.put("settings", key: "theme", data: try RecordCoding.encode(Theme.dark))
            await #expect(throws: RecordConflict.self) { try await theme.remove() }
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `removing a value someone else removed is no conflict, removing one they changed is`(kind: StoreKind) async throws {
        try await withStore(kind) { (store: RecordStore, _: URL) async throws in
            let phone = StoredValue(store: store, collection: "settings", key: "theme", default: Theme.system)
            let tablet = StoredValue(store: store, collection: "settings", key: "theme", default: Theme.system)
            try await phone.save(.dark)
            _ = try await tablet.load()
            try await phone.remove()
            try await tablet.remove()  // gone, as asked
            #expect(try await tablet.load() == .system)
            try await phone.save(.light)
            _ = try await tablet.load()
            try await phone.save(.dark)
            await #expect(throws: RecordConflict.self) { try await tablet.remove() }
            #expect(try await phone.load() == .dark, "a changed value stays")
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a value changed elsewhere since it was loaded conflicts and stays`(kind: StoreKind) async throws {
        try await withStore(kind) { (store: RecordStore, _: URL) async throws in
            let phone = StoredValue(store: store, collection: "settings", key: "theme", default: Theme.system)
            let tablet = StoredValue(store: store, collection: "settings", key: "theme", default: Theme.system)
            _ = try await phone.load()
            _ = try await tablet.load()
            try await phone.save(.dark)
            await #expect(throws: RecordConflict.self) { try await tablet.save(.light) }
            #expect(try await tablet.load() == .dark)
            try await tablet.save(.light)
            try await phone.save(.system, onConflict: .overwrite)
            #expect(try await tablet.load() == .system)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func `a stored record that does not decode is an error, never the default`(kind: StoreKind) async throws {
        try await withStore(kind) { (store: RecordStore, _: URL) async throws in
            try await store.put("settings", key: "theme", data: Data(#""sepia""#.utf8))
            let theme = StoredValue(store: store, collection: "settings", key: "theme", default: Theme.system)
            let error = await #expect(throws: RepositoryError.self) { try await theme.load() }
            #expect(error?.code == .undecodableRecord)
            #expect(error?.key == "theme")
            #expect(try await store.value("settings", key: "theme") == Data(#""sepia""#.utf8))
        }
    }

    struct Setting: Codable, Identifiable, Equatable, Sendable {
        var id: String
        var value: String
    }

    @Test(arguments: StoreKind.allCases)
    func `a stored value's save is a change a repository on the same record must load before overwriting`(kind: StoreKind) async throws {
        try await withStore(kind) { (store: RecordStore, _: URL) async throws in
            let settings = RecordRepository<Setting>(store: store, collection: "settings")
            try await settings.save(Setting(id: "theme", value: "light"))
            #expect(try await settings.load() == [Setting(id: "theme", value: "light")])
            let theme = StoredValue(store: store, collection: "settings", key: "theme", default: Setting(id: "theme", value: "system"))
            _ = try await theme.load()
            try await theme.save(Setting(id: "theme", value: "dark"))

            // The repository last saw "light": saving over "dark" unseen is a conflict.
            await #expect(throws: RecordConflict.self) { try await settings.save(Setting(id: "theme", value: "sepia")) }
            #expect(try await theme.load() == Setting(id: "theme", value: "dark"))
        }
    }
}
