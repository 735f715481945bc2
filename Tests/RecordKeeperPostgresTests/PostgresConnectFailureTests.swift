import Foundation
import RecordKeeper
@testable import RecordKeeperPostgres
import TestHelpers
import Testing

/// A connection the settings or the credentials make impossible is a configuration or an
/// authentication error, never "unreachable, try later": an app would retry it for ever.
@Suite(.enabled(if: TestPostgres.enabled, TestPostgres.disabledReason))
struct PostgresConnectFailureTests {
    /// The test server's conninfo with `extra` settings after it (later keywords win).
    private func conninfo(_ extra: String) throws -> String {
        try TestPostgres.requireConninfo() + " " + extra
    }

    private func connectError(_ conninfo: String) async -> SyncError? {
        await #expect(throws: SyncError.self) { _ = try await PostgresSyncServer.connect(conninfo) }
    }

    @Test func `a misspelled keyword or a value libpq refuses is a configuration error`() async throws {
        for bad in [try conninfo("dbnmae=postgres"), try conninfo("sslmode=requir"), try conninfo("port=abc")] {
            let error = await connectError(bad)
            #expect(error?.code == .configuration, "\(bad): \(String(describing: error))")
        }
    }

    @Test func `a conninfo libpq cannot read is refused without the pieces it quotes, which may be a password`() async throws {
        for (conninfo, secret) in [
            ("postgresql://sync:Hunter%zz2@db/records", "Hunter"), ("host=db password=Hunter2 secretpart", "secretpart"),
        ] {
            let error = await #expect(throws: PostgresError.self) { _ = try await PostgresConnection(conninfo: conninfo) }
            #expect(error?.kind == .configuration)
            #expect(error.map { !String(describing: $0).contains(secret) } == true, "\(String(describing: error))")
        }
        #expect(PostgresConnection.withoutQuotedFragments(#"missing "=" after "secretpart" in connection info string"#)
                == #"missing "=" after "…""#)
        // A quote inside the piece brings nothing of the rest out.
        #expect(PostgresConnection.withoutQuotedFragments(#"missing "=" after "cd"ef" in connection info string"#)
                == #"missing "=" after "…""#)
        #expect(PostgresConnection.withoutQuotedFragments(
            #"unexpected character """ at position 27 (expected ":" or "/"): "postgresql://u:secret@[::1]"x/db""#)
                == #"unexpected character """ at position 27 (expected ":" or "/"): "…""#)
        for (conninfo, secret) in [("postgresql://u:secret@[::1]\"x/db", "secret"), ("host=db password=ab cd\"ef", "ef")] {
            let error = await #expect(throws: PostgresError.self) { _ = try await PostgresConnection(conninfo: conninfo) }
            #expect(error.map { !String(describing: $0).contains(secret) } == true, "\(String(describing: error))")
        }
    }

    @Test func `a database that does not exist is a configuration error`() async throws {
        let error = await connectError(try conninfo("dbname=recordkeeper_no_such_database"))
        #expect(error?.code == .configuration)
        #expect(error?.message.contains("recordkeeper_no_such_database") == true)
        #expect((error?.underlying as? PostgresError)?.sqlState == "3D000")
        #expect(error?.message.contains("LOCATION") == false, "the verbose parts stay out of the message")
    }

    @Test func `TLS required by the settings but not offered by the server is a configuration error`() async throws {
        let error = await connectError(try conninfo("sslmode=require"))
        #expect(error?.code == .configuration, "\(String(describing: error))")
    }

    @Test func `a role that does not exist or a wrong password is an authentication error`() async throws {
        let unknown = await connectError(try conninfo("user=recordkeeper_no_such_role"))
        #expect(unknown?.code == .authentication, "\(String(describing: unknown))")
        #expect((unknown?.underlying as? PostgresError)?.sqlState == "28000")

        // scripts/with-postgres.sh makes this role give its password (scram-sha-256).
        let admin = try await TestPostgres.connection()
        _ = try await admin.transaction { connection in
            try connection.execute(
                """
                DO $$ BEGIN
                    CREATE ROLE recordkeeper_password LOGIN PASSWORD 'the right one';
                EXCEPTION WHEN duplicate_object THEN NULL;
                END $$
                """)
        }
        let wrong = await connectError(try conninfo("user=recordkeeper_password password=wrong"))
        #expect(wrong?.code == .authentication, "\(String(describing: wrong))")
        #expect((wrong?.underlying as? PostgresError)?.sqlState == "28P01")
        let missing = await connectError(try conninfo("user=recordkeeper_password password=''"))
        #expect(missing?.code == .authentication, "\(String(describing: missing))")
    }

    @Test func `keepalives are on by default and a connection string's own settings win`() async throws {
        let connection = try await TestPostgres.connection()
        let settings = await connection.settings()
        for (keyword, value) in PostgresConnection.defaultConnectionSettings {
            #expect(settings[keyword] == value, "\(keyword)")
        }
        let own = try await PostgresConnection(conninfo: try conninfo("keepalives_idle=60"))
        #expect(await own.settings()["keepalives_idle"] == "60")
    }
}

/// A connection lost while TLS is negotiated (the server restarting) is "try later", not a
/// setting to fix: the load test saw relays answer 500 while a database restarted.
@Suite struct PostgresLostConnectionWordsTests {
    @Test(arguments: [
        "server closed the connection unexpectedly\n\tThis probably means the server terminated abnormally",
        "SSL SYSCALL error: EOF detected", "could not receive data from server: Connection reset by peer",
    ])
    func `libpq's words for a lost connection are recognised`(message: String) {
        #expect(PostgresConnection.lostConnection(message))
    }

    @Test func `a server without TLS is not a lost connection`() {
        #expect(!PostgresConnection.lostConnection("server does not support SSL, but SSL was required"))
    }
}
