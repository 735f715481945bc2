extension RecordEngine {
    /// The fields collection `id` declared an index on, in field order. Empty for a store of a
    /// format before 7 (read as it is, never migrated by a read): it has none.
    func declaredIndexes(_ id: Int64, collection: String) throws -> [FieldPath] {
        do {
            return try run(collection: collection) {
                try connection.withStatement(
                    "SELECT field FROM declared_indexes WHERE collection_id = ?1 ORDER BY field"
                ) { statement in
                    try statement.bind(id, at: 1)
                    var fields: [FieldPath] = []
                    while try statement.step() {
                        // Only validated paths are ever stored.
                        fields.append(FieldPath(validSegments: statement.string(at: 0).split(separator: ".").map(String.init)))
                    }
                    return fields
                }
            }
        } catch let error as RecordStoreError where error.sqliteMessage?.contains("declared_indexes") == true {
            return []
        }
    }

    /// Records the index of `field` for collection `id` and creates it (in the caller's write
    /// transaction). False when it was already declared.
    func declareIndex(_ id: Int64, collection: String, field: FieldPath) throws -> Bool {
        try run(collection: collection) {
            let inserted = try connection.withStatement(
                "INSERT INTO declared_indexes (collection_id, field) VALUES (?1, ?2) ON CONFLICT DO NOTHING"
            ) { statement in
                try statement.bind(id, at: 1)
                try statement.bind(field.description, at: 2)
                try statement.run()
                return connection.changes > 0
            }
            try connection.execute(DeclaredIndex(collectionID: id, field: field).createSQL)
            return inserted
        }
    }

    /// Forgets the index of `field` for collection `id` and drops it. False when it was not declared.
    func dropIndex(_ id: Int64, collection: String, field: FieldPath) throws -> Bool {
        try run(collection: collection) {
            let deleted = try connection.withStatement(
                "DELETE FROM declared_indexes WHERE collection_id = ?1 AND field = ?2"
            ) { statement in
                try statement.bind(id, at: 1)
                try statement.bind(field.description, at: 2)
                try statement.run()
                return connection.changes > 0
            }
            try connection.execute(DeclaredIndex(collectionID: id, field: field).dropSQL)
            return deleted
        }
    }

    /// Drops every declared index of collection `id` (the collection is being removed).
    func dropDeclaredIndexes(_ id: Int64, collection: String) throws {
        for field in try declaredIndexes(id, collection: collection) {
            _ = try dropIndex(id, collection: collection, field: field)
        }
    }
}
