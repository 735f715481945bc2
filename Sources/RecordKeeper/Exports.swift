// What `import RecordKeeper` brings besides this module: the payload codec, whose types appear
// in the store's API (a repository's `RecordCoding.Strategies`, `RecordJSONEncoder` for bulk
// work), so that an app imports one module. The module `RecordKeeperCoding` alone is the codec.
@_exported public import RecordKeeperCoding
