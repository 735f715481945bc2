@testable import RecordKeeper
import Testing

/// The table of a connection's cached statements (keyed by the address of their SQL literal).
@Suite struct StatementTableTests {
    @Test func `every key inserted is found through growth and collisions, and no other`() throws {
        let connection = try SQLiteConnection(path: nil, busyTimeout: .seconds(1))
        let statements = try (0..<5).map { try Statement(connection: connection.handle, sql: "SELECT \($0)", persistent: false) }
        let table = StatementTable()
        #expect(table[0x1000] == nil)
        // Keys 16 apart like literals, and keys that share their low bits, past several growths.
        let keys = (0..<300).map { UInt(0x7F00_0000_0000) + UInt($0) * 16 } + (1...40).map { UInt($0) << 40 }
        for (index, key) in keys.enumerated() {
            table.insert(statements[index % statements.count], for: key)
        }
        #expect(table.count == keys.count)
        for (index, key) in keys.enumerated() {
            #expect(table[key] === statements[index % statements.count], "key \(key)")
        }
        for missing in [UInt(0), 8, 0x7F00_0000_0008, UInt(41) << 40] { #expect(table[missing] == nil) }
        table.removeAll()
        #expect(table.count == 0)
        #expect(table[keys[0]] == nil)
    }
}
