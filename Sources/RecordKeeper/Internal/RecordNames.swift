import Foundation

/// Validation and normal form of collection names and record keys.
///
/// Swift compares strings by canonical equivalence ("é" precomposed equals "e" + combining
/// accent), while SQLite compares bytes. Names are stored in Unicode Normalization Form C so
/// that two keys Swift considers equal are one record, never two rows that would collide in
/// a dictionary. ASCII (the common case) is already in that form and is not copied.
enum RecordNames {
    /// The stored form of a collection name; throws for an empty name.
    static func collection(_ name: String, operation: StoreOperation) throws -> String {
        guard !name.isEmpty else {
            throw RecordStoreError(code: .invalidCollectionName, operation: operation, collection: name)
        }
        return normalized(name)
    }

    /// The stored form of a key; throws for an empty key.
    static func key(_ key: String, collection: String, operation: StoreOperation) throws -> String {
        try keyNotingChange(key, collection: collection, operation: operation).stored
    }

    /// The stored form of a key and whether it differs from the key's bytes (normalization
    /// changed it); throws for an empty key.
    static func keyNotingChange(
        _ key: String, collection: String, operation: StoreOperation
    ) throws -> (stored: String, changed: Bool) {
        guard !key.isEmpty else {
            throw RecordStoreError(code: .invalidKey, operation: operation, collection: collection, key: key)
        }
        if isASCII(key) { return (key, false) }
        let stored = key.precomposedStringWithCanonicalMapping
        return (stored, !stored.utf8.elementsEqual(key.utf8))
    }

    /// Unicode Normalization Form C, skipping the work for ASCII.
    static func normalized(_ string: String) -> String {
        if isASCII(string) { return string }
        return string.precomposedStringWithCanonicalMapping
    }

    /// Whether every byte of `string` is ASCII: over its contiguous UTF-8 (native and small
    /// strings), a plain loop over bytes; a generic `allSatisfy` over the UTF-8 view cost a
    /// tenth of a point read.
    static func isASCII(_ string: String) -> Bool {
        if let ascii = string.utf8.withContiguousStorageIfAvailable({ bytes -> Bool in
            var any: UInt8 = 0
            for byte in bytes { any |= byte }
            return any < 0x80
        }) {
            return ascii
        }
        return string.utf8.allSatisfy { $0 < 0x80 }
    }
}
