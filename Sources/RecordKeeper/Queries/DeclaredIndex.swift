/// The SQLite index of one declared field of one collection (format 7, docs/FORMAT.md).
///
/// An expression index over the field's JSON value, partial to the collection's records:
///
///     CREATE INDEX "declared_7_647565417"
///     ON records (collection_id, json_extract(CAST(payload AS TEXT), '$.dueAt')) WHERE collection_id = 7
///
/// DDL takes no bound parameters, so the statement is text, and it is safe because nothing in
/// it was given by a caller: the collection is its integer id from `collections.id`, the
/// field's JSON path is made of validated segments (``FieldPath``: ASCII letters, digits and
/// `_`, no quotes), and the index name is the id and the hex digits of the field's UTF-8
/// bytes. Queries write the same expression and the same `collection_id = 7` literal (see
/// `QuerySQL`), which is what lets SQLite's planner choose the index. (The table is
/// `WITHOUT ROWID` with primary key `(collection_id, key)`, so every index entry ends with the
/// key, which also answers the tie-breaking order. The leading `collection_id`, constant in a
/// partial index, is there for the planner: without statistics it rates an index by the
/// columns a query constrains, and only with it does it rank this index above the primary
/// key's `collection_id = 7` prefix.)
struct DeclaredIndex: Equatable {
    let collectionID: Int64
    let field: FieldPath

    /// `declared_<id>_<hex of the field's UTF-8 bytes>`: unique per collection and field, and
    /// only letters, digits and `_`.
    var name: String {
        "declared_\(collectionID)_" + field.description.utf8.map { String($0, radix: 16) }.joined()
    }

    var createSQL: String {
        "CREATE INDEX IF NOT EXISTS \"\(name)\" ON records (collection_id, \(field.sqlExpression)) WHERE collection_id = \(collectionID)"
    }

    var dropSQL: String { "DROP INDEX IF EXISTS \"\(name)\"" }
}
