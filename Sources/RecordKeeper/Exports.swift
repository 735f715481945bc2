// What `import RecordKeeper` brings besides this module, so that an app imports one module:
// - the payload codec (`RecordKeeperCoding`), whose types appear in the store's API (a
//   repository's `RecordCoding.Strategies`, `RecordJSONEncoder` for bulk work);
// - the sync layer device and server share (`RecordKeeperSync`): the wire types, the
//   `RecordSyncServer` protocol and `InMemorySyncServer`, which `RecordSync` and
//   `HTTPSyncServer` speak in.
// Each module alone is what a server or a tool without the store imports.
@_exported public import RecordKeeperCoding
@_exported public import RecordKeeperSync
