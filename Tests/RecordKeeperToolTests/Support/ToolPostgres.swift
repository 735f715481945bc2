import RecordKeeperTestSupport

/// What the tool's sync tests add to ``TestPostgres`` (the server, its detection and private
/// schemas are shared by every test target).
extension TestPostgres {
    /// A conninfo loopback port 1, where nothing listens: connecting fails at once.
    static let unreachable = "host=127.0.0.1 port=1 connect_timeout=2 dbname=postgres"
}
