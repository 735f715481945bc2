import Foundation

/// The version of every record a repository last loaded or saved, by key; a key not here is
/// expected to be absent. What `[String: RecordVersion]` would be, without hashing every key
/// of a whole load: a load hands over its keys and versions as it read them (in key order),
/// and later reads and saves go to a small dictionary of changes laid over them.
struct KnownVersions: Sendable {
    /// The keys of the last whole load, in ascending `String` order, and their versions.
    private var loadedKeys: [String] = []
    private var loadedVersions: [RecordVersion] = []
    /// Changes since that load: a version, or nil for a key now known to be absent.
    private var changes: [String: RecordVersion?] = [:]
    /// Whether a whole load set these versions: every key not in it is known to be absent.
    private var isWholeLoad = false

    init() {}

    /// The versions of a whole load: `keys` (with `versions` beside them) as the store read
    /// them, in its key order. Kept as they are when that order is ascending `String` order
    /// with no two keys equal (the store's keys are NFC, whose UTF-8 byte order is `String`'s);
    /// otherwise, put in the dictionary of changes.
    init(loadedKeys keys: [String], versions: [RecordVersion]) {
        precondition(keys.count == versions.count, "one version per key")
        var ascending = true
        var index = 1
        while ascending, index < keys.count {
            ascending = keys[index - 1] < keys[index]
            index += 1
        }
        isWholeLoad = true
        if ascending {
            loadedKeys = keys
            loadedVersions = versions
        } else {
            changes.reserveCapacity(keys.count)
            for (key, version) in zip(keys, versions) { changes[key] = .some(version) }
        }
    }

    var isEmpty: Bool { loadedKeys.isEmpty && changes.isEmpty }

    /// The version known for `key`, nil when it is expected to be absent. Setting nil records
    /// the key as absent.
    subscript(key: String) -> RecordVersion? {
        get {
            if let change = changes[key] { return change }
            return loadedIndex(of: key).map { loadedVersions[$0] }
        }
        set {
            // After a whole load of nothing, every key is known to be absent already.
            if newValue == nil, changes.isEmpty, loadedKeys.isEmpty, isWholeLoad { return }
            changes[key] = .some(newValue)
        }
    }

    /// Whether the repository knows anything of `key`: a version, or that it is absent (read
    /// as absent, deleted, or left out of a whole load). A key it knows nothing of was never
    /// read, loaded or saved.
    func knows(_ key: String) -> Bool {
        isWholeLoad || changes[key] != nil || loadedIndex(of: key) != nil
    }

    /// Every key with a known version (unordered).
    var keys: [String] {
        var result: [String] = []
        result.reserveCapacity(loadedKeys.count + changes.count)
        for key in loadedKeys where changes[key] == nil { result.append(key) }
        for (key, version) in changes where version != nil { result.append(key) }
        return result
    }

    private func loadedIndex(of key: String) -> Int? {
        var low = 0
        var high = loadedKeys.count
        while low < high {
            let middle = (low + high) / 2
            if loadedKeys[middle] < key { low = middle + 1 } else { high = middle }
        }
        return low < loadedKeys.count && loadedKeys[low] == key ? low : nil
    }

}
