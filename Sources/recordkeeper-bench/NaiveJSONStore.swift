import Foundation

/// The naive baseline, as in seed 004 (`DataRepository`): an actor holding every item in a
/// dictionary that re-encodes the whole collection and rewrites one JSON file atomically on
/// every save. Differences from the seed, all in its favour or neutral:
/// - the file URL is given (no documents directory on Linux);
/// - errors are thrown instead of swallowed with `try?` (same work, but failures are visible);
/// - `saveAll` persists a batch once (the seed has only `save`, which would make W1 quadratic).
actor NaiveJSONStore<T: Codable & Identifiable & Sendable> where T.ID: Hashable & Codable & Sendable {
    private var items: [T.ID: T] = [:]
    private let fileURL: URL

    /// Loads the whole file, like the seed's synchronous initializer.
    init(fileURL: URL) {
        self.fileURL = fileURL
        self.items = Self.loadFromDisk(url: fileURL)
    }

    func get(_ id: T.ID) -> T? {
        items[id]
    }

    func getAll() -> [T] {
        Array(items.values)
    }

    var count: Int { items.count }

    func save(_ item: T) throws {
        items[item.id] = item
        try persistToDisk()
    }

    func saveAll(_ batch: [T]) throws {
        for item in batch { items[item.id] = item }
        try persistToDisk()
    }

    func delete(_ id: T.ID) throws {
        items.removeValue(forKey: id)
        try persistToDisk()
    }

    private func persistToDisk() throws {
        let data = try JSONEncoder().encode(Array(items.values))
        try data.write(to: fileURL, options: .atomic)
    }

    private static func loadFromDisk(url: URL) -> [T.ID: T] {
        guard let data = try? Data(contentsOf: url),
              let items = try? JSONDecoder().decode([T].self, from: data) else {
            return [:]
        }
        return Dictionary(uniqueKeysWithValues: items.map { ($0.id, $0) })
    }
}
