import Foundation

extension RecordSync {
    /// `start` inside its transaction (see ``start(space:collections:policy:)``).
    static func start(
        space: String, collections names: [String], policy: SyncConflictPolicy, in context: WriteContext
    ) throws {
        let engine = context.engine
        // Spaces are compared and stored in NFC, like collection names and keys: the server
        // compares bytes. A space an older version stored as given is kept as it is (the server
        // knows it by those bytes) and compared in NFC.
        let space = RecordNames.normalized(space)
        if let existing = try engine.syncState.string("space") {
            guard RecordNames.normalized(existing).utf8.elementsEqual(space.utf8) else {
                throw SyncError(
                    .invalidRequest,
                    "this store syncs space '\(existing)', not '\(space)'; nothing was changed")
            }
        } else {
            guard !names.isEmpty else {
                throw SyncError(.invalidRequest, "the first start of sync needs at least one collection")
            }
            try engine.syncState.set("space", space)
            // The device id is bound to this file: a copy of it takes a new one (see
            // `RecordSync.bind`).
            try engine.syncState.set("device", UUID().uuidString)
            try engine.syncState.set("device.file", engine.syncState.fileMarker)
            try engine.syncState.set("server.seen", integer: 0)
        }
        let registered = try engine.syncState.collections()
        var added = false
        for name in names {
            if let current = registered[name] {
                if current != policy { try engine.syncState.register(name, policy: policy) }
                continue
            }
            try engine.syncState.register(name, policy: policy)
            added = true
            if let ref = try engine.records.collectionForWriting(name) {
                try engine.syncQueue.captureExistingRecords(
                    ref.id, collection: name, chunk: uploadChunk, bytes: uploadBytes)
            }
        }
        // Records of the new collections that are already on the server come down with the
        // next pull (a re-pull of the others is harmless).
        if added, !registered.isEmpty { try engine.syncState.setCursor(.start) }
    }
}
