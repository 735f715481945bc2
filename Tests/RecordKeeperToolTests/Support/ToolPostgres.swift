import TestHelpers

/// What the tool's sync tests add to ``TestPostgres`` (the server, its detection and private
/// schemas are shared by every test target).
extension TestPostgres {
    /// A conninfo for a loopback port where nothing listens (``ClosedPort``): connecting
    /// fails at once.
    static func unreachable() throws -> String {
        "host=127.0.0.1 port=\(try ClosedPort.shared().port) connect_timeout=2 dbname=postgres"
    }
}
